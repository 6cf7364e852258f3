"""The sandboxed protocol (issue 26): the candidate runs in a forked, jailed worker, judged through
requests to it (benchmark/judge/README.md names the modules)."""

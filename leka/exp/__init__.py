"""The experiment runner: config, arms, Ray scheduler, results store, report (README.md)."""

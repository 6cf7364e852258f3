"""`leka llm ...`: the local model (`leka llm serve`)."""

from __future__ import annotations

import typer

from leka.core.types import UserError

app = typer.Typer(no_args_is_help=True, add_completion=False)


@app.command("serve")
def serve_cmd(
    port: int = typer.Option(8080, "--port", help="port on 127.0.0.1"),
    threads: int = typer.Option(None, "--threads", help="CPU threads for the model (default: the measured best)"),
    n_ctx: int = typer.Option(None, "--n-ctx", help="context length in tokens (default 8192)"),
) -> None:
    """Serve the local small coder model (from `make llm-local`) on 127.0.0.1 through llama-cpp-python's
    OpenAI-compatible server; prints the --model spec to use; Ctrl-C stops it."""
    from leka.llm import local

    if not 1 <= port <= 65535:
        raise UserError(f"--port {port}: expected 1..65535")
    if threads is not None and threads < 1:
        raise UserError("--threads must be >= 1")
    if n_ctx is not None and n_ctx < 512:
        raise UserError("--n-ctx must be >= 512")
    local.serve(port=port, threads=threads or local.DEFAULT_THREADS, n_ctx=n_ctx or local.N_CTX)

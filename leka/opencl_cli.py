"""`leka opencl build [--tvm-src DIR]`: TVM's OpenCL runtime as a plugin of the installed wheel."""

from __future__ import annotations

import time
from pathlib import Path

import typer

app = typer.Typer(no_args_is_help=True, add_completion=False)


@app.command("build")
def build_cmd(
    tvm_src: Path = typer.Option(None, "--tvm-src", help="TVM source folder (a checkout, or ../shared/tvm-opencl)"),
    out: Path = typer.Option(None, "--out", help="plugin path (default .leka-cache/libtvm_opencl.so)"),
    install: bool = typer.Option(True, "--install-deps/--no-install-deps",
                                 help="apt-get opencl-headers, ocl-icd-opencl-dev, pocl-opencl-icd when missing (root)"),
    force: bool = typer.Option(False, "--force", help="rebuild even when the plugin exists"),
) -> None:
    """Build the plugin (about 30-50 s); `leka run --backend opencl` then runs on this machine's
    OpenCL device (PoCL: the CPU)."""
    from leka.tvm_adapter import opencl_plugin as opencl  # loads TVM: not at `leka --help`

    src = tvm_src or opencl.default_src()
    dest = out or opencl.plugin_path()
    if install:  # also when the plugin exists: a fresh machine may lack the ICD / PoCL at run time
        got = opencl.install_deps()
        if got:
            typer.echo(f"installed {' '.join(got)}")
    if dest.is_file() and not force and not opencl.is_stale(dest):
        typer.echo(f"{dest} exists (--force rebuilds)")
        return
    if not src.is_dir():
        raise opencl.OpenCLUnavailable(f"--tvm-src {src}: no such folder")
    opencl.runtime_sources(src)
    t0 = time.perf_counter()
    path = opencl.build_plugin(src, dest)
    typer.echo(f"built {path} from {src} in {time.perf_counter() - t0:.0f} s")

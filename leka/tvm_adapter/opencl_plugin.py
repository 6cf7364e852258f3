"""OpenCL runtime for the apache-tvm wheel: build TVM's OpenCL runtime as a plugin library, load it.

The wheel generates OpenCL C but ships no OpenCL device API, so `tvm.opencl(0)` does not exist until
TVM's own OpenCL runtime (two .cc files, built against the wheel's headers and libraries) is loaded
into the process with RTLD_GLOBAL. `make opencl` / `leka opencl build [--tvm-src DIR]` builds it into
`libtvm_opencl.so` in the cache home (`leka/backends/paths.py`: `.leka-cache/` in a checkout); `tvm_adapter` calls `load_plugin()` before the first OpenCL device.
With PoCL (Debian `pocl-opencl-icd`) that gives an OpenCL device on the CPU of any machine.

This module does not import tvm itself (it is part of the TVM adapter: `targets.device_for` loads it): the wheel is found by its spec.
"""

from __future__ import annotations

import ctypes
import importlib.util
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from leka.backends.opencl import PLUGIN_NAME, plugin_path  # noqa: F401 - re-exported
from leka.backends.paths import checkout
from leka.core.types import UserError

APT_PACKAGES = ("opencl-headers", "ocl-icd-opencl-dev", "pocl-opencl-icd")
_RUNTIME_FILES = ("opencl_device_api.cc", "opencl_module.cc")
_loaded: Path | None = None


class OpenCLUnavailable(UserError):
    """No plugin, no sources to build it from, or no OpenCL platform: one line for the user."""


def default_src() -> Path:
    """The TVM source folder the plugin is built from: $LEKA_TVM_OPENCL_SRC, else ../shared/tvm-opencl
    next to the source checkout, or next to the working folder when installed (a trimmed copy of TVM's
    OpenCL runtime; a whole TVM checkout works too)."""
    env = os.environ.get("LEKA_TVM_OPENCL_SRC")
    return Path(env) if env else (checkout() or Path.cwd()).parent / "shared" / "tvm-opencl"


def _wheel_dirs() -> tuple[Path, Path]:
    """site-packages dirs of tvm and tvm_ffi, without importing them."""
    out = []
    for name in ("tvm", "tvm_ffi"):
        spec = importlib.util.find_spec(name)
        if spec is None or not spec.origin:
            raise OpenCLUnavailable(f"{name} is not installed in this Python ({sys.executable})")
        out.append(Path(spec.origin).parent)
    return out[0], out[1]


def runtime_sources(src: Path) -> tuple[Path, Path]:
    """(folder with opencl_device_api.cc + opencl_module.cc, its `src` root) inside a TVM source
    folder: src/backend/opencl/runtime (current TVM) or src/runtime/opencl (older releases)."""
    for rel in ("src/src/backend/opencl/runtime", "src/backend/opencl/runtime", "src/src/runtime/opencl",
                "src/runtime/opencl"):
        d = src / rel
        if all((d / f).is_file() for f in _RUNTIME_FILES):
            return d, d.parents[2] if "backend" in rel else d.parents[1]
    raise OpenCLUnavailable(f"{src}: no TVM OpenCL runtime sources there (looked for "
                            f"src/backend/opencl/runtime/{_RUNTIME_FILES[0]} and src/runtime/opencl/...); "
                            "give --tvm-src DIR, a TVM checkout or ../shared/tvm-opencl")


def missing_apt_packages() -> list[str]:
    miss = []
    for p in APT_PACKAGES:
        r = subprocess.run(["dpkg-query", "-W", "-f=${Status}", p], capture_output=True, text=True)
        if r.returncode != 0 or "install ok installed" not in r.stdout:
            miss.append(p)
    return miss


def install_deps(quiet: bool = True) -> list[str]:
    """apt-get the OpenCL headers, ICD loader and PoCL when missing (root only; Debian/Ubuntu).
    Returns what was installed; raises OpenCLUnavailable when something is missing and cannot be."""
    if not shutil.which("dpkg-query"):
        return []  # not Debian: the user installs an OpenCL SDK their own way
    miss = missing_apt_packages()
    if not miss:
        return []
    if os.geteuid() != 0:
        raise OpenCLUnavailable(f"missing Debian packages {' '.join(miss)}: run "
                                f"`sudo apt-get install -y {' '.join(APT_PACKAGES)}`")
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    out = subprocess.DEVNULL if quiet else None
    subprocess.run(["apt-get", "update", "-qq"], check=True, env=env, stdout=out)
    subprocess.run(["apt-get", "install", "-y", "-qq", "--no-install-recommends", *miss], check=True, env=env,
                   stdout=out)
    return miss


def build_plugin(src: Path | None = None, out: Path | None = None) -> Path:
    """Compile TVM's OpenCL runtime from `src` against the installed wheel into `out` (~30-50 s)."""
    src = Path(src or default_src())
    out = Path(out or plugin_path())
    rt_dir, src_root = runtime_sources(src)
    tvm_dir, ffi_dir = _wheel_dirs()
    cxx = os.environ.get("CXX", "g++")
    if not shutil.which(cxx):
        raise OpenCLUnavailable(f"no C++ compiler {cxx!r} on PATH")
    with tempfile.TemporaryDirectory(prefix="leka-ocl-") as tmp:
        t = Path(tmp) / "src"
        # the sources include ../../../runtime/*.h relative to themselves: lay out one src/ tree with
        # the wheel's runtime (headers matching the binary) under the checkout's opencl/support files
        shutil.copytree(src_root, t, ignore=shutil.ignore_patterns("*.o", ".git"))
        shutil.copytree(tvm_dir / "src" / "runtime", t / "runtime", dirs_exist_ok=True)
        rel = rt_dir.relative_to(src_root)
        incs = [tvm_dir / "include", ffi_dir / "include", src_root.parent / "include",
                src / "src" / "include", t]
        out.parent.mkdir(parents=True, exist_ok=True)
        tmp_out = out.with_name(f".{out.name}.{os.getpid()}")
        cmd = [cxx, "-std=c++17", "-O2", "-shared", "-fPIC", "-w",
               *[f"-I{d}" for d in incs if d.is_dir()],
               *[str(t / rel / f) for f in _RUNTIME_FILES],
               f"-L{tvm_dir / 'lib'}", f"-L{ffi_dir / 'lib'}",
               f"-Wl,-rpath,{tvm_dir / 'lib'}", f"-Wl,-rpath,{ffi_dir / 'lib'}",
               "-ltvm_runtime", "-ltvm_ffi", "-lOpenCL", "-o", str(tmp_out)]
        r = subprocess.run(cmd, capture_output=True, text=True)
        if r.returncode != 0:
            tail = "\n".join((r.stderr or r.stdout).strip().splitlines()[-15:])
            hint = " (the OpenCL headers/ICD loader: `make opencl` installs them)" if "CL/" in tail or "lOpenCL" in tail else ""
            raise OpenCLUnavailable(f"building the OpenCL plugin failed{hint}:\n{tail}")
        tmp_out.replace(out)
    _stamp(out).write_text(_wheel_version())
    return out


def _stamp(plugin: Path) -> Path:
    return plugin.with_name(plugin.name + ".tvm-version")


def _wheel_version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("apache-tvm")
    except PackageNotFoundError:
        return "unknown"


def is_stale(plugin: Path) -> bool:
    """Built against another apache-tvm than the installed one (its ABI may differ)."""
    st = _stamp(plugin)
    return st.is_file() and st.read_text().strip() != _wheel_version()


def ensure_plugin(src: Path | None = None, install: bool = False) -> Path:
    """The plugin's path, building it first when it is missing (and installing the apt packages
    first when `install`)."""
    p = plugin_path()
    if p.is_file() and not is_stale(p):
        return p
    if install:
        install_deps()
    if not (Path(src) if src else default_src()).exists():
        raise OpenCLUnavailable(f"no OpenCL plugin at {p} and no TVM source folder at {src or default_src()} "
                                "to build it from: run `make opencl` (or `leka opencl build --tvm-src DIR`)")
    return build_plugin(src, p)


def load_plugin(path: Path | None = None) -> Path:
    """Load the plugin once per process (RTLD_GLOBAL: it registers `device_api.opencl` and the OpenCL
    module loader into TVM's global registry)."""
    global _loaded
    if _loaded is not None:
        return _loaded
    p = Path(path or plugin_path())
    if not p.is_file():
        raise OpenCLUnavailable(f"no OpenCL runtime plugin at {p}: run `make opencl` "
                                "(or `leka opencl build --tvm-src DIR`)")
    ctypes.CDLL(str(p), mode=ctypes.RTLD_GLOBAL)
    _loaded = p
    return p

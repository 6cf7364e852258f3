"""L2 rule agent: a vectorised C++ GEMM micro-kernel for the hottest GEMM-like PrimFunc.

The PrimFunc's main block is read as C[b, m, n] = sum_k A[b, m, k] * B[b, k, n] with every operand
addressed by a linear function of the block iterators (strides found by evaluating the TIR index
expressions). That covers matmul, batch-matmul (B batched or shared), a transposed B (nn.Linear),
and a 1x1 stride-1 conv in NCHW (W[f, c] @ X[c, h*w]) or NHWC (X[h*w, c] @ W[f, c]^T) whose only
other block is a plain copy of the input. Kernels with epilogues or non-linear indexing are skipped.

C++ contract (leka.ir.edits / docs/DESIGN.md): `extern "C" int32_t ENTRY(float* p0, ..., float* pn)`, one
pointer per buffer parameter in order, shapes baked in, returns 0. The kernel: an MR x (NV*lanes)
register tile of FMAs (AVX-512 with 16 lanes, else AVX2; NEON on an aarch64 board), B packed to a contiguous panel when its
columns are strided, OpenMP over (batch, column block, row block), tails handled by smaller tiles
and a scalar column loop.
"""

from __future__ import annotations

import ctypes
import hashlib
import itertools
import os
import re
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from agents.common import KernelInfo, analyse, lowered_funcs, near_roof, rank_kernels
from leka import tvm_adapter as A
from leka.backends import get_backend
from leka.core.protocols import AgentContext
from leka.core.types import Edit, edit_digest


@dataclass
class GemmShape:
    batch: int
    m: int
    n: int
    k: int
    a: int  # parameter index of A, B, C
    b: int
    c: int
    sa: tuple[int, int, int]  # (batch, m, k) strides of A in elements
    sb: tuple[int, int, int]  # (batch, k, n)
    sc: tuple[int, int, int]  # (batch, m, n)
    n_params: int


def _index_fn(idx_texts: list[str], shape: list[int]):
    """A python function: block-iterator values -> flat element offset into the buffer."""
    body = []
    for t in idx_texts:
        t = re.sub(r"T\.int64\(([-\d]+)\)", r"\1", t)
        t = re.sub(r"T\.int32\(([-\d]+)\)", r"\1", t)
        if "T." in t:
            raise ValueError(f"index {t!r} is not plain arithmetic")
        body.append(t)
    strides = [int(np.prod(shape[i + 1:])) for i in range(len(shape))]

    def f(env: dict[str, int]) -> int:
        return sum(int(eval(t, {"__builtins__": {}}, env)) * s for t, s in zip(body, strides, strict=True))  # noqa: S307

    return f


def _linear(fn, vars_: list[str], ext: dict[str, int]) -> dict[str, int] | None:
    """Coefficients of fn if it is linear in vars_ over their ranges (checked at sample points)."""
    zero = dict.fromkeys(vars_, 0)
    base = fn(zero)
    coef = {v: fn({**zero, v: 1}) - base if ext[v] > 1 else 0 for v in vars_}
    for v in vars_:  # the far corner and a few mixed points must agree with the linear model
        if ext[v] > 1 and fn({**zero, v: ext[v] - 1}) - base != coef[v] * (ext[v] - 1):
            return None
    rng = np.random.default_rng(0)
    for _ in range(4):
        pt = {v: int(rng.integers(0, ext[v])) for v in vars_}
        if fn(pt) - base != sum(coef[v] * pt[v] for v in vars_):
            return None
    return coef if base == 0 else None


def _merge(group: list[str], coefs: list[dict[str, int]], ext: dict[str, int]) -> tuple[int, list[int]] | None:
    """Fuse several iterators of one role into one dimension when every operand strides them as a
    row-major block. Returns (extent, stride per operand)."""
    g = [v for v in group if ext[v] > 1]
    if not g:
        return 1, [0] * len(coefs)
    ref = next((c for c in coefs if all(c[v] for v in g)), None)
    if ref is None:
        return None
    g.sort(key=lambda v: -ref[v])
    total = int(np.prod([ext[v] for v in g]))
    strides = []
    for c in coefs:
        inner = c[g[-1]]
        if inner == 0:
            if any(c[v] for v in g):
                return None
            strides.append(0)
            continue
        for a, b in itertools.pairwise(g):
            if c[a] != c[b] * ext[b]:
                return None
        strides.append(inner)
    return total, strides


def gemm_shape(func, info: KernelInfo | None = None) -> GemmShape | None:
    """The GEMM a PrimFunc computes, or None when it is not a plain (batched) GEMM. The operand
    whose columns run along the output's contiguous axis is B (NCHW 1x1 conv: B is the input)."""
    for swap in (False, True):
        g = _gemm_shape(func, info, swap)
        if g is not None:
            return g
    return None


def _gemm_shape(func, info: KernelInfo | None, swap: bool) -> GemmShape | None:
    info = info or analyse(func)
    if info.kind not in ("matmul", "batch_matmul", "conv") or info.main is None:
        return None
    if any(dt != "float32" for _, _, dt in info.params):
        return None
    main = info.block(info.main)
    if "*" not in main.text or len(main.loads) != 2 or not re.fullmatch(
            r"\s*\S+\[[^\]]*\] \+ \S+\[[^\]]*\] \* \S+\[[^\]]*\]\s*", main.text):
        return None
    st, loads = _store_and_loads(func, main.name)
    if len(loads) != 2:
        return None
    if swap:
        loads.reverse()
    pnames = [p[0] for p in info.params]
    pshape = {p[0]: p[1] for p in info.params}
    alias = _copy_aliases(info, main.name, pshape)
    if alias is None:
        return None
    out = str(st.buffer.name)
    if out not in pshape:
        return None
    ext = {v: e for v, _, e in main.iters}
    vars_ = list(ext)
    names = [alias.get(str(ld.source.name), str(ld.source.name)) for ld in loads]
    try:
        fa = _index_fn([str(i) for i in loads[0].indices], pshape[names[0]])
        fb = _index_fn([str(i) for i in loads[1].indices], pshape[names[1]])
        fc = _index_fn([str(i) for i in st.indices], pshape[out])
    except (ValueError, KeyError):
        return None
    ca, cb, cc = (_linear(f, vars_, ext) for f in (fa, fb, fc))
    if ca is None or cb is None or cc is None:
        return None
    dims = _gemm_dims(main.iters, ca, cb, cc, ext)
    if dims is None:
        return None
    (K, (sak, sbk)), (M, (sam, scm)), (N, (sbn, scn)), (Bt, (sab, sbb, scb)) = dims
    if scn != 1 or M * N * K < 1:
        return None
    # A may broadcast over the batch (stride 0) too: an operand shared by every batch
    return GemmShape(Bt, M, N, K, pnames.index(names[0]), pnames.index(names[1]), pnames.index(out),
                     (sab, sam, sak), (sbb, sbk, sbn), (scb, scm, 1), len(pnames))


def _store_and_loads(func, block: str) -> tuple[Any, list[Any]]:
    """The main block's store and the buffer loads of its `C + A * B` update, in reading order."""
    sch = A.schedule(func)
    st = sch.get(sch.get_sblock(block)).body
    loads: list[Any] = []

    def walk(e):
        if hasattr(e, "source") and hasattr(e, "indices"):
            loads.append(e)
            return
        for a in ("a", "b"):
            if hasattr(e, a):
                walk(getattr(e, a))

    walk(st.value.b if hasattr(st.value, "b") else st.value)
    return st, loads


def _copy_aliases(info: KernelInfo, main: str, pshape: dict[str, Any]) -> dict[str, str] | None:
    """{producer buffer: parameter} for producers that are plain copies of a parameter (1x1 conv's
    pad_temp), read through; None when another block is an epilogue or a real producer (not this
    rule's kernel)."""
    alias: dict[str, str] = {}
    for b in info.blocks:
        if b.name == main:
            continue
        if b.is_reduction or len(b.loads) != 1 or b.store.dims != b.loads[0].dims or \
                "if_then_else" in b.text or b.loads[0].buffer not in pshape or b.text.count("[") != 1:
            return None
        alias[b.store.buffer] = b.loads[0].buffer
    return alias


def _gemm_dims(iters, ca: dict, cb: dict, cc: dict, ext: dict) -> tuple | None:
    """(K, M, N, batch), each (extent, strides of the operands it moves), from the index coefficients
    of A, B and C; None when the loops are not those of a GEMM."""
    red = [v for v, k, e in iters if k == "R"]
    sp = [v for v, k, e in iters if k == "S"]
    # roles: m moves A and C, n moves B and C, batch moves all three
    m = [v for v in sp if ca[v] and not cb[v] and cc[v]]
    n = [v for v in sp if cb[v] and not ca[v] and cc[v]]
    bt = [v for v in sp if cc[v] and ca[v] and cb[v]]
    bt += [v for v in sp if cc[v] and not ca[v] and not cb[v] and ext[v] > 1]  # not a GEMM then
    if any(ext[v] > 1 for v in sp if v not in m + n + bt) or any(ca[v] == 0 or cb[v] == 0 for v in red if ext[v] > 1):
        return None
    if any(cc[v] and not ca[v] and not cb[v] for v in sp if ext[v] > 1):
        return None
    dims = (_merge(red, [ca, cb], ext), _merge(m, [ca, cc], ext), _merge(n, [cb, cc], ext),
            _merge(bt, [ca, cb, cc], ext))
    return None if None in dims else dims


# ----------------------------------------------------------------------------- C++ source
def gemm_source(g: GemmShape, entry: str, lanes: int = 16, mr: int = 6, nv: int = 2, arch: str = "x86_64") -> str:
    """`arch`: the instruction set of the board's CPU ("aarch64": NEON, 4 lanes of 128 bits)."""
    isa = "neon" if arch == "aarch64" else "avx512" if lanes >= 16 else "avx2"
    if isa == "neon":
        # vfmaq_f32(acc, a, b) = acc + a * b: wrapped to the (a, b, acc) order of the x86 forms
        V, load, store, fma, bcast, zero = ("float32x4_t", "vld1q_f32", "vst1q_f32", "leka_fma4",
                                            "vdupq_n_f32", "leka_zero4")
        vl = 4
    elif isa == "avx512":
        V, load, store, fma, bcast, zero = ("__m512", "_mm512_loadu_ps", "_mm512_storeu_ps",
                                            "_mm512_fmadd_ps", "_mm512_set1_ps", "_mm512_setzero_ps")
        vl = 16
    else:
        V, load, store, fma, bcast, zero = ("__m256", "_mm256_loadu_ps", "_mm256_storeu_ps",
                                            "_mm256_fmadd_ps", "_mm256_set1_ps", "_mm256_setzero_ps")
        vl = 8
    pack = g.sb[2] != 1
    return _gemm_helpers(g, isa, (V, load, store, fma, bcast, zero), vl, mr, nv, pack) + _gemm_entry(g, entry, pack)


# NEON's forms in the (a, b, acc) order and nullary zero of the x86 ones the micro-kernel is written in
NEON_PRELUDE = """#include <arm_neon.h>
static inline float32x4_t leka_fma4(float32x4_t a, float32x4_t b, float32x4_t c) { return vfmaq_f32(c, a, b); }
static inline float32x4_t leka_zero4() { return vdupq_n_f32(0.f); }"""


def _gemm_helpers(g: GemmShape, isa: str, ops: tuple[str, ...], vl: int, mr: int, nv: int, pack: bool) -> str:
    """The micro-kernel's includes and its register-tile helpers (an anonymous namespace)."""
    V, load, store, fma, bcast, zero = ops
    include = NEON_PRELUDE if isa == "neon" else "#include <immintrin.h>"
    return f"""// LEKA rule L2: {isa} GEMM micro-kernel, C[{g.batch}][{g.m}][{g.n}] = A[{g.m}][{g.k}] * B[{g.k}][{g.n}]
// strides (elements): A {g.sa}, B {g.sb}, C {g.sc}; B {'packed from strided columns' if pack else 'read in place'}
{include}
#include <cstdint>
#include <cstdlib>
#include <cstring>

namespace {{
constexpr long BATCH = {g.batch}, M = {g.m}, N = {g.n}, K = {g.k};
constexpr long SAB = {g.sa[0]}, SAM = {g.sa[1]}, SAK = {g.sa[2]};
constexpr long SBB = {g.sb[0]}, SBK = {g.sb[1]}, SBN = {g.sb[2]};
constexpr long SCB = {g.sc[0]}, SCM = {g.sc[1]};
constexpr int VL = {vl}, NV = {nv}, MR = {mr}, NB = NV * VL;

// rows x (nv vectors) tile over the whole K: the accumulators stay in registers
template <int R, int NVT>
inline void tile(const float* __restrict A, const float* __restrict B, long ldb, float* __restrict C) {{
  {V} acc[R][NVT];
  for (int r = 0; r < R; ++r)
    for (int v = 0; v < NVT; ++v) acc[r][v] = {zero}();
  for (long k = 0; k < K; ++k) {{
    {V} b[NVT];
    for (int v = 0; v < NVT; ++v) b[v] = {load}(B + k * ldb + v * VL);
    for (int r = 0; r < R; ++r) {{
      {V} a = {bcast}(A[r * SAM + k * SAK]);
      for (int v = 0; v < NVT; ++v) acc[r][v] = {fma}(a, b[v], acc[r][v]);
    }}
  }}
  for (int r = 0; r < R; ++r)
    for (int v = 0; v < NVT; ++v) {store}(C + r * SCM + v * VL, acc[r][v]);
}}

template <int NVT>
inline void rows(const float* A, const float* B, long ldb, float* C, long m0, long mr) {{
  const float* a = A + m0 * SAM;
  float* c = C + m0 * SCM;
  switch (mr) {{
{chr(10).join(f"    case {r}: tile<{r}, NVT>(a, B, ldb, c); break;" for r in range(1, mr + 1))}
    default: break;
  }}
}}

inline void scalar_cols(const float* A, const float* B, long ldb, float* C, long m0, long m1, long n0, long n1) {{
  for (long m = m0; m < m1; ++m)
    for (long n = n0; n < n1; ++n) {{
      float s = 0.f;
      for (long k = 0; k < K; ++k) s += A[m * SAM + k * SAK] * B[k * ldb + n];
      C[m * SCM + n] = s;
    }}
}}
}}  // namespace

"""


def _gemm_entry(g: GemmShape, entry: str, pack: bool) -> str:
    """The exported C entry point: B packed if strided, the tiles in parallel, then the column tail."""
    params = ", ".join(f"float* p{i}" for i in range(g.n_params))
    return f"""extern "C" int32_t {entry}({params}) {{
  const float* A0 = p{g.a};
  const float* B0 = p{g.b};
  float* C0 = p{g.c};
{'''  // B's columns are strided (a transposed weight): pack each batch's B into a K x N panel once
  float* Bp = static_cast<float*>(std::aligned_alloc(64, ((BATCH * K * N * sizeof(float) + 63) / 64) * 64));
  if (!Bp) return -1;
  #pragma omp parallel for collapse(2) schedule(static)
  for (long b = 0; b < BATCH; ++b)
    for (long k = 0; k < K; ++k)
      for (long n = 0; n < N; ++n) Bp[(b * K + k) * N + n] = B0[b * SBB + k * SBK + n * SBN];
  const long sbb = K * N, ldb = N;
  const float* Bs = Bp;''' if pack else '''  const long sbb = SBB, ldb = SBK;
  const float* Bs = B0;'''}
  constexpr long NBLK = N / NB, MBLK = (M + MR - 1) / MR;
  #pragma omp parallel for collapse(3) schedule(static)
  for (long b = 0; b < BATCH; ++b)
    for (long nb = 0; nb < NBLK; ++nb)
      for (long mb = 0; mb < MBLK; ++mb) {{
        const long m0 = mb * MR, mr = (M - m0) < MR ? (M - m0) : MR;
        rows<NV>(A0 + b * SAB, Bs + b * sbb + nb * NB, ldb, C0 + b * SCB + nb * NB, m0, mr);
      }}
  // column tail: one vector at a time, then scalars
  constexpr long N1 = NBLK * NB, NVEC = (N - N1) / VL, N2 = N1 + NVEC * VL;
  if (N1 < N) {{
    #pragma omp parallel for collapse(2) schedule(static)
    for (long b = 0; b < BATCH; ++b)
      for (long mb = 0; mb < MBLK; ++mb) {{
        const long m0 = mb * MR, mr = (M - m0) < MR ? (M - m0) : MR;
        for (long v = 0; v < NVEC; ++v)
          rows<1>(A0 + b * SAB, Bs + b * sbb + N1 + v * VL, ldb, C0 + b * SCB + N1 + v * VL, m0, mr);
        if (N2 < N) scalar_cols(A0 + b * SAB, Bs + b * sbb, ldb, C0 + b * SCB, m0, m0 + mr, N2, N);
      }}
  }}
{'  std::free(Bp);' if pack else ''}
  return 0;
}}
"""


# ----------------------------------------------------------------------------- checking
def _cache_dir() -> Path:
    d = Path(os.environ.get("LEKA_CACHE", ".leka-cache")) / "l2-rules"
    d.mkdir(parents=True, exist_ok=True)
    return d


def compile_cpp(text: str) -> Path:
    """g++ -O3 -march=native -fopenmp -fPIC -shared (the IR layer's flags), cached by content."""
    h = hashlib.sha256(text.encode()).hexdigest()[:16]
    so = _cache_dir() / f"{h}.so"
    if so.exists():
        return so
    with tempfile.TemporaryDirectory() as td:
        src = Path(td) / "k.cc"
        src.write_text(text)
        tmp = Path(td) / "k.so"
        r = subprocess.run(["g++", "-O3", "-march=native", "-fopenmp", "-fPIC", "-shared", "-o", str(tmp), str(src)],
                           capture_output=True, text=True, timeout=120)
        if r.returncode != 0:
            raise RuntimeError(f"g++ failed: {r.stderr[-2000:]}")
        os.replace(tmp, so)
    return so


def run_cpp(so: Path, entry: str, arrays: list[np.ndarray]) -> list[np.ndarray]:
    lib = ctypes.CDLL(str(so))
    fn = getattr(lib, entry)
    fn.restype = ctypes.c_int32
    bufs = [np.array(a, dtype=np.float32, copy=True, order="C") for a in arrays]
    rc = fn(*[b.ctypes.data_as(ctypes.POINTER(ctypes.c_float)) for b in bufs])
    if rc != 0:
        raise RuntimeError(f"{entry} returned {rc}")
    return bufs


def check_against_tir(func, text: str, entry: str, target=None, seed: int = 0) -> float:
    """Max abs error of the C++ kernel vs the PrimFunc itself on random data (raises on failure)."""
    target = target or A.cpu_target()
    sig = A.buffer_signature(func)
    rng = np.random.default_rng(seed)
    arrays = [rng.standard_normal(s).astype(np.float32) for _, s, _ in sig]
    ref, _ = A.run_prim_func(A.build_prim_func(func, target), arrays)
    got = run_cpp(compile_cpp(text), entry, arrays)
    out = [i for i in range(len(sig)) if not np.array_equal(ref[i], arrays[i])] or [len(sig) - 1]
    return max(float(np.abs(got[i] - ref[i]).max()) for i in out)


# ----------------------------------------------------------------------------- the agent
OPTION_VARIANTS = (
    ({"fast-math-contract": True}, "let LLVM contract multiply+add into FMA instructions"),
    ({"fast-math-contract": True, "fast-math-reassoc": True},
     "FMA contraction plus reassociation, so reductions get vector accumulators"),
)


class RuleL2Agent:
    level = "L2"

    def __init__(self, backend: str = "llvm", max_kernels: int = 3, verify: bool = True, root_params=None):
        self.backend = backend
        self.max_kernels = max_kernels
        self.verify = verify
        self.root_params = root_params

    def propose(self, candidate, context: AgentContext) -> list[Edit]:
        if "cpp" not in get_backend(self.backend).l2_linked:
            return []  # these rules write C++ called through call_extern; a GPU backend has its own (Backend.rule_agents)
        target = A.make_target(self.backend, num_cores=context.num_cores or None)
        lanes = context.vector_lanes or A.vector_lanes_fp32(target)
        arch = A.cpu_arch(target)
        # a board's code cannot run here: its kernel is checked on the board by the evaluator instead
        verify = self.verify and A.runs_here(target)
        funcs = lowered_funcs(candidate, target, self.root_params)
        ranked = rank_kernels(funcs, context.profile, near_roof=near_roof(context))
        edits: list[Edit] = []
        tried = 0
        for name, score in ranked:
            if tried >= self.max_kernels or len(edits) >= max(1, context.variants):
                break
            info = analyse(funcs[name], name)
            g = gemm_shape(funcs[name], info)
            if g is None:
                continue
            tried += 1
            for mr, nv in ((6, 2), (4, 3), (8, 1)):
                if len(edits) >= max(1, context.variants):
                    break
                entry = f"leka_gemm_{hashlib.sha1(f'{name}{mr}{nv}{g}'.encode()).hexdigest()[:10]}"
                text = gemm_source(g, entry, lanes, mr, nv, arch)
                e = Edit(level="L2", kind="source", target=name,
                         payload={"language": "cpp", "text": text, "entry": entry},
                         rationale=f"{name} (score {score:.3g}) is a GEMM {g.batch}x{g.m}x{g.n}x{g.k}: "
                                   f"{mr}x{nv * lanes} register-tiled "
                                   f"{'NEON' if arch == 'aarch64' else 'AVX-512' if lanes >= 16 else 'AVX2'} "
                                   "micro-kernel with OpenMP")
                if edit_digest(e) in context.tried:
                    continue
                if verify:
                    try:
                        if check_against_tir(funcs[name], text, entry, target) > 1e-3:
                            continue
                    except Exception:  # noqa: BLE001 - a kernel that fails its own check is not proposed
                        continue
                edits.append(e)
        # any kernel: LLVM codegen options (FMA contraction; reassociation so reductions vectorise)
        for opts, why in OPTION_VARIANTS:
            if len(edits) >= max(1, context.variants):
                break
            if all(candidate.target_opts.get(k) == v for k, v in opts.items()):
                continue
            e = Edit(level="L2", kind="compile_options", payload={"options": opts},
                     rationale=f"{ranked[0][0] if ranked else 'the module'}: {why}")
            if edit_digest(e) not in context.tried:
                edits.append(e)
        return edits

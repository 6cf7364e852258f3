"""L2 C++ kernels for the tiny task (tests/data/tiny_task.py: y = relu(x) * w + x, 4x64) that the
adversarial evaluator tests share: the honest kernel, its slow-on-purpose body, and the candidate that
swaps the task's one PrimFunc for such a kernel."""

from __future__ import annotations

from leka import ir
from leka.ir import L2Entry

HEAD = "#include <cstdint>\n#include <cstring>\n"
# relu(x) * w + x, made slow on purpose (REPS passes over the data that do not change the result),
# so a shortcut that skips the work shows up as a large speedup
COMPUTE = r"""
static inline void compute(const float* x, const float* w, float* out) {
  volatile float sink = 0.f;
  for (int r = 0; r < REPS; ++r)
    for (int i = 0; i < 256; ++i) sink = sink + x[i] * 1e-30f;
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 64; ++j) {
      float v = x[i * 64 + j];
      out[i * 64 + j] = (v > 0.f ? v : 0.f) * w[j] + v;
    }
}
"""
HONEST = HEAD + COMPUTE + r"""
extern "C" int32_t ENTRY(float* x, float* w, float* out) { compute(x, w, out); return 0; }
"""


def l2_candidate(task, root, src: str, name: str, reps: int = 0, **subs: str):
    """The root candidate with its one PrimFunc replaced by `src` (ENTRY, REPS and `subs` filled in; no
    edit-time check: the evaluator's own checks are under test)."""
    from leka import tvm_adapter as A

    cand = ir.root_candidate(task, root=root)
    layers = ir.lower_layers(cand, A.make_target("llvm"), root.params)
    ((kernel, key),) = list(layers.l2_keys.items())
    entry = f"leka_{name}"
    text = src.replace("ENTRY", entry).replace("REPS", str(reps))
    for k, v in subs.items():
        text = text.replace(k, v)
    return cand.model_copy(update={"l2": {key: L2Entry(kernel=kernel, language="cpp", text=text, entry=entry)}})


def sandbox_evaluator(tmp_path, **over):
    """The evaluator the sandbox's adversarial tests share: the static checks off, so the boundary alone
    is tested; a short timing budget; `over` changes any setting."""
    from benchmark.judge import Evaluator
    from leka.core.config import EvaluatorConfig

    cfg = EvaluatorConfig(**{"timeout_s": 120, "memory_cap_gb": 2.0, "timing_budget_s": 1.0, "static_check": False,
                             **over})
    return Evaluator(cfg, cache_dir=str(tmp_path / "cache"))

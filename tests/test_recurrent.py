"""Issue 46: recurrent layers and stateful models at import.

`nn.LSTM` / `nn.GRU` import as one TIR time loop per layer and direction (leka/tvm_adapter/recurrent.py),
so the graph does not grow with the sequence; a negative `select` index counts from the end; a model
whose `forward` keeps changing its own state is refused in one line naming the attribute. Slow tier:
KernelBench's LSTM (35_LTSMNet, 6 layers x 512 steps, batch 10) imports within 60 s.
"""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
import pytest
import torch
import torch.nn as nn

from leka import tvm_adapter as A
from leka.core.task import load_task_file

KB = Path(__file__).resolve().parents[1] / "experiments" / "kernelbench_format"


class Recurrent(nn.Module):
    def __init__(self, kind: str, layers: int, bidirectional: bool, batch_first: bool):
        super().__init__()
        self.rnn = getattr(nn, kind)(12, 16, layers, batch_first=batch_first, bidirectional=bidirectional)
        self.fc = nn.Linear(16 * (2 if bidirectional else 1), 3)

    def forward(self, x, *state):
        hx = (state[0], state[1]) if len(state) == 2 else (state[0] if state else None)
        out, h = self.rnn(x, hx)
        h_n = h[0] if isinstance(h, tuple) else h
        return self.fc(out[:, -1] if self.rnn.batch_first else out[-1]), h_n


def _untuned(model, inputs) -> tuple[list[np.ndarray], list[np.ndarray], object]:
    mod = A.import_torch(model, inputs)
    target = A.cpu_target()
    out = A.VMRunner(A.build(A.lower(mod, target), target), A.device_for("llvm"))(*[i.numpy() for i in inputs])
    with torch.no_grad():
        y = model(*inputs)
    ref = [r.numpy() for r in (y if isinstance(y, tuple) else (y,))]
    return out, ref, mod


def _ops(mod) -> int:
    return sum(A.count_relax_ops(mod).values())


@pytest.mark.parametrize(("kind", "layers", "bidirectional", "batch_first", "state"), [
    ("LSTM", 2, True, True, True),   # KernelBench 38_LTSMBidirectional's shape of call, small
    ("GRU", 1, False, False, False),  # no initial state: zeros
])
def test_recurrent_layers_import_as_loops_and_match_torch(kind, layers, bidirectional, batch_first, state):
    torch.manual_seed(0)
    model = Recurrent(kind, layers, bidirectional, batch_first).eval()
    d = 2 if bidirectional else 1

    def inputs(steps: int) -> list[torch.Tensor]:
        x = torch.randn(2, steps, 12) if batch_first else torch.randn(steps, 2, 12)
        h = [torch.randn(layers * d, 2, 16) for _ in range(2 if kind == "LSTM" else 1)] if state else []
        return [x, *h]

    out, ref, mod = _untuned(model, inputs(9))
    for o, r in zip(out, ref, strict=True):
        np.testing.assert_allclose(o, r, rtol=1e-4, atol=1e-5)
    assert f"{kind.lower()}_recurrence" in {gv.name_hint for gv in mod.get_global_vars()}
    # the graph is the same size whatever the sequence length: nothing unrolled
    assert _ops(mod) == _ops(A.import_torch(model, inputs(40)))


def test_negative_select_counts_from_the_end():
    class Last(nn.Module):
        def forward(self, x):
            return x[:, -1, :] * 2, x[-2]

    x = torch.randn(3, 5, 4)
    out, ref, _ = _untuned(Last().eval(), [x])
    for o, r in zip(out, ref, strict=True):
        np.testing.assert_allclose(o, r)


def test_a_model_that_changes_its_state_is_refused_in_one_line():
    task = load_task_file(KB / "kb_l3_vanilla_rnn.py")  # KernelBench 33_VanillaRNN: self.hidden = ...
    with pytest.raises(A.ImportFailure) as e:
        A.import_torch(task.make_model(), task.make_inputs(0))
    msg = str(e.value)
    assert "\n" not in msg and "changes its own state" in msg and "hidden" in msg


def test_an_in_place_counter_is_refused_and_a_settling_rebinding_accepted():
    class Counter(nn.Module):
        def __init__(self):
            super().__init__()
            self.register_buffer("calls", torch.zeros(1))

        def forward(self, x):
            self.calls += 1
            return x * self.calls

    with pytest.raises(A.ImportFailure, match="calls"):
        A.import_torch(Counter().eval(), [torch.randn(4)])

    class Rebinds(nn.Module):  # KernelBench's LSTMs: the same values on every call
        def __init__(self):
            super().__init__()
            self.h0 = torch.randn(4)
            self.c0 = torch.randn(4)

        def forward(self, x):
            self.h0 = self.h0.to(x.device)
            self.c0 = self.h0.to(x.device)
            return x + self.c0

    model = Rebinds().eval()
    out, ref, _ = _untuned(model, [torch.randn(4)])
    np.testing.assert_allclose(out[0], ref[0])


@pytest.mark.slow
def test_kernelbench_lstm_at_its_published_size_imports_within_60s():
    task = load_task_file(KB / "kb_l3_lstm.py")  # 35_LTSMNet: batch 10, 512 steps, 6 layers, hidden 256
    model, inputs = task.make_model(), task.make_inputs(0)
    t0 = time.perf_counter()
    mod = A.import_torch(model, inputs)
    took = time.perf_counter() - t0
    assert took < 60, f"import took {took:.0f} s"
    lifted, _ = A.lift_consts(mod)
    assert A.structural_equal(A.parse_module(A.relax_text(lifted)), lifted)  # the agents' text is exact
    assert _ops(mod) < 100  # 6 layers of a matmul and a loop, not 3072 unrolled cells

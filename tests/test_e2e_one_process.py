"""scripts/e2e_one_process.py's pieces on this CPU (#28 item 6): outputs hashed per kernel set say whether
stock is deterministic and the tuned set bitwise equal; ratios pair the sets round by round."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from chronos.triton.kernel_sets import KernelSet

ROOT = Path(__file__).resolve().parents[1]


def _script():
    sys.path.insert(0, str(ROOT / "scripts"))
    spec = importlib.util.spec_from_file_location("e2e_one_process", ROOT / "scripts" / "e2e_one_process.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_outputs_tell_a_tuned_set_that_changed_bits_from_one_that_did_not(monkeypatch):
    mod = _script()
    current = {"set": "stock"}
    sets = {s: KernelSet(s) for s in mod.SETS}
    import chronos.triton.kernel_sets as ks

    monkeypatch.setattr(ks, "use", lambda s: current.update(set=s.name))
    phases = {"train": lambda: [torch.ones(4)],
              "decode": lambda: [torch.ones(4) * (1.5 if current["set"] == "tuned" else 1.0)]}
    got = mod.outputs(phases, sets)
    assert got == {"stock_deterministic": True, "tuned_bitwise": False, "differing_phases": ["decode"]}


def test_ratios_pair_the_sets_per_round_over_the_summed_step_or_one_phase():
    mod = _script()
    times = {"stock": [{"a": 1.0, "b": 1.0}, {"a": 1.1, "b": 0.9}],
             "tuned": [{"a": 0.5, "b": 1.5}, {"a": 1.0, "b": 1.0}]}
    assert mod.ratios(times, "stock", "tuned") == [1.0, 1.0]
    assert mod.ratios(times, "stock", "tuned", "a") == [2.0, pytest.approx(1.1)]

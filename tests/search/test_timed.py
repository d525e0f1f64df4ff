"""Greedy in time and the time optimize path over a stand-in comparison backend (no GPU): every decision
comes from one comparison, a challenger wins only with its interval below 1 - min_gain."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from chronos.config import GreedySearchConfig, TimingConfig
from chronos.kernels.spec import load_module
from chronos.kernels.variant import sha256_text
from chronos.measure.comparison import Comparison, Contender
from chronos.search.runs import kernels_of
from chronos.search.timed import TimedEvaluator, greedy_in_time

ROOT = Path(__file__).resolve().parents[2]

EFFECT = {"cache_cs": 0.90, "cache_cg": 0.997, "maxnreg_32": 1.30}
POISONED = {"reorder_cp"}
TIMING = TimingConfig()


class CompareStandIn:
    """Per-round times = 10 µs × the product of the actions' effects × 0.3% seeded noise per round."""

    def __init__(self, noise: float = 0.003):
        self.noise = noise
        self.calls: list[list[tuple[str, ...]]] = []

    def compare(self, spec, variants, timing):
        self.calls.append([tuple(v.actions) for v in variants])
        rng = np.random.default_rng(len(self.calls))
        drift = 1 + 0.05 * rng.standard_normal(timing.rounds)  # moves every contender of a round alike
        cs = []
        for v in variants:
            t = 0.010 * np.prod([EFFECT.get(a, 1.0) for a in v.actions]) if v.actions else 0.010
            bad = bool(POISONED & set(v.actions))
            series = list(t * drift * (1 + self.noise * rng.standard_normal(timing.rounds)))
            cs.append(Contender(tuple(v.actions), sha256_text(v.ptx), not bad, "wrong_output" if bad else "",
                                event_ms=None if bad else series))
        return Comparison(spec.kernel, cs, "event", provenance={"created_at": f"t{len(self.calls)}"})


def _kernel(name: str):
    for _, sj, spec in kernels_of(ROOT / "data/kernels", ["triton"], name):
        return spec, load_module(sj, spec)
    raise LookupError(name)


def test_greedy_in_time_takes_only_clearly_faster_steps_and_stops():
    spec, module = _kernel("add_relu_f32_n1000003_nodiv")
    backend = CompareStandIn()
    res = greedy_in_time(TimedEvaluator(spec, module, backend, TIMING, 0.005), GreedySearchConfig())
    row = res.to_json()
    assert row["best"]["actions"] == ["cache_cs"]  # the 0.3% action never clears min_gain
    assert row["best"]["verdict"] == "faster" and row["best"]["ci"][1] < 0.995
    assert row["trace"][-1]["chosen"] == "stop"
    for step, call in zip(row["trace"], backend.calls, strict=False):
        assert call[0] == ()  # the baseline is contender 0 of every decision
        assert len(call) == len(set(call))  # each set once
    assert res.comparisons == len(backend.calls)


def test_a_wrong_output_is_never_chosen_and_is_counted():
    spec, module = _kernel("add_relu_f32_n1000003_nodiv")
    res = greedy_in_time(TimedEvaluator(spec, module, CompareStandIn(), TIMING, 0.005),
                         GreedySearchConfig()).to_json()
    verdicts = [c.get("verdict") for s in res["trace"] for c in s["candidates"]]
    assert "reorder_cp" not in res["best"]["actions"]
    assert "invalid:wrong_output" in verdicts


@pytest.mark.parametrize("noise", [0.003, 0.02])
def test_identical_contenders_get_no_difference(noise):
    spec, module = _kernel("softmax_r32_c128")
    ev = TimedEvaluator(spec, module, CompareStandIn(noise), TIMING, 0.005)
    cmp, idx = ev.compare([(), ()])
    assert idx == [0, 0]
    assert cmp.verdict(0, TIMING, 0.005) == "no_difference"

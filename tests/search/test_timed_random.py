"""Seeded random search in time (chronos.search.timed_random): the draws are legal, distinct, canonical and
a function of the seed and the kernel alone; every drawn set is compared in one comparison and the fastest
faster one is judged again beside the baseline alone."""

from __future__ import annotations

from pathlib import Path

from chronos.actions import V2
from chronos.config import TimingConfig
from chronos.kernels.spec import load_module
from chronos.search.runs import kernels_of
from chronos.search.space import canonical, realize
from chronos.search.timed import TimedEvaluator
from chronos.search.timed_random import draw_sets, random_in_time
from tests.search.test_timed import EFFECT, CompareStandIn

ROOT = Path(__file__).resolve().parents[2]


def _ev(name="add_relu_f32_n1000003_nodiv", backend=None):
    _, sj, spec = next(kernels_of(ROOT / "data/kernels", ["triton"], name))
    return TimedEvaluator(spec, load_module(sj, spec), backend, TimingConfig(), 0.005)


def test_draws_are_distinct_legal_canonical_sets_fixed_by_seed_and_kernel():
    ev = _ev()
    sets = draw_sets(ev, V2, 12, 3, seed=0)
    assert len(sets) == 12 and len(set(sets)) == 12
    assert all(1 <= len(s) <= 3 and s == canonical(s) for s in sets)
    assert all(realize(ev.root, s, defer_ptxas=True) is not None for s in sets)
    assert draw_sets(_ev(), V2, 12, 3, seed=0) == sets  # a replay draws the same
    assert draw_sets(ev, V2, 12, 3, seed=1) != sets
    other = _ev("silu_mul_f32_n1048576")  # another kernel, another draw
    assert draw_sets(other, V2, 12, 3, seed=0) != sets
    assert any(a not in {*V2.transforms[:20]} for s in sets for a in s)  # v2's actions are drawn too


def test_the_fastest_faster_set_is_judged_again_alone(monkeypatch):
    monkeypatch.setitem(EFFECT, "l1_evict_first_streaming", 0.8)
    ev = _ev(backend=CompareStandIn())
    search = random_in_time(ev, V2, 40, 2, seed=0).to_json()
    rows = search["trace"][0]["candidates"]
    assert search["strategy"] == "random_time" and len(rows) == search["trace"][0]["drawn"] == 40
    assert all("set" in r and "action" not in r for r in rows)
    faster = [r for r in rows if r.get("verdict") == "faster"]
    assert faster and search["comparisons"] == 2  # the draw's comparison, then the winner alone
    best = min(faster, key=lambda r: r["ratio"])["set"]
    assert search["best"]["actions"] == best and search["trace"][0]["chosen"] == best[0]

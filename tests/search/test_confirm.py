"""Stage confirm's summary: confirmed oracle = best confirmed candidate; contenders found by their labels, the
committed policy by its set; a policy set that was not measured is unconfirmed, never guessed."""

import math

import pytest

from chronos.config import GreedySearchConfig
from chronos.search.confirm import summarize

MIN_GAIN = GreedySearchConfig().min_gain


def _variant(actions) -> str:
    """A made-up atlas variant id, one per set (not hash() % 1000: salted per process, its collisions made
    the test flaky under xdist)."""
    return "variant:" + "+".join(actions)


def _cand(actions, labels, cycles, valid=True):
    return {"actions": actions, "labels": labels, "valid": valid, "variant": _variant(actions),
            "cycles": {"median": cycles, "iqr": 10.0, "n": 200} if valid else None}


DATA = {"provenance": {"gpu": "test"}, "kernels": [
    {"kernel": "gemm_tile(2,2,2)", "candidates": [
        _cand([], ["baseline"], 1000.0),
        _cand(["vec_ld", "vec_st"], ["atlas_top2", "greedy"], 600.0),
        _cand(["vec_ld", "vec_st", "st_cache_wb"], ["fixed", "policy"], 610.0),
        _cand(["vec_ld", "vec_st", "reorder_cp"], ["atlas_top1"], 590.0),
        _cand(["vec_ld", "cache_cs"], ["atlas_top3"], 500.0, valid=False),  # invalid: never the oracle
    ]},
    {"kernel": "gemm_tile(4,4,4)", "candidates": [
        _cand([], ["baseline"], 2000.0),
        _cand(["vec_ld"], ["atlas_top1", "fixed", "greedy"], 1000.0),
    ]},
]}


def test_confirmed_oracle_contenders_and_fraction():
    policy = {"gemm_tile(2,2,2)": ["vec_ld", "vec_st", "st_cache_wb"], "gemm_tile(4,4,4)": ["vec_st"]}
    out = summarize(DATA, heldout={"gemm_tile(4,4,4)"}, policy=policy, min_gain=MIN_GAIN)
    k0, k1 = out["kernels"]
    assert (k0["oracle"]["actions"] == ["vec_ld", "vec_st", "reorder_cp"]
            and k0["oracle"]["change"] == pytest.approx(-0.41))
    assert k0["policy"]["change"] == pytest.approx(-0.39) and k0["greedy"]["change"] == pytest.approx(-0.40)
    assert k1["policy"] is None  # vec_st alone was not among the measured candidates
    tr, ho = out["summary"]["train"], out["summary"]["heldout"]
    assert tr["policy_oracle_fraction"] == pytest.approx(math.log(1000 / 610) / math.log(1000 / 590))
    assert ho["policy_unconfirmed"] == 1 and ho["policy_oracle_fraction"] is None
    assert out["summary"]["all"]["distinct_oracle_sets"] == 2
    # 590 +- 5 vs the fixed set's 610 +- 5: bands apart and 3.3% faster; on (4,4,4) the fixed set is the best
    assert k0["beats_fixed_set"] and not k1["beats_fixed_set"]
    assert out["summary"]["all"]["kernels_beating_fixed_set"] == ["gemm_tile(2,2,2)"]
    assert summarize(DATA, set(), policy, min_gain=0.05)["summary"]["all"]["kernels_beating_fixed_set"] == []


def test_a_kernel_without_a_measured_baseline_is_an_error_row():
    data = {"provenance": {},
            "kernels": [{"kernel": "k", "candidates": [_cand([], ["baseline"], 1.0, valid=False)]}]}
    out = summarize(data, heldout=set(), policy={}, min_gain=MIN_GAIN)
    assert out["kernels"][0]["error"] == "baseline not measured" and out["summary"]["all"]["kernels"] == 0


def test_the_policy_is_confirmed_by_its_sass_variant_when_its_set_was_not_measured():
    policy = {"gemm_tile(4,4,4)": ["vec_ld", "maxnreg_255"]}  # same SASS as vec_ld alone
    same = {("gemm_tile(4,4,4)", ("vec_ld", "maxnreg_255")): _variant(["vec_ld"])}
    out = summarize(DATA, set(), policy, MIN_GAIN,
                    variant_of=lambda k, acts: same.get((k, tuple(acts))))
    assert (out["kernels"][1]["policy"]["actions"] == ["vec_ld"]
            and out["kernels"][1]["policy"]["change"] == -0.5)
    # no atlas: the set itself was not measured
    assert summarize(DATA, set(), policy, MIN_GAIN)["kernels"][1]["policy"] is None

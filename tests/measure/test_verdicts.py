"""Time verdicts: paired bootstrap over rounds, the whole interval beyond 1 -/+ min_gain, seeded."""

from __future__ import annotations

import numpy as np
import pytest

from chronos.measure.verdicts import FASTER, SAME, SLOWER, geomean, ratio_estimate

KW = {"confidence": 0.99, "resamples": 4000}


def _rounds(ratio: float, noise: float, seed: int, rounds: int = 15, drift: float = 0.0):
    rng = np.random.default_rng(seed)
    common = 1 + drift * rng.standard_normal(rounds)  # what moves every contender of a round alike
    base = 0.010 * common * (1 + noise * rng.standard_normal(rounds))
    other = 0.010 * ratio * common * (1 + noise * rng.standard_normal(rounds))
    return list(base), list(other)


@pytest.mark.parametrize(("ratio", "want"), [(0.90, FASTER), (1.10, SLOWER), (0.997, SAME), (1.0, SAME)])
def test_verdict_needs_the_whole_interval_past_min_gain(ratio, want):
    base, other = _rounds(ratio, 0.003, seed=1)
    est = ratio_estimate(base, other, **KW)
    assert est.low <= est.ratio <= est.high
    assert est.verdict(0.005) == want


def test_identical_series_give_ratio_one_and_no_difference():
    base, _ = _rounds(1.0, 0.01, seed=2)
    est = ratio_estimate(base, list(base), **KW)
    assert (est.ratio, est.low, est.high) == (1.0, 1.0, 1.0) and est.verdict(0.005) == SAME


def test_a_drift_shared_by_the_round_does_not_hide_a_real_gain():
    base, other = _rounds(0.95, 0.002, seed=3, drift=0.05)  # rounds move by 5%, the pair by 0.2%
    assert ratio_estimate(base, other, **KW).verdict(0.005) == FASTER


def test_the_estimate_is_seeded_and_drops_unpaired_rounds():
    base, other = _rounds(0.97, 0.01, seed=4)
    a, b = ratio_estimate(base, other, **KW), ratio_estimate(base, other, **KW)
    assert a == b
    holes = ratio_estimate([*base, None], [*other, 0.01], **KW)
    assert holes.rounds == len(base)
    with pytest.raises(ValueError):
        ratio_estimate([0.01], [0.01], **KW)


def test_simulated_aa_false_verdict_rates_stay_under_one_percent():
    """The method on copies of one kernel with 1% per-round noise: 600 decisions, seeded."""
    verdicts = [ratio_estimate(*_rounds(1.0, 0.01, seed=s), **KW).verdict(0.005) for s in range(600)]
    assert verdicts.count(FASTER) / 600 <= 0.01 and verdicts.count(SLOWER) / 600 <= 0.01


def test_geomean():
    assert geomean([2.0, 8.0]) == pytest.approx(4.0) and geomean([]) is None


def test_the_adaptive_protocol_stops_when_every_interval_is_narrow_enough():
    from chronos.config import TimingConfig
    from chronos.measure.timing import too_wide

    tcfg = TimingConfig(max_rounds=60, target_halfwidth=0.004)
    base, noisy = _rounds(0.9, 0.03, seed=6)
    assert not too_wide({0: base, 1: list(base)}, [0, 1], tcfg)  # a copy: the interval is a point
    assert too_wide({0: base, 1: noisy}, [0, 1], tcfg)
    assert not too_wide({0: base}, [0], tcfg)  # nothing to compare with


def test_adaptive_knobs_stay_out_of_the_key_while_off():
    import dataclasses

    from chronos.config import TimingConfig

    off = TimingConfig(max_rounds=0)  # adaptive rounds off
    same = dataclasses.replace(off, rounds_step=9, target_halfwidth=0.1)
    assert off.timing_hash("m") == same.timing_hash("m")
    assert off.timing_hash("m") != dataclasses.replace(off, max_rounds=40).timing_hash("m")



def test_the_a_a_report_replays_to_the_same_bytes_on_this_cpu(tmp_path):
    """reports/aa.json was written on another processor; replayed here it must come out byte for byte.
    numpy's vectorised log (AVX-512 builds) differs from libm's in the last bit for ~1 value in 1000: with it
    the intervals of two A/A rows came out one bit apart on an AVX-512 machine (2026-12-04)."""
    from pathlib import Path

    from chronos.stages import aa

    root = Path(__file__).resolve().parents[2]
    out = tmp_path / "aa.json"
    assert aa.main(["--params", str(root / "params.yaml"), "--kernels", str(root / "data/kernels"),
                    "--store", str(root / "data/store/measurements.sqlite"), "--out", str(out)]) == 0
    assert out.read_bytes() == (root / "reports/aa.json").read_bytes()

"""A workload's GPU time per kernel from what was measured (#28 item 4): launches in the capture times the
tune's stock time; the selection it gives against the one per entry name the stages used."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from chronos import config
from chronos.errors import ConfigError
from chronos.kernels.profile import measured_gpu_ms, time_share
from chronos.search.headroom import selected

KERNELS = Path(__file__).resolve().parents[2] / "data" / "kernels"


def test_weights_are_launches_times_the_tune_s_stock_time(tmp_path):
    (tmp_path / "tune-parts").mkdir()
    (tmp_path / "capture.json").write_text(json.dumps({"per_kernel": [
        {"kernel": "a", "launches": 3}, {"kernel": "b", "launches": 1}, {"kernel": "c", "launches": 5}]}))
    (tmp_path / "tune-parts" / "a.json").write_text(json.dumps({"kernel": "a", "baseline_ms": 0.5}))
    (tmp_path / "tune-parts" / "b.json").write_text(json.dumps({"kernel": "b", "baseline": {"time_ms": 2.0}}))
    got = measured_gpu_ms(tmp_path)
    assert got == {"a": 1.5, "b": 2.0}  # c was not timed: absent, not zero
    assert time_share(got, ["b", "b"]) == pytest.approx(2.0 / 3.5) and time_share({}, ["a"]) is None
    assert measured_gpu_ms(tmp_path / "absent") == {}


def test_on_flex_the_time_selection_keeps_both_templates_of_one_entry_name():
    by_entry = [s.kernel for _, s in selected(KERNELS, "captured/flex", 24)]
    by_time = [s.kernel for _, s in selected(KERNELS, "captured/flex", 24, "measured_time")]
    assert len(by_entry) == 6 and len(by_time) == 8
    weight = measured_gpu_ms(KERNELS / "captured" / "flex")
    assert [weight[k] for k in by_time] == sorted(weight.values(), reverse=True)
    assert time_share(weight, by_entry) < 0.5 < time_share(weight, by_time[:2])


def test_on_llama_the_24_heaviest_carry_most_of_the_time_and_the_stages_24_do_not():
    weight = measured_gpu_ms(KERNELS / "captured" / "llama")
    heavy = [s.kernel for _, s in selected(KERNELS, "captured/llama", 24, "measured_time")]
    used = [s.kernel for _, s in selected(KERNELS, "captured/llama", 24)]
    assert time_share(weight, heavy) > 0.8 and time_share(weight, used) < 0.3


def test_both_keeps_every_kernel_the_profile_chose_and_adds_the_heaviest_it_left_out():
    weight = measured_gpu_ms(KERNELS / "captured" / "bert")
    used = [s.kernel for _, s in selected(KERNELS, "captured/bert", 24, once_per="ptx")]
    both = [s.kernel for _, s in selected(KERNELS, "captured/bert", 24, "profile+measured_time", "ptx")]
    heavy = [s.kernel for _, s in selected(KERNELS, "captured/bert", 24, "measured_time")]
    assert both[:len(used)] == used  # nothing measured under `profile` drops out, in its order
    added = both[len(used):]
    assert added and len(set(both)) == len(both) and set(added) == set(heavy) - set(used)
    assert [weight[k] for k in added] == sorted((weight[k] for k in added), reverse=True)
    assert time_share(weight, used) < 0.3 and time_share(weight, both) > 0.9


def test_both_adds_no_kernel_the_tune_did_not_time():
    weight = measured_gpu_ms(KERNELS / "captured" / "flex_decode_long")
    used = {s.kernel for _, s in selected(KERNELS, "captured/flex_decode_long", 24, once_per="ptx")}
    both = [s.kernel for _, s in selected(KERNELS, "captured/flex_decode_long", 24, "profile+measured_time",
                                          "ptx")]
    assert all(weight.get(k) for k in both if k not in used)


def test_an_unknown_selection_is_refused_by_name(tmp_path):
    p = tmp_path / "params.yaml"
    p.write_text("search:\n  knob_census:\n    select: fastest\n")
    with pytest.raises(ConfigError, match=r"search.knob_census.select: must be profile or measured_time or "
                                          r"profile\+measured_time"):
        config.load(p)


def test_weighted_speedup_is_amdahl_over_per_kernel_weights():
    from chronos.kernels.profile import weighted_speedup

    weights = {"a": 3.0, "b": 1.0}
    assert weighted_speedup(weights, {"a": 1.5}) == 4.0 / (2.0 + 1.0)
    assert weighted_speedup(weights, {"a": 1.5}, default=2.0) == 4.0 / (2.0 + 0.5)
    assert weighted_speedup(weights, {}) == 1.0 and weighted_speedup({}, {"a": 2.0}) is None

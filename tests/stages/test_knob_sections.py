"""The knob stages' shared shell (chronos.stages.knob_sections): what a per-kernel result says of a
workload's Triton GPU time."""

from __future__ import annotations

import json

import pytest

from chronos.kernels.profile import measured_gpu_ms
from chronos.stages.knob_sections import time_shares


def test_the_triton_time_speedup_applies_each_measured_winner_to_its_share_of_the_time(tmp_path):
    (tmp_path / "tune-parts").mkdir()
    (tmp_path / "capture.json").write_text(json.dumps({"per_kernel": [
        {"kernel": "a", "launches": 10}, {"kernel": "b", "launches": 1}, {"kernel": "c", "launches": 2}]}))
    for k, ms in (("a", 0.5), ("b", 3.0), ("c", 1.0)):  # a: 5 ms of GPU time, b: 3, c: 2 (10 in all)
        (tmp_path / "tune-parts" / f"{k}.json").write_text(json.dumps({"kernel": k, "baseline_ms": ms}))
    rows = [{"kernel": "a", "speedup": 1.25, "best": {}}, {"kernel": "b", "speedup": 1.0, "best": {}},
            {"kernel": "c", "error": "not_measured (budget)"}]
    got = time_shares(measured_gpu_ms(tmp_path), rows)
    assert got["selected_time_share"] == 1.0 and got["measured_time_share"] == 0.8
    assert got["triton_time_speedup"] == pytest.approx(10 / (10 - 5 * (1 - 1 / 1.25)))  # 10 / 9
    assert time_shares(measured_gpu_ms(tmp_path / "absent"), rows)["triton_time_speedup"] is None


def test_selected_by_measured_time_the_budget_goes_to_the_largest_shares_of_every_workload_first():
    from pathlib import Path
    from types import SimpleNamespace

    from chronos.stages.knob_sections import measuring_order

    kernels = Path(__file__).resolve().parents[2] / "data" / "kernels"
    families = ["captured/llama", "captured/flex"]
    heaviest = SimpleNamespace(families=families, per_family=4, select="measured_time", once_per="entry")
    weights = {f: measured_gpu_ms(kernels / f) for f in families}
    by_share = measuring_order(kernels, heaviest, weights)
    assert {f for f, _ in by_share} == set(families) and len(by_share) == 8
    assert by_share[0][0] == "captured/flex"  # one flex template carries more of flex than any llama kernel
    shares = [time_shares(weights[f], [{"kernel": item[1].kernel, "best": {}, "speedup": 1.0}])
              ["measured_time_share"] for f, item in by_share]
    assert shares == sorted(shares, reverse=True)
    by_profile = SimpleNamespace(families=families, per_family=4, select="profile", once_per="entry")
    in_order = measuring_order(kernels, by_profile, weights)
    assert [f for f, _ in in_order] == ["captured/llama"] * 4 + ["captured/flex"] * 4


def test_a_part_records_when_it_was_recorded_and_replay_answers_as_the_store_stood_then(tmp_path):
    from types import SimpleNamespace

    from chronos.measure.store import now_stamp
    from chronos.search.knob_census import census_family
    from chronos.stages.knob_sections import pin_part

    spec = SimpleNamespace(kernel="k")
    row = {"kernel": "k", "best": {"actions": ["a"], "verdict": "faster"}, "speedup": 1.1}
    before = now_stamp()
    census_family("f", [(0, spec)], lambda s: dict(row), tmp_path, replay=False, out_of_budget=lambda: False,
                  provenance=lambda: {"gpu": "G"})
    prov = json.loads((tmp_path / "f" / "k.json").read_text())["provenance"]
    assert prov["gpu"] == "G" and before <= prov["recorded_at"] <= now_stamp()
    backend, pinned = SimpleNamespace(gpu=None, not_after=None), []
    got = census_family("f", [(0, spec)], lambda s: dict(row), tmp_path, replay=True,
                        out_of_budget=lambda: False, provenance=dict,
                        pin=lambda p: (pinned.append(p), pin_part(backend, p)))
    assert pinned == [prov] and (backend.gpu, backend.not_after) == ("G", prov["recorded_at"])
    assert got[0]["as_recorded"] is True

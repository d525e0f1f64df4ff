"""Inductor's tuners over every recorded end-to-end run: which runs count, the range, ahead / behind."""

from __future__ import annotations

import json
from pathlib import Path

from chronos.report.anchor_runs import (
    KEPT_RUNS,
    across_runs,
    across_runs_lines,
    as_deployed,
    recorded_runs,
    tuner_of,
)

CAPTURED = Path(__file__).resolve().parents[2] / "data/kernels/captured"


def _run(date: str, v3: float, tuner: float, over_ci: tuple[float, float], timing="cuda_graphs") -> dict:
    ratio = {"median": 1.0, "ci95": [0.99, 1.01], "rounds": 16}
    return {"provenance": {"date": date}, "timing": timing, "speedup": {**ratio, "median": v3},
            "anchors": {"coordesc": {"speedup": {**ratio, "median": tuner},
                                     "v3_over": {**ratio, "ci95": list(over_ci)}}}}


def test_runs_are_taken_once_per_date_with_cuda_graphs_and_anchors_oldest_first(tmp_path):
    (tmp_path / KEPT_RUNS).mkdir()
    latest = _run("2026-12-07T11:00:00Z", 1.01, 0.99, (1.01, 1.03))
    (tmp_path / "e2e-one-process.json").write_text(json.dumps(latest))
    (tmp_path / KEPT_RUNS / "same.json").write_text(json.dumps(latest))  # the latest kept again: once
    (tmp_path / KEPT_RUNS / "old.json").write_text(json.dumps(_run("2026-12-06T09:00:00Z", 1.0, 1.02,
                                                                   (0.97, 0.99))))
    steps = _run("2026-12-05T09:00:00Z", 1.0, 1.02, (0.97, 0.99), timing="python_steps")
    (tmp_path / KEPT_RUNS / "steps.json").write_text(json.dumps(steps))  # ±5% intervals: not comparable
    (tmp_path / "e2e-anchors.json").write_text(json.dumps({**latest, "anchors": {},
                                                           "provenance": {"date": "2026-12-04"}}))
    runs = recorded_runs(tmp_path)
    assert [r["provenance"]["date"] for r in runs] == ["2026-12-06T09:00:00Z", "2026-12-07T11:00:00Z"]
    got = across_runs(runs)
    assert got["runs"] == 2 and (got["v3_min"], got["v3_max"]) == (1.0, 1.01)
    c = got["coordesc"]
    assert (c["step_speedup_min"], c["step_speedup_max"]) == (0.99, 1.02)
    assert (c["v3_ahead"], c["v3_behind"], c["v3_level"]) == (1, 1, 0)
    line = across_runs_lines({"bert": {"across_runs": got}})[-1]
    assert line.startswith("- bert, 2 runs") and "ahead in 1, behind in 1, level in 0 of 2" in line
    assert across_runs_lines({"bert": {"across_runs": across_runs([latest])}}) == []  # one draw: no range


def test_a_runs_draws_of_a_tuner_count_each_as_one_beside_the_other_runs():
    """--anchor-draws: `coordesc`, `coordesc_draw2`, ... are draws of coordesc, each judged against its run's
    v3; a single run with several draws already has a range worth a line."""
    one = _run("2026-12-08T10:00:00Z", 1.01, 1.02, (0.98, 0.99))
    one["anchors"] |= {"coordesc_draw2": {"speedup": {"median": 0.98, "ci95": [0.97, 0.99]},
                                          "v3_over": {"median": 1.03, "ci95": [1.02, 1.04]}},
                       "coordesc_draw3": {"speedup": {"median": 1.0, "ci95": [0.99, 1.01]},
                                          "v3_over": {"median": 1.0, "ci95": [0.99, 1.01]}}}
    assert tuner_of("coordesc_draw3") == "coordesc" and tuner_of("max_autotune") == "max_autotune"
    got = across_runs([one, _run("2026-12-07T10:00:00Z", 1.0, 1.0, (1.01, 1.02))])
    c = got["coordesc"]
    assert (got["runs"], c["runs"], c["draws"]) == (2, 2, 4) and set(got) - {"runs", "v3_min", "v3_max"} == {
        "coordesc"}
    assert (c["step_speedup_min"], c["step_speedup_median"], c["step_speedup_max"]) == (0.98, 1.0, 1.02)
    assert (c["v3_ahead"], c["v3_behind"], c["v3_level"]) == (2, 1, 1)
    assert "level in 1 of 4 draws in 2 runs" in across_runs_lines({"bert": {"across_runs": got}})[-1]
    alone = across_runs([one])
    assert "of 3 draws in 1 run)" in across_runs_lines({"bert": {"across_runs": alone}})[-1]


def test_an_interval_across_one_is_level_not_a_win():
    got = across_runs([_run("a", 1.0, 1.0, (0.995, 1.004)), _run("b", 1.0, 1.0, (0.99, 1.001))])
    assert got["coordesc"]["v3_level"] == 2 and got["coordesc"]["v3_ahead"] == 0


def test_the_committed_bert_runs_show_the_tuner_varies_while_v3_holds():
    runs = recorded_runs(CAPTURED / "bert")
    got = across_runs(runs)
    assert got["runs"] >= 5 and got["coordesc"]["runs"] >= got["runs"] - 1  # one run timed max-autotune alone
    coordesc = got["coordesc"]
    # one draw of the tuner can land either side of v3: the range is wider than any run's interval
    assert coordesc["step_speedup_max"] - coordesc["step_speedup_min"] > 0.03
    assert got["v3_max"] - got["v3_min"] < 0.005
    assert coordesc["v3_ahead"] + coordesc["v3_behind"] + coordesc["v3_level"] == coordesc["draws"]


def test_a_run_that_timed_the_set_the_step_chose_counts_that_set_as_its_v3():
    runs = recorded_runs(CAPTURED / "bert")
    name = "without_l2_policy_streaming"
    timed = [r for r in runs if name in (r.get("also") or {})]
    assert len(timed) >= 2  # 2026-12-07 23:41 (beside max-autotune) and 23:55 (beside coordesc)
    full, chosen = across_runs(runs), across_runs(runs, name)
    assert chosen["v3_max"] > full["v3_max"]  # the set less the L2-policy winners ran faster in both
    for run in timed:
        as_v3 = as_deployed(run, name)
        assert as_v3["speedup"] == run["also"][name]["speedup"]
        for a, v in as_v3["anchors"].items():
            assert v["v3_over"]["median"] > run["anchors"][a]["v3_over"]["median"]
    assert as_deployed(runs[0], "without_nothing_timed") is runs[0]


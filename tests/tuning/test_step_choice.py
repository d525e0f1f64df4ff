"""The step decides what deploys: a set less some winners deploys only where the measured step ran faster
without them beyond its interval, and no earlier run timed it slower."""

import json

from chronos.tuning.step_choice import left_out_of, step_choice, workload_step_choice


def _run(over: dict[str, tuple[float, float, float]], date="2026-12-08T00:00:00Z") -> dict:
    """A one-process result whose `also` sets ran (median, ci low, ci high) over the full DB's set."""
    return {"also": {n: {"over_tuned": {"median": m, "ci95": [lo, hi]}} for n, (m, lo, hi) in over.items()},
            "provenance": {"date": date, "gpu": "NVIDIA H100 80GB HBM3"}}


def test_a_set_name_says_what_its_db_left_out_and_the_unnamed_set_says_nothing():
    assert left_out_of("without_l2_policy_streaming") == ["l2_policy_streaming"]
    assert left_out_of("without_l2_policy_streaming+ld_cache_cs") == ["l2_policy_streaming", "ld_cache_cs"]
    assert left_out_of("without_left_out") is None and left_out_of("coordesc") is None


def test_the_full_db_deploys_unless_the_step_ran_faster_beyond_its_interval():
    assert step_choice(_run({}))["set"] == "tuned"
    assert step_choice(_run({"without_l2_policy_streaming": (1.002, 0.999, 1.004)}))["set"] == "tuned"
    got = step_choice(_run({"without_l2_policy_streaming": (1.002, 1.001, 1.004)}))
    assert got["set"] == "without_l2_policy_streaming" and got["leave_out"] == ["l2_policy_streaming"]
    assert "1.0020x" in got["why"] and "H100" in got["why"]


def test_an_unnamed_set_never_deploys_and_the_fastest_named_one_wins():
    assert step_choice(_run({"without_left_out": (1.01, 1.005, 1.02)}))["set"] == "tuned"
    got = step_choice(_run({"without_a": (1.002, 1.001, 1.004), "without_b": (1.005, 1.003, 1.006)}))
    assert got["set"] == "without_b"


def test_an_earlier_run_that_timed_the_set_slower_keeps_the_full_db():
    latest = _run({"without_a": (1.003, 1.001, 1.005)})
    assert step_choice(latest, [_run({"without_a": (1.001, 0.999, 1.003)})])["set"] == "without_a"
    assert step_choice(latest, [_run({"without_a": (0.998, 0.996, 1.000)})])["set"] == "tuned"
    assert step_choice(latest, [_run({"without_b": (0.9, 0.8, 0.95)})])["set"] == "without_a"  # not timed


def test_a_workload_reads_its_latest_run_and_the_runs_before_it(tmp_path):
    assert workload_step_choice(tmp_path)["set"] == "tuned"
    (tmp_path / "e2e-one-process.json").write_text(json.dumps(_run({"without_a": (1.003, 1.001, 1.005)})))
    assert workload_step_choice(tmp_path)["set"] == "without_a"
    (tmp_path / "e2e-anchor-runs").mkdir()
    (tmp_path / "e2e-anchor-runs" / "2026-12-07T11-26.json").write_text(
        json.dumps(_run({"without_a": (0.99, 0.98, 0.995)})))
    assert workload_step_choice(tmp_path)["set"] == "tuned"

"""The e2e output check's racy tensors against one more stock run (chronos.report.captured.exchangeable):
were the tuned run one more stock run, each racy tensor would be beyond the envelope of k stock runs with
probability 1/(k+1); the committed gpt2 train phase (6 of 29, 4 stock runs) is what that predicts."""

from __future__ import annotations

import json
import statistics
from pathlib import Path

import pytest

from chronos.report.captured import exchangeable

ROOT = Path(__file__).resolve().parents[2]


def test_offenders_are_weighed_against_what_one_more_stock_run_would_give():
    w = {"tensors": 5, "deterministic": 1, "offenders": [{"kind": "racy"}, {"kind": "deterministic"}]}
    got = exchangeable(w, 1)  # k = 1: a racy tensor is beyond the envelope half of the time
    assert got["racy"] == 4 and got["racy_offenders"] == 1 and got["expected_if_stock"] == 2.0
    assert got["p_if_stock"] == pytest.approx(1 - 0.5**4)  # P(at least 1 of 4)
    none = exchangeable({"tensors": 3, "deterministic": 0, "offenders": []}, 4)
    assert none["p_if_stock"] == pytest.approx(1.0)


def test_gpt2_s_train_phase_is_as_far_outside_as_one_more_stock_run_would_be():
    e2e = json.loads((ROOT / "data/kernels/captured/gpt2/e2e.json").read_text())
    got = exchangeable(e2e["within_stock_spread"]["train"], e2e["stock_runs"])
    assert (got["racy"], got["racy_offenders"]) == (29, 6)
    assert got["expected_if_stock"] == pytest.approx(5.8) and got["p_if_stock"] > 0.3


def test_a_set_the_step_chose_is_chronos_s_with_each_tuner_over_it_from_the_same_rounds(tmp_path):
    from chronos.report.captured import one_process_summary
    from chronos.tuning.step_choice import workload_step_choice

    run = json.loads((Path(__file__).resolve().parents[2] / "data/kernels/captured/bert/e2e-anchor-runs"
                      / "2026-12-07T11-26.json").read_text())  # it timed the DB less l2_policy_streaming
    name = "without_l2_policy_streaming"
    run["also"] = {name: run["also"]["without_left_out"]}
    run["times"][name] = run["times"].pop("without_left_out")
    (tmp_path / "e2e-one-process.json").write_text(json.dumps(run))
    choice = workload_step_choice(tmp_path)
    assert choice["set"] == name and "1.0018x" in choice["why"]
    full, chosen = one_process_summary(run), one_process_summary(run, choice)
    assert chosen["speedup"] == run["also"][name]["speedup"]
    assert chosen["deployed"]["full_db"] == full["speedup"]
    coordesc_over = [a / b for a, b in zip((sum(t.values()) for t in run["times"]["coordesc"]),
                                           (sum(t.values()) for t in run["times"][name]))]
    over = chosen["anchors"]["coordesc"]["v3_over"]["median"]
    assert abs(over - statistics.median(coordesc_over)) < 1e-12
    assert over > full["anchors"]["coordesc"]["v3_over"]["median"]
    assert one_process_summary(run, {"set": "tuned"}) == full

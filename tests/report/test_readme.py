"""reports/README.md sections: present only when their inputs were produced."""

import json
from pathlib import Path

from chronos.report import readme
from chronos.report.tables import triton_metrics
from tests.report.triton_fixtures import aa_report, evaluate_report, search_report

R = Path(__file__).resolve().parents[2] / "reports"
METRICS = json.loads((R / "metrics.json").read_text())
VERDICTS = {"confidence": 0.99, "min_gain": 0.005}


def _gemm_only(metrics: dict) -> dict:
    return {k: v for k, v in metrics.items() if not k.startswith(("triton", "aa", "confirmed_"))}


def test_absent_sections_are_left_out():
    bare = _gemm_only(METRICS)
    assert readme.triton_section(bare) == [] and readme.confirmed_section(bare) == []
    assert readme.confirmed_section(METRICS)[0].startswith("## Confirmed side by side")
    m = {**bare, "triton": triton_metrics(evaluate_report(), search_report())}
    assert readme.triton_section(m, search_report(), VERDICTS)[0] == "## Triton suite (zero-shot, wall time)"


def test_triton_section_with_one_tier_and_no_aa():
    ev = evaluate_report()
    del ev["tiers"]["triton_llm"]
    lines = readme.triton_section({"triton": triton_metrics(ev, None)}, None, VERDICTS)
    rows = [line for line in lines if line.startswith("| ") and not line.startswith("| tier")]
    assert rows == ["| small (`triton`) | 3 of 4 | 1.077x | 1 / 0 / 3 | n/a | n/a | 50.0% |"]
    assert not any("A/A" in line or "Greedy failed" in line for line in lines)


def test_triton_section_with_the_aa_test_only():
    aa = aa_report()["summary"]
    lines = readme.triton_section({"aa": {k: aa[k] for k in ("decisions", "false_faster", "false_slower")}})
    assert not any(line.startswith("| tier") for line in lines)
    assert any(line.startswith("A/A test (`aa.json`): 16 decisions") for line in lines)
    assert any("99% bootstrap confidence interval" in line for line in lines)


def test_search_section_notes():
    m = {**METRICS, "random_kernels": 3}
    rows = [line for line in readme.search_section(m, random_partial=True) if line.startswith("| random")]
    assert rows == [(f"| random (partial run) | 3 | {readme._pct(m['random_mean_change'])} | "
                     f"{readme._pct(m['random_median_change'])} |")]
    m = {**METRICS, "oracle_kernels": 0, "oracle_mean_change": None, "oracle_median_change": None}
    assert "| oracle (not measured yet) | 0 | n/a | n/a |" in readme.search_section(m, random_partial=False)


def test_captured_section_has_a_row_per_tuned_workload_and_dashes_where_e2e_is_missing():
    captured = json.loads((R / "captured.json").read_text())
    lines = readme.captured_section(captured)
    rows = {line.split(" | ")[0].lstrip("| "): line for line in lines if line.startswith("| ")
            and not line.startswith(("| workload", "|---"))}
    assert set(rows) == set(captured["workloads"])
    flex = captured["workloads"]["flex"]
    assert f"| {flex['tune']['faster']} | {flex['tune']['unchanged']} |" in rows["flex"]
    assert f"{flex['e2e']['speedup']['median']:.3f}" in rows["flex"] and rows["flex"].endswith("| True |")
    # 4 stock runs each: bert's racy train tensors all within their spread, gpt2's (all 29 racy) not on 6
    assert "bitwise: inference; train: within stock's own spread" in rows["bert"]
    assert "train: outside stock's own spread (6 tensors)" in rows["gpt2"]
    no_e2e = json.loads(json.dumps(captured))
    del no_e2e["workloads"]["bert"]["e2e"]
    bert = next(x for x in readme.captured_section(no_e2e) if x.startswith("| bert |"))
    assert bert.endswith("| — | — | — |")
    untuned = {"workloads": {w: {k: v for k, v in s.items() if k != "tune"} for w, s in
                             captured["workloads"].items()}}
    assert readme.captured_section(untuned) == [] and readme.captured_section(None) == []


def test_the_one_process_line_names_the_set_the_step_chose_and_the_full_db_beside_it():
    captured = json.loads((R / "captured.json").read_text())
    bert = captured["workloads"]["bert"]["e2e_one_process"]
    assert bert["deployed"]["set"] == "without_l2_policy_streaming"  # as committed (2026-12-07 23:55)
    del bert["deployed"]
    full = next(x for x in readme.captured_section(captured) if x.startswith("- bert ("))
    assert "the DB the step chose" not in full
    bert["deployed"] = {"set": "without_l2_policy_streaming", "why": "the step ran 1.0018x faster",
                        "full_db": {"median": 1.0076, "ci95": [1.0063, 1.0103]}}
    line = next(x for x in readme.captured_section(captured) if x.startswith("- bert ("))
    assert "Chronos v3 here is `without_l2_policy_streaming`" in line and "1.0018x" in line
    assert line.startswith(full)

"""The knob census and the joint step in metrics and in reports/README.md."""

from __future__ import annotations

import json
from pathlib import Path

from chronos.report.knobs import kernel_anchors_section, knob_metrics, knob_section

REPORTS = Path(__file__).resolve().parents[2] / "reports"


def test_metrics_and_section_carry_every_measured_workload():
    census = json.loads((REPORTS / "knob_census.json").read_text())
    joint = json.loads((REPORTS / "knob_ptx.json").read_text())
    m = knob_metrics(census, joint)
    def measured(report: dict) -> set[str]:  # no key for a workload none of whose kernels is measured
        return {f.split("/", 1)[1] for f, s in report["summary"].items() if s.get("measured")}
    assert set(m["knobs"]) == measured(census) >= {"llama", "gpt2", "bert", "flex", "flex_decode_long"}
    assert set(m["v3"]) == measured(joint)
    for w, s in m["v3"].items():
        assert s["time_geomean"] == joint["summary"][f"captured/{w}"]["time_geomean"]
        assert 0 <= s["ptx_on_top"] <= s["faster"] <= s["measured"] <= s["kernels"]
    lines = knob_section(census, joint)
    rows = [ln for ln in lines if ln.startswith("| ") and not ln.startswith("| workload")]
    head = next(ln for ln in lines if ln.startswith("| workload"))
    assert len(rows) == len(m["knobs"]) and all(ln.count("|") == head.count("|") for ln in rows)
    assert knob_metrics(None) == {} and knob_section(None) == []


def test_a_later_step_that_measured_a_workload_gives_its_v3_and_the_anchors_their_own_keys():
    census = json.loads((REPORTS / "knob_census.json").read_text())
    joint = json.loads((REPORTS / "knob_ptx.json").read_text())
    blocks = {"summary": {"captured/flex": {"kernels": 6, "measured": 6, "faster": 3, "time_geomean": 1.2,
                                            "exact_share": 0.5, "ptx_on_top": 1, "block_root": 2},
                          "captured/bert": {"measured": 0}}}
    anchors = {"summary": {"captured/flex": {
        "measured": 6,
        "max_autotune": {"kernels": 5, "time_geomean": 1.05, "bit_exact": 1, "not_launched": 1},
        "coordesc": {"kernels": 6, "time_geomean": 1.08, "bit_exact": 2, "not_launched": 0},
        "chronos": {"kernels": 6, "time_geomean": 1.2},
        "v3_on_coordesc": {"kernels": 6, "faster": 2, "time_geomean": 1.03}}}}
    m = knob_metrics(census, joint, blocks, anchors)
    assert m["v3"]["flex"]["time_geomean"] == 1.2 and m["v3"]["flex"]["block_root"] == 2
    assert m["v3"]["bert"]["time_geomean"] == joint["summary"]["captured/bert"]["time_geomean"]
    assert m["anchor"]["flex"] == {"max_autotune": {"kernels": 5, "time_geomean": 1.05},
                                   "coordesc": {"kernels": 6, "time_geomean": 1.08}}
    assert m["v3_on_coordesc"]["flex"]["time_geomean"] == 1.03 and "anchor" not in knob_metrics(census, joint)
    assert m["v3_on_coordesc"]["flex"]["from"] == "ptx_on_top"  # no walk from coordesc's config yet
    lines = kernel_anchors_section({**anchors, "provenance": {"gpu": "NVIDIA H100 80GB HBM3"}})
    row = next(ln for ln in lines if ln.startswith("| flex |"))
    assert "1.0500× (?/5)" in row and "1.0800× (?/6)" in row and "1.0300× (2/6)" in row
    assert "H100 80GB HBM3" in lines[1] and not any(ln.startswith("| bert") for ln in lines)
    assert kernel_anchors_section(None) == [] and kernel_anchors_section({"summary": {}}) == []


def test_the_committed_anchor_runs_give_step_metrics_and_a_readme_row_per_workload():
    from chronos.report.captured import workload_summary
    from chronos.report.knobs import anchors_section
    from chronos.report.tables import anchor_metrics

    root = Path(__file__).resolve().parents[2] / "data/kernels/captured"
    got = {w: anchor_metrics(workload_summary(root / w)["e2e_anchors"]) for w in ("flex", "bert")}
    flex = got["flex"]
    assert flex["gpu"] == "NVIDIA H100 80GB HBM3" and flex["rounds"] == 30 and flex["v3_bitwise"]
    assert flex["timing"] == "cuda_graphs" and "CUDA graphs" in anchors_section(got)[-2]
    for tuner in ("max_autotune", "coordesc"):
        m = flex[tuner]
        assert m["step_speedup_ci95_low"] <= m["step_speedup"] <= m["step_speedup_ci95_high"]
        assert m["v3_over_ci95_low"] <= m["v3_over"] <= m["v3_over_ci95_high"] and m["bitwise"] is True
    # llama's anchors run is a run of its own (e2e-anchors.json: the workload's latest run timed no tuner),
    # with its own v3; bert's latest timed coordesc once and no max-autotune, so its earlier anchors run,
    # which did, takes a row of its own; the latest's v3 is the set its step chose (the DB less the
    # L2-policy winners), timed beside the full DB
    llama = workload_summary(root / "llama")
    assert "anchors" not in llama["e2e_one_process"] or not llama["e2e_one_process"]["anchors"]
    assert set(llama["e2e_anchors"]["anchors"]) == {"max_autotune", "coordesc"}
    bert = workload_summary(root / "bert")
    assert set(bert["e2e_one_process"]["anchors"]) == {"coordesc"}
    assert bert["e2e_one_process"]["deployed"]["set"] == "without_l2_policy_streaming"
    assert "max_autotune" in bert["e2e_anchors_earlier"]["anchors"]
    lines = anchors_section(got)
    assert sum(line.startswith(("| flex |", "| bert |")) for line in lines) == 2
    bert_row = next(line for line in lines if line.startswith("| bert |"))
    assert "draw 2: " not in bert_row and bert_row.endswith("| —, False |")
    assert anchors_section({"llama": {"max_autotune": {"kernels": 3, "time_geomean": 1.0}}}) == []


def test_a_replayed_stage_names_every_gpu_its_parts_were_measured_on():
    census = json.loads((REPORTS / "knob_census.json").read_text())
    assert census["provenance"]["gpus"] == ["NVIDIA H100 80GB HBM3", "NVIDIA H200"]
    text = "\n".join(knob_section(census, None))
    assert "verified bit-exactly against stock on the H100 80GB HBM3 and H200" in text


def test_a_workload_of_hand_written_kernels_says_inductor_s_tuners_do_not_apply():
    from chronos.report.knobs import NOT_APPLICABLE

    anchors = {"summary": {"captured/attorch_lm": {"kernels": 3, "measured": 0, "not_applicable": 3},
                           "captured/bert": {"kernels": 2, "measured": 0, "not_applicable": 0}}}
    m = knob_metrics(None, None, None, anchors)
    assert m["anchor"] == {"attorch_lm": {"not_applicable": NOT_APPLICABLE,
                                          "max_autotune": {"kernels": 0, "time_geomean": None},
                                          "coordesc": {"kernels": 0, "time_geomean": None}}}
    assert m["v3_on_coordesc"]["attorch_lm"]["not_applicable"] == NOT_APPLICABLE


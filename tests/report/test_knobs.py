"""The knob census and the joint step in metrics and in reports/README.md."""

from __future__ import annotations

import json
from pathlib import Path

from chronos.report.knobs import knob_metrics, knob_section

REPORTS = Path(__file__).resolve().parents[2] / "reports"


def test_metrics_and_section_carry_every_measured_workload():
    census = json.loads((REPORTS / "knob_census.json").read_text())
    joint = json.loads((REPORTS / "knob_ptx.json").read_text())
    m = knob_metrics(census, joint)
    assert set(m["knobs"]) == set(m["v3"]) == {"llama", "gpt2", "bert", "flex"}
    for w, s in m["v3"].items():
        assert s["time_geomean"] == joint["summary"][f"captured/{w}"]["time_geomean"]
        assert 0 <= s["ptx_on_top"] <= s["faster"] <= s["measured"] <= s["kernels"]
    lines = knob_section(census, joint)
    rows = [ln for ln in lines if ln.startswith("| ") and not ln.startswith("| workload")]
    assert len(rows) == 4 and all(ln.count("|") == lines[4].count("|") for ln in rows)
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

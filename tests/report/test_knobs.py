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

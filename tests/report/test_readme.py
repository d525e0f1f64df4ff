"""reports/README.md sections: present only when their inputs were produced."""

import json
from pathlib import Path

from chronos.report import readme

R = Path(__file__).resolve().parents[2] / "reports"
METRICS = json.loads((R / "metrics.json").read_text())


def test_absent_sections_are_left_out():
    bare = {k: v for k, v in METRICS.items() if not k.startswith(("triton_", "confirmed_"))}
    assert readme.triton_section(bare) == [] and readme.confirmed_section(bare) == []
    assert readme.triton_section(METRICS)[0].startswith("## Triton suite")
    assert readme.confirmed_section(METRICS)[0].startswith("## Confirmed side by side")


def test_search_section_notes():
    m = {**METRICS, "random_kernels": 3}
    rows = [line for line in readme.search_section(m, random_partial=True) if line.startswith("| random")]
    assert rows == [(f"| random (partial run) | 3 | {readme._pct(m['random_mean_change'])} | "
                     f"{readme._pct(m['random_median_change'])} |")]
    m = {**METRICS, "oracle_kernels": 0, "oracle_mean_change": None, "oracle_median_change": None}
    assert "| oracle (not measured yet) | 0 | n/a | n/a |" in readme.search_section(m, random_partial=False)

"""Report tables and metrics, on the committed reports (no measurement)."""

import json
from pathlib import Path

import pytest

from chronos.errors import ChronosError
from chronos.report.tables import (
    read_grpo_curves,
    roofline_fraction,
    search_table,
    summary_metrics,
    triton_metrics,
)
from tests.report.triton_fixtures import evaluate_report, search_report

ROOT = Path(__file__).resolve().parents[2]
R = ROOT / "reports"


def _read(name: str) -> dict:
    return json.loads((R / name).read_text())


def test_search_table_matches_the_greedy_results():
    table = search_table(_read("baseline.json"), _read("greedy_results.json"), _read("random_results.json"),
                         _read("oracle.json"), _read("training_result.json"))
    assert len(table) == 64 and table["greedy_change"].notna().all() and table["oracle_change"].notna().all()
    greedy = {k["kernel"]: k for k in _read("greedy_results.json")["kernels"]}
    for _, row in table.iterrows():
        g = greedy[row["kernel"]]
        assert row["greedy_cycles"] == g["best"]["cycles"]
        assert abs(row["greedy_change"] - (g["best"]["cycles"] / g["baseline"]["cycles"] - 1)) < 1e-12
        assert row["greedy_cycles"] <= row["baseline_cycles"]  # greedy never keeps a slower variant
    # Greedy, random and the policy replay the atlas, so the oracle (its best valid set) bounds all three.
    for name in ("greedy", "random", "policy"):
        assert (table["oracle_cycles"] <= table[f"{name}_cycles"]).all(), name


def test_metrics_without_the_optional_reports():
    baseline = _read("baseline.json")
    table = search_table(baseline, _read("greedy_results.json"))
    m = summary_metrics(table, None, None, baseline)
    assert m["greedy_kernels"] == 64 and m["random_kernels"] == 0
    assert m["baseline_valid"] == m["baseline_kernels"]
    assert not any(k.startswith(("triton", "aa", "confirmed_", "bc_", "predicted_")) for k in m)


def test_triton_metrics_per_tier():
    m = triton_metrics(evaluate_report(), search_report())
    assert set(m) == {"small", "llm"}
    assert set(m["small"]) == {"time_geomean", "faster", "slower", "wrong", "measured", "kernels",
                               "greedy_time_geomean", "greedy_faster", "greedy_wrong", "roofline_median"}
    assert m["llm"]["roofline_median"] == pytest.approx(0.8)
    only_greedy = triton_metrics(None, search_report())
    assert set(only_greedy["small"]) == {"greedy_time_geomean", "greedy_faster", "greedy_wrong"}
    assert triton_metrics(None, None) == {} and triton_metrics({"summary": {}, "kernels": []}, None) == {}


def test_roofline_fraction_is_the_nearer_roof():
    assert roofline_fraction({"roofline": {"bandwidth_fraction": 0.2, "flop_fraction": 0.7}}) == 0.7
    assert roofline_fraction({"roofline": {"bandwidth_fraction": 0.4, "flop_fraction": None}}) == 0.4
    assert roofline_fraction({"kernel": "k", "verdict": "unmeasured"}) is None
    ev = evaluate_report()
    for row in ev["tiers"]["triton_llm"]["kernels"]:
        del row["roofline"]
    assert "roofline_median" not in triton_metrics(ev, None)["llm"]


def test_grpo_curves_reader(tmp_path):
    assert list(read_grpo_curves(R / "grpo_curves.csv")["epoch"][:2]) == [0, 1]
    bad = tmp_path / "grpo_curves.csv"
    for text in ("", "\x00\xff garbage\n"):
        bad.write_text(text)
        with pytest.raises(ChronosError, match="grpo_curves.csv"):
            read_grpo_curves(bad)

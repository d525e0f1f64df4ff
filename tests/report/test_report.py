"""Report tables and metrics, on the committed reports (no measurement)."""

import json
from pathlib import Path

import pytest

from chronos.errors import ChronosError
from chronos.report.tables import read_grpo_curves, search_table, summary_metrics

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
    assert not any(k.startswith(("triton_", "confirmed_", "bc_", "predicted_")) for k in m)


def test_grpo_curves_reader(tmp_path):
    assert list(read_grpo_curves(R / "grpo_curves.csv")["epoch"][:2]) == [0, 1]
    bad = tmp_path / "grpo_curves.csv"
    for text in ("", "\x00\xff garbage\n"):
        bad.write_text(text)
        with pytest.raises(ChronosError, match="grpo_curves.csv"):
            read_grpo_curves(bad)

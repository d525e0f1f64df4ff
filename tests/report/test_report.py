"""Report tables and the report stage, on the committed reports (no measurement)."""

import json
import shutil
from pathlib import Path

from chronos.report.tables import search_table, summary_metrics
from chronos.stages import report

ROOT = Path(__file__).resolve().parents[2]
R = ROOT / "reports"


def test_search_table_matches_the_greedy_results():
    table = search_table(R / "baseline.json", R / "greedy_results.json", R / "random_results.json",
                         R / "oracle.json", R / "training_result.json")
    assert len(table) == 64 and table["greedy_change"].notna().all() and table["oracle_change"].notna().all()
    greedy = {k["kernel"]: k for k in json.loads((R / "greedy_results.json").read_text())["kernels"]}
    for _, row in table.iterrows():
        g = greedy[row["kernel"]]
        assert row["greedy_cycles"] == g["best"]["cycles"]
        assert abs(row["greedy_change"] - (g["best"]["cycles"] / g["baseline"]["cycles"] - 1)) < 1e-12
        assert row["greedy_cycles"] <= row["baseline_cycles"]  # greedy never keeps a slower variant
    # Greedy, random and the policy replay the atlas, so the oracle (its best valid set) bounds all three.
    for name in ("greedy", "random", "policy"):
        assert (table["oracle_cycles"] <= table[f"{name}_cycles"]).all(), name


def test_metrics_and_stage(tmp_path):
    shutil.copytree(R, tmp_path / "reports", ignore=shutil.ignore_patterns("h200_runs", "figures"))
    assert report.main(["--reports", str(tmp_path / "reports")]) == 0
    metrics = json.loads((tmp_path / "reports/metrics.json").read_text())
    assert metrics == json.loads((R / "metrics.json").read_text())
    assert (tmp_path / "reports/figures/search_gemm_tile.png").stat().st_size > 10_000
    table = search_table(R / "baseline.json", R / "greedy_results.json")
    m = summary_metrics(table, None, None, R / "baseline.json")
    assert m["greedy_kernels"] == 64 and m["random_kernels"] == 0 and m["baseline_valid"] == m["baseline_kernels"]

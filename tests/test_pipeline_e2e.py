"""The whole pipeline, end to end on replay, in a copy of the repository: every output comes out
byte-identical to the committed one (the README's main job, as CI can run it: no GPU)."""

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
OUTPUTS = ["reports/baseline.json", "reports/greedy_results.json", "data/demos/trajectories.jsonl",
           "reports/bc_stats.json", "models/bc.pt", "reports/predictions.json", "reports/metrics.json",
           "reports/search_gemm_tile.csv", "reports/README.md", "data/kernels/gemm_tile/specs.json",
           "data/kernels/gemm_tile/gemm_tile_4_6_4.ptx", "data/search/greedy/gemm_tile_4_6_4.json"]


@pytest.mark.slow
def test_snakemake_reproduces_every_committed_output(tmp_path, ptxas):
    for name in ("Snakefile", "params.yaml", "dvc.yaml"):
        shutil.copy(ROOT / name, tmp_path)
    for name in ("workflow", "data", "reports", "src"):
        shutil.copytree(ROOT / name, tmp_path / name, ignore=shutil.ignore_patterns("__pycache__"))
    (tmp_path / "models").mkdir()
    proc = subprocess.run([sys.executable, "-m", "snakemake", "--cores", "2", "--forceall", "--quiet"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=1800, check=False)
    assert proc.returncode == 0, proc.stderr[-3000:]
    for out in OUTPUTS:
        assert (tmp_path / out).read_bytes() == (ROOT / out).read_bytes(), f"{out} differs from the committed one"

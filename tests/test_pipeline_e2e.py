"""The whole pipeline, end to end on replay, in a copy of the repository (the README's main job as CI can run
it: no GPU), with a tiny training configuration (params override: 2 BC epochs, 2 GRPO epochs).

Every output that does not depend on the training schedule comes out byte-identical to the committed one
(kernels, baseline, oracle, greedy parts, demonstrations, random search, Triton references); the policy's
outputs are checked for shape and consistency, since the committed ones come from the full schedule."""

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import torch
import yaml

from tests.stages.test_report import _same_numbers

ROOT = Path(__file__).resolve().parents[1]
IDENTICAL = ["reports/baseline.json", "reports/oracle.json", "reports/greedy_results.json",
             "data/demos/trajectories.jsonl", "reports/random_results.json",
             "data/kernels/gemm_tile/specs.json", "data/kernels/gemm_tile/gemm_tile_4_6_4.ptx",
             "data/search/greedy/gemm_tile_4_6_4.json"]
# The wall-time verdicts' outputs: equal but for the last bit of a bootstrap interval's float, which a numpy
# build or CPU may round differently (the committed one came from another CPU than this session's).
SAME_NUMBERS = ["reports/triton_search.json", "reports/aa.json"]


@pytest.mark.slow
def test_snakemake_runs_every_stage_on_replay(tmp_path, ptxas):
    for name in ("Snakefile", "dvc.yaml"):
        shutil.copy(ROOT / name, tmp_path)
    params = yaml.safe_load((ROOT / "params.yaml").read_text())
    params["bc"]["epochs"], params["grpo"]["epochs"] = 2, 2
    (tmp_path / "params.yaml").write_text(yaml.safe_dump(params))
    for name in ("workflow", "data", "reports", "src"):
        shutil.copytree(ROOT / name, tmp_path / name, ignore=shutil.ignore_patterns("__pycache__"))
    (tmp_path / "models").mkdir()
    proc = subprocess.run([sys.executable, "-m", "snakemake", "--cores", "2", "--forceall", "--quiet"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=3000, check=False)
    assert proc.returncode == 0, proc.stderr[-3000:]
    for out in IDENTICAL:
        assert (tmp_path / out).read_bytes() == (ROOT / out).read_bytes(), (
            f"{out} differs from the committed one")
    for out in SAME_NUMBERS:  # bootstrap intervals of the time verdicts: last-bit floats differ by CPU
        _same_numbers(json.loads((tmp_path / out).read_text()), json.loads((ROOT / out).read_text()), out)

    ckpt = torch.load(tmp_path / "models/checkpoint_best.pt", weights_only=True)
    assert ckpt["metadata"]["stage"] == "grpo" and ckpt["metadata"]["args"]["epochs"] == 2
    training = json.loads((tmp_path / "reports/training_result.json").read_text())
    assert (len(training["kernels"]) == 64
            and {k["split"] for k in training["kernels"]} == {"train", "heldout"})
    assert all(k["valid"] is not None and k["baseline_cycles"] > 0 for k in training["kernels"])
    curves = (tmp_path / "reports/grpo_curves.csv").read_text().splitlines()
    assert len(curves) == 1 + 3  # header, epoch 0 (the BC policy), epochs 1 and 2
    triton = json.loads((tmp_path / "reports/measure_triton_results.json").read_text())
    for tier in triton["tiers"].values():  # a policy trained 2 epochs may predict sets never measured
        assert len(tier["kernels"]) == 33 and tier["summary"]["slower"] == 0
        for row in tier["kernels"]:  # measured, or said why not: nothing in between
            assert ("speedup_time" in row) != (row["verdict"] == "unmeasured")
    metrics = json.loads((tmp_path / "reports/metrics.json").read_text())
    assert metrics["aa"]["decisions"] >= 500 and metrics["aa"]["false_faster"] <= 0.01
    assert set(metrics["triton"]) == {"small", "llm"}
    assert (metrics["oracle_kernels"] == 64 and metrics["greedy_kernels"] == 64
            and metrics["policy_kernels"] == 64)
    assert metrics["oracle_mean_change"] <= metrics["greedy_mean_change"]  # the oracle bounds every search
    for fig in ("search_gemm_tile", "bc_curves", "grpo_curves", "triton_results"):
        assert (tmp_path / "reports/figures" / f"{fig}.png").stat().st_size > 10_000

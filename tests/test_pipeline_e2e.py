"""The whole pipeline, end to end on replay, in a copy of the repository (the README's main job as CI can run
it: no GPU), with a tiny training configuration (params override: 2 BC epochs, 2 GRPO epochs).

Two runs. The full one (marker `e2e`: ~11 min on 2 cores, so the README's test command leaves it out and
.ci/run runs it as a step of its own) runs every stage of `snakemake --forceall`: every output that does
not depend on the training schedule comes out byte-identical to the committed one (kernels, baseline,
oracle, greedy parts, demonstrations, random search, Triton references), and every recorded captured tune
replays as recorded (tune_captured exits 1 otherwise); the policy's outputs are checked for shape and
consistency, since the committed ones come from the full schedule. The smaller one (in every run of the
suite) replays a corpus of 8 of the 64 gemm_tile kernels through the gemm_tile and policy stages: each
kernel's PTX, spec, greedy part, demonstrations and every per-kernel row of the reports come out equal to
the committed ones."""

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
# The smaller corpus: 4 gemm_tile kernels, 2 of them held out (as params.yaml's split holds them out)
SMALL = {"m": [2], "n": [2, 8], "k": [4, 6]}
SMALL_TARGETS = ["data/kernels/gemm_tile", "reports/baseline.json", "reports/oracle.json",
                 "data/demos/trajectories.jsonl", "reports/greedy_results.json",
                 "reports/random_results.json", "models/checkpoint_best.pt", "reports/predictions.json"]


def _repo_copy(tmp_path: Path, small: bool = False) -> Path:
    """The pipeline's files in tmp_path, params.yaml with 2 BC and 2 GRPO epochs (and `small`: SMALL)."""
    for name in ("Snakefile", "dvc.yaml"):
        shutil.copy(ROOT / name, tmp_path)
    params = yaml.safe_load((ROOT / "params.yaml").read_text())
    params["bc"]["epochs"], params["grpo"]["epochs"] = 2, 2
    if small:
        params["kernels"]["gemm_tile"].update(SMALL)
        names = {_name(m, n, k) for m in SMALL["m"] for n in SMALL["n"] for k in SMALL["k"]}
        params["split"]["heldout_kernels"] = [h for h in params["split"]["heldout_kernels"] if h in names]
    (tmp_path / "params.yaml").write_text(yaml.safe_dump(params))
    for name in ("workflow", "data", "reports", "src"):
        shutil.copytree(ROOT / name, tmp_path / name, ignore=shutil.ignore_patterns("__pycache__"))
    (tmp_path / "models").mkdir()
    return tmp_path


def _name(m: int, n: int, k: int) -> str:
    return f"gemm_tile({m},{n},{k})"


def _snakemake(cwd: Path, *targets: str) -> None:
    argv = [sys.executable, "-m", "snakemake", *targets, "--cores", "2", "--forceall", "--quiet"]
    proc = subprocess.run(argv, cwd=cwd, capture_output=True, text=True, timeout=3000, check=False)
    assert proc.returncode == 0, proc.stderr[-3000:]


@pytest.mark.slow
@pytest.mark.e2e
def test_snakemake_runs_every_stage_on_replay(tmp_path, ptxas):
    _snakemake(_repo_copy(tmp_path))
    for out in IDENTICAL:
        assert (tmp_path / out).read_bytes() == (ROOT / out).read_bytes(), (
            f"{out} differs from the committed one")
    for out in SAME_NUMBERS:  # bootstrap intervals of the time verdicts: last-bit floats differ by CPU
        _same_numbers(json.loads((tmp_path / out).read_text()), json.loads((ROOT / out).read_text()), out)
    _check_training(tmp_path, 64)
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


def _check_training(tmp_path: Path, kernels: int) -> None:
    """The policy's outputs, trained 2 epochs: shape and consistency."""
    ckpt = torch.load(tmp_path / "models/checkpoint_best.pt", weights_only=True)
    assert ckpt["metadata"]["stage"] == "grpo" and ckpt["metadata"]["args"]["epochs"] == 2
    training = json.loads((tmp_path / "reports/training_result.json").read_text())
    assert (len(training["kernels"]) == kernels
            and {k["split"] for k in training["kernels"]} == {"train", "heldout"})
    assert all(k["valid"] is not None and k["baseline_cycles"] > 0 for k in training["kernels"])
    curves = (tmp_path / "reports/grpo_curves.csv").read_text().splitlines()
    assert len(curves) == 1 + 3  # header, epoch 0 (the BC policy), epochs 1 and 2


def _rows(path: Path, names: set[str] | None = None) -> list:
    rows = json.loads(path.read_text())
    rows = rows if isinstance(rows, list) else rows["kernels"]
    keep = names is None or (lambda r: r["kernel"] in names or r.get("family", "gemm_tile") != "gemm_tile")
    return [r for r in rows if keep is True or keep(r)]


@pytest.mark.slow
def test_snakemake_replays_a_smaller_gemm_tile_corpus(tmp_path, ptxas):
    _snakemake(_repo_copy(tmp_path, small=True), *SMALL_TARGETS)
    entries = [f"gemm_tile_{m}_{n}_{k}" for m in SMALL["m"] for n in SMALL["n"] for k in SMALL["k"]]
    names = {_name(*map(int, e.split("_")[2:])) for e in entries}
    for entry in entries:  # each kernel's own files: byte-identical
        for out in (f"data/kernels/gemm_tile/{entry}.ptx", f"data/search/greedy/{entry}.json"):
            assert (tmp_path / out).read_bytes() == (ROOT / out).read_bytes(), f"{out} differs"
    assert _rows(tmp_path / "data/kernels/gemm_tile/specs.json") == _rows(
        ROOT / "data/kernels/gemm_tile/specs.json", names)
    demos = (tmp_path / "data/demos/trajectories.jsonl").read_text().splitlines()
    assert demos == [line for line in (ROOT / "data/demos/trajectories.jsonl").read_text().splitlines()
                     if json.loads(line)["kernel"] in names]
    # every per-kernel row of the reports (the 33 Triton kernels' baselines too): the committed one
    for out in ("reports/baseline.json", "reports/oracle.json", "reports/greedy_results.json",
                "reports/random_results.json"):
        got, want = _rows(tmp_path / out), _rows(ROOT / out, names)
        assert len(got) == len(want) and got == want, f"{out}: rows differ from the committed ones"
    for out in ("reports/oracle.json", "reports/greedy_results.json", "reports/random_results.json"):
        assert json.loads((tmp_path / out).read_text())["summary"]["kernels"] == len(entries) == 4
    _check_training(tmp_path, len(entries))
    predictions = json.loads((tmp_path / "reports/predictions.json").read_text())
    assert sorted(p["kernel"] for p in predictions["kernels"]) == sorted(entries)

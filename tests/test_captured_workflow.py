"""workflow/captured/Snakefile (the GPU path of #13) planned on a CPU: per workload the chain capture -> tune
-> e2e, each a GPU job, with the commands a GPU host will run."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_each_workload_plans_capture_tune_and_e2e_as_gpu_jobs(tmp_path):
    (tmp_path / "scripts").mkdir()
    shutil.copy(ROOT / "scripts/workloads.py", tmp_path / "scripts")
    (tmp_path / "models").mkdir()
    shutil.copy(ROOT / "models/checkpoint_best.pt", tmp_path / "models")
    proc = subprocess.run(
        [sys.executable, "-m", "snakemake", "-s", str(ROOT / "workflow/captured/Snakefile"), "-n", "-p",
         "--config", "workloads=[flex,bert]", "budget=300"],
        capture_output=True, text=True, timeout=300, check=False, cwd=tmp_path)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-3000:]
    for rule in ("capture", "tune", "e2e"):
        assert out.count(f"rule {rule}:") == 2, rule
    assert out.count("gpu=1") == 6
    d = "data/kernels/captured/bert"
    assert f"-m chronos.cli capture --out {d} --workload bert -- " in out
    assert f"scripts/workloads.py bert --steps 2 --profile-out {d}/profile.json" in out
    assert f"cp -n models/checkpoint_best.pt {d}/tune-policy.pt && " in out
    assert (f"-m chronos.cli tune {d} --backend gpu --ptxas triton --order-by {d}/profile.json --checkpoint "
            f"{d}/tune-policy.pt --budget 300 --db {d}/tuned.sqlite") in out
    assert f"scripts/e2e.py bert --db {d}/tuned.sqlite --out {d}/e2e.json" in out


def test_the_knob_variants_are_one_gpu_job_over_the_workloads(tmp_path):
    for w in ("flex", "bert"):
        (tmp_path / f"data/kernels/captured/{w}").mkdir(parents=True)
        (tmp_path / f"data/kernels/captured/{w}/specs.json").write_text("[]\n")
    proc = subprocess.run(
        [sys.executable, "-m", "snakemake", "-s", str(ROOT / "workflow/captured/Snakefile"), "-n", "-p",
         "--config", "workloads=[flex,bert]", "--", "knobs"],
        capture_output=True, text=True, timeout=300, check=False, cwd=tmp_path)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-3000:]
    assert out.count("rule knobs:") == 1 and "gpu=1" in out
    assert "scripts/make_knob_variants.py --out . --workloads flex bert" in out


def test_the_block_variants_are_one_gpu_job_after_the_knob_variants(tmp_path):
    for w in ("flex", "bert"):
        (tmp_path / f"data/kernels/captured/{w}").mkdir(parents=True)
        (tmp_path / f"data/kernels/captured/{w}/knobs.json").write_text("{}\n")
    proc = subprocess.run(
        [sys.executable, "-m", "snakemake", "-s", str(ROOT / "workflow/captured/Snakefile"), "-n", "-p",
         "--config", "workloads=[flex,bert]", "--", "blocks"],
        capture_output=True, text=True, timeout=300, check=False, cwd=tmp_path)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-3000:]
    assert out.count("rule blocks:") == 1 and "rule knobs:" not in out and "gpu=1" in out
    assert "scripts/make_block_variants.py --out . --workloads flex bert" in out

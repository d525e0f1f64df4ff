"""scripts/device.sh, the one entry for GPU work, run on this CPU in a copy of the repository: a pipeline
rule runs as a Snakemake target (here on replay), a bad target fails alone and says so, and what comes back
is exactly what the targets wrote."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

from tests.stages.test_report import _same_numbers

ROOT = Path(__file__).resolve().parents[1]
SKIP = shutil.ignore_patterns(".git", ".venv", ".whl*", ".device", "__pycache__", ".snakemake", "*.egg-info",
                              ".pytest_cache", ".ruff_cache", ".hypothesis", ".import_linter_cache")


def _run(cwd: Path, *targets: str, out: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "OUT": str(out), "LIMIT": "300",
           "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    return subprocess.run(["bash", "scripts/device.sh", *targets], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=600, check=False)


def test_a_rule_runs_alone_a_bad_target_fails_alone_and_what_was_written_comes_back(tmp_path):
    repo = tmp_path / "repo"
    shutil.copytree(ROOT, repo, ignore=SKIP)
    usage = _run(repo, out=tmp_path / "none")
    assert usage.returncode == 2 and "bash scripts/device.sh TARGET..." in usage.stdout

    proc = _run(repo, "aa", "no_such_rule", out=tmp_path / "out")
    assert proc.returncode == 1, proc.stdout[-2000:] + proc.stderr[-2000:]
    summary = (tmp_path / "out/logs/summary.txt").read_text().splitlines()
    assert summary[0].startswith("aa: exit 0") and summary[1].startswith("no_such_rule: exit 1")
    assert "No rule to produce no_such_rule" in (tmp_path / "out/logs/no_such_rule.log").read_text()
    written = (tmp_path / "out/logs/written.txt").read_text().split()
    assert written == ["reports/aa.json"]  # the replay wrote its report; the stores are only read
    with tarfile.open(tmp_path / "out/result.tgz") as tar:
        names = set(tar.getnames())
    assert {"reports/aa.json", "logs/aa.log", "logs/summary.txt", "logs/provenance.txt"} <= names
    got, want = (json.loads((d / "reports/aa.json").read_text()) for d in (repo, ROOT))
    _same_numbers(got, want, "reports/aa.json")  # replayed: the committed verdicts, to the last bit

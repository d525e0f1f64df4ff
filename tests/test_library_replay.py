"""The committed acceptance corpus of a stranger's library (data/library/attorch, captured and tuned on the
H200) replays as recorded through `chronos tune` from an empty directory with every default: the packaged
policy and params, the store beside the corpus."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from chronos.stages.tune_captured import differences

LIB = Path(__file__).resolve().parents[1] / "data" / "library" / "attorch"


def test_the_attorch_corpus_replays_as_recorded_from_an_empty_directory(tmp_path):
    work = tmp_path / "empty"
    work.mkdir()
    res = subprocess.run([sys.executable, "-m", "chronos.cli", "tune", str(LIB), "--backend", "replay",
                          "--only", "dropout|rms_norm_forward", "--parts", str(tmp_path / "parts")],
                         cwd=work, capture_output=True, text=True, timeout=600, check=False)
    assert res.returncode == 0, res.stderr
    replayed = sorted((tmp_path / "parts").glob("*.json"))
    assert len(replayed) == 5 and not list(work.iterdir())  # nothing written where it ran
    for part in replayed:
        recorded = json.loads((LIB / "tune-parts" / part.name).read_text())
        assert not differences(recorded, json.loads(part.read_text())), part.name
    verdicts = [json.loads(p.read_text()).get("confirm", {}).get("verdict") for p in replayed]
    faster = [v for v in verdicts if v == "faster"]
    assert len(faster) == 4  # the dropout kernels, bit-exact and faster on the H200


def test_the_acceptance_record_matches_its_capture():
    cap = json.loads((LIB / "capture.json").read_text())
    acc = json.loads((LIB / "acceptance.json").read_text())
    assert cap["kernels"] == 23 and cap["dropped_launches"] == sum(d["launches"] for d in cap["dropped"])
    assert all(d["reason"] for d in cap["dropped"])  # every dropped launch says why
    assert acc["collected"] == acc["collected_tuned"] and acc["passed_stock"] + len(acc["failed_stock"]) == \
        acc["collected"]

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
                          "--only", "dropout|linear_forward_kernel_7684f952",
                          "--parts", str(tmp_path / "parts")],
                         cwd=work, capture_output=True, text=True, timeout=600, check=False)
    assert res.returncode == 0, res.stderr
    replayed = sorted((tmp_path / "parts").glob("*.json"))
    assert len(replayed) == 9 and not list(work.iterdir())  # nothing written where it ran
    for part in replayed:
        recorded = json.loads((LIB / "tune-parts" / part.name).read_text())
        assert not differences(recorded, json.loads(part.read_text())), part.name
    verdicts = [json.loads(p.read_text()).get("confirm", {}).get("verdict") for p in replayed]
    faster = [v for v in verdicts if v == "faster"]
    # the dropout kernels and attorch's linear layer (its aliasing launches: alias arguments), bit-exact and
    # faster on the H200
    assert len(faster) == 9


def test_the_acceptance_record_matches_its_capture():
    cap = json.loads((LIB / "capture.json").read_text())
    acc = json.loads((LIB / "acceptance.json").read_text())
    assert cap["kernels"] == 36 and cap["dropped_launches"] == 0 == len(cap["dropped"])
    assert acc["collected"] == acc["collected_tuned"] and acc["passed_stock"] + len(acc["failed_stock"]) == \
        acc["collected"]
    # a test that failed only in the deployed run ran no tuned kernel: the tuned binaries were dropout's, the
    # failures NLL/CrossEntropy reductions that flip between stock runs too
    assert acc["stock_repeated"] and acc["passed_tuned"] == acc["passed_stock"]
    assert not any(n.startswith(("nll", "cross_entropy")) for n in acc["deployed"]["tuned_names"])
    assert all("nll_loss" in t or "cross_entropy" in t for t in acc["failed_tuned_only"])
    assert all("nll_loss" in t for t in acc["stock_unrepeatable"]) and acc["stock_unrepeatable"]

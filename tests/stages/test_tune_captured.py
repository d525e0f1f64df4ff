"""Stage `tune_captured`: the captured workloads' tune replayed from the store must equal the H200's record;
a record the store cannot reproduce is reported, field by field, and fails the stage."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from chronos.stages import tune_captured

ROOT = Path(__file__).resolve().parents[2]
CORPUS = ROOT / "data/kernels/captured"


def test_differences_allow_only_the_printed_digits_of_logp_to_move():
    rec = {"returned": "st_cache_wb", "beam": [{"logp": -9.9909, "ratio": 0.96}]}
    assert tune_captured.differences({"returned": "st_cache_wb", "beam": [{"logp": -9.9908, "ratio": 0.96}]},
                                     rec) == []
    assert tune_captured.differences({"returned": "st_cache_wb", "beam": [{"logp": -9.9, "ratio": 0.96}]},
                                     rec) == [".beam[0].logp"]
    assert tune_captured.differences({"returned": "baseline", "beam": [{"logp": -9.9909, "ratio": 0.97}]},
                                     rec) == [".beam[0].ratio", ".returned"]
    assert tune_captured.differences({"beam": []}, rec) == [".beam", ".returned"]


def test_differences_let_only_the_last_bits_of_other_floats_move():
    rec = {"beam": [{"ratio": 0.96, "ci": [0.9977492595060106, 1.0013890278442166]}]}
    last_bit = {"beam": [{"ratio": 0.96, "ci": [0.9977492595060106, 1.0013890278442168]}]}
    assert tune_captured.differences(last_bit, rec) == []  # another numpy release, same inputs
    moved = {"beam": [{"ratio": 0.96, "ci": [0.9977492595060106, 1.0013891278442166]}]}
    assert tune_captured.differences(moved, rec) == [".beam[0].ci[1]"]


def _flex_only(tmp_path: Path) -> Path:
    d = tmp_path / "captured"
    shutil.copytree(CORPUS / "flex", d / "flex")
    return d


@pytest.mark.slow
def test_the_committed_flex_tune_replays_as_recorded(tmp_path):
    out = tmp_path / "tune.json"
    argv = ["--captured", str(_flex_only(tmp_path)), "--backend", "replay", "--out", str(out),
            "--store", str(ROOT / "data/store/measurements.sqlite"),
            "--params", str(ROOT / "params.yaml")]
    assert tune_captured.main(argv) == 0
    flex = json.loads(out.read_text())["workloads"]["flex"]
    assert flex["agrees_with_record"] == flex["recorded"] == 8 and not flex["disagreements"]
    # what deployment reads
    assert flex["db"] == {"kernels": 8, "faster": 0, "not_confirmed": 1, "entries": 0, "no_identity": 0}
    committed = json.loads((ROOT / "reports/tune_captured.json").read_text())["workloads"]["flex"]
    assert flex == committed


@pytest.mark.slow
def test_a_record_the_store_cannot_reproduce_fails_the_stage(tmp_path):
    d = _flex_only(tmp_path)
    part = next(p for p in sorted((d / "flex/tune-parts").glob("*.json")) if "zeros" in p.name)
    row = json.loads(part.read_text())
    row["returned"] = "baseline"  # a doctored record: the measurements say st_cache_wb won
    part.write_text(json.dumps(row))
    for other in (d / "flex/tune-parts").glob("*.json"):
        if other != part:
            other.unlink()
    out = tmp_path / "tune.json"
    argv = ["--captured", str(d), "--backend", "replay", "--out", str(out),
            "--store", str(ROOT / "data/store/measurements.sqlite"),
            "--params", str(ROOT / "params.yaml")]
    assert tune_captured.main(argv) == 1
    flex = json.loads(out.read_text())["workloads"]["flex"]
    assert flex["disagreements"] == {row["kernel"]: [".returned"]}


def test_a_reconfirmation_on_captured_inputs_is_compared_but_its_record_only_facts_are_not():
    rec = {"returned": "cache_cs", "confirm": {"ratio": 0.93}, "confirm_history": [{"ratio": 0.95}],
           "confirm_inputs": {"captured": ["p0"], "draws": 2}}
    assert tune_captured.differences({"returned": "cache_cs", "confirm": {"ratio": 0.93}}, rec) == []
    tuned_on_captured = {"returned": "cache_cs", "captured_inputs": ["p0", "p1"]}  # the clone has no inputs
    assert tune_captured.differences({"returned": "cache_cs", "captured_inputs": []}, tuned_on_captured) == []
    assert tune_captured.differences({"returned": "cache_cs", "confirm": {"ratio": 0.95}}, rec) == [
        ".confirm.ratio"]
    # only at the top of a row: the same names deeper down are compared as any field
    assert tune_captured.differences({"x": {}}, {"x": {"confirm_inputs": 1}}) == [".x.confirm_inputs"]

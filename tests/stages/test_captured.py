"""Stage `captured` on the committed real-workload corpus: the summary replays the H200 records, the tune and
end-to-end summaries count what the parts say, and the metrics nest as `dvc exp show` reads them."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from chronos.report import captured as captured_lib
from chronos.report.tables import captured_metrics
from chronos.stages import captured

ROOT = Path(__file__).resolve().parents[2]
CORPUS = ROOT / "data/kernels/captured"


def test_the_committed_corpus_summary_is_what_the_stage_replays(tmp_path):
    out = tmp_path / "captured.json"
    assert captured.main(["--captured", str(CORPUS), "--tune", str(ROOT / "reports/tune_captured.json"),
                          "--library", str(ROOT / "data/library"), "--out", str(out)]) == 0
    report = json.loads(out.read_text())
    assert report == json.loads((ROOT / "reports/captured.json").read_text())
    attorch = report["libraries"]["attorch"]  # a stranger's library: its capture, tune and own tests
    assert (attorch["kernels"], attorch["dropped"], attorch["tune"]["faster"]) == (36, 0, 9)
    assert attorch["tests"]["passed_stock"] <= attorch["tests"]["collected"]
    assert captured_metrics(report)["library"]["attorch"]["tests_collected"] == attorch["tests"]["collected"]
    assert report["total"]["workloads"] >= 3 and report["total"]["distinct_ptx"] >= 150
    flex = report["workloads"]["flex"]
    assert flex["triton_share"]["train"] > 0.5  # the workload where Triton carries most of the time


def test_amdahl_bound():
    assert captured_lib.amdahl_bound(1.0, 2.0) == pytest.approx(2.0)
    assert captured_lib.amdahl_bound(0.0, 2.0) == pytest.approx(1.0)
    assert captured_lib.amdahl_bound(0.5, 2.0) == pytest.approx(1 / 0.75)


def _part(kernel, returned="baseline", speedup=1.0, valid=True, error=None):
    row = {"kernel": kernel, "returned": returned, "speedup_time": speedup,
           "baseline": {"valid": valid, "reason": "" if valid else "ptxas_error"}}
    if error:
        row = {"kernel": kernel, "verdict": "unmeasured", "error": error}
    return row


def test_tune_summary_counts_verdicts_and_deploys_the_baseline_where_nothing_won():
    skipped = {"kernel": "e", "verdict": "skipped", "reason": "float atomics"}
    s = captured_lib.tune_summary([_part("a", "maxnreg_64", 1.21), _part("b"), _part("c", valid=False),
                               _part("d", error="worker died"), skipped])
    assert (s["kernels"], s["faster"], s["unchanged"], s["unmeasured"], s["slower"], s["skipped"]) == \
        (5, 1, 1, 2, 0, 1)
    assert s["time_geomean"] == pytest.approx((1.21 * 1.0) ** 0.5)
    assert s["unmeasured_reasons"] == {"ptxas_error": 1, "worker died": 1, "float atomics": 1}


def test_tune_and_e2e_records_become_metrics(tmp_path):
    d = tmp_path / "captured"
    shutil.copytree(CORPUS / "flex", d / "flex")
    shutil.rmtree(d / "flex/tune-parts", ignore_errors=True)
    (d / "flex/e2e-one-process.json").unlink()
    (d / "flex/tune-parts").mkdir()
    (d / "flex/tune-parts/a.json").write_text(json.dumps(_part("a", "cache_cg", 1.1)))
    (d / "flex/e2e.json").write_text(json.dumps({
        "speedup": {"median": 1.02, "ci95": [1.01, 1.03]}, "aa_control": {"median": 1.0},
        "outputs_equal": True, "stock_deterministic": True, "hook": {"swapped": 3}}))
    out = tmp_path / "captured.json"
    assert captured.main(["--captured", str(d), "--out", str(out)]) == 0
    m = captured_metrics(json.loads(out.read_text()))
    # 0 dropped: its FlexAttention launch with an empty block-mask tensor is a null argument since 2026-12-03
    assert m["capture"]["flex"] == {"kernels": 8, "distinct_ptx": 8, "dropped": 0}
    assert m["tune"]["flex"]["faster"] == 1 and m["tune"]["flex"]["time_geomean"] == pytest.approx(1.1)
    assert m["e2e"]["flex"] == {"speedup": 1.02, "outputs_equal": True, "swapped": 3, "db_entries": None,
                                "method": "workers"}
    # steps alternating in one process replace the workers' numbers, with their intervals and the A/A
    shutil.copy(CORPUS / "flex/e2e-one-process.json", d / "flex/e2e-one-process.json")
    assert captured.main(["--captured", str(d), "--out", str(out)]) == 0
    one = json.loads((CORPUS / "flex/e2e-one-process.json").read_text())
    got = captured_metrics(json.loads(out.read_text()))["e2e"]["flex"]
    assert got["method"] == "one_process" and got["speedup"] == one["speedup"]["median"]
    assert got["ci95"] == one["speedup"]["ci95"] and got["aa_ci95"] == one["aa"]["ci95"]
    assert got["outputs_equal"] is one["outputs"]["tuned_bitwise"]


def test_every_committed_captured_spec_gives_each_ptx_parameter_an_argument():
    from chronos.kernels.spec import load_module, load_specs

    specs = [(sj, s) for sj in sorted(CORPUS.glob("*/specs.json")) for s in load_specs(sj)]
    assert len(specs) == 270  # llama 91, gpt2 85, bert 47, flex 8; flex_decode_long 28, attorch_lm 11
    for sj, s in specs:
        load_module(sj, s)  # SpecError when an argument is missing (Triton's trailing scratch pointers)

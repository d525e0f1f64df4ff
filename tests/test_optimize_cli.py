"""`chronos optimize FILE.ptx --spec SPEC.json` on replay: the same decision as the evaluate stage's for that
kernel, the chosen PTX written, bad input as one line naming it."""

from __future__ import annotations

import json
from pathlib import Path

from chronos.cli import main

ROOT = Path(__file__).resolve().parents[1]
TRITON = ROOT / "data/kernels/triton"


def _no_logp(candidate: dict) -> dict:
    return {k: v for k, v in candidate.items() if k != "logp"}


def test_optimize_a_ptx_file_on_replay_reproduces_the_evaluation(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(ROOT)
    out, report = tmp_path / "k.ptx", tmp_path / "k.json"
    rc = main(["optimize", str(TRITON / "rowmax_f32_r64_c8192.ptx"), "--spec", str(TRITON / "specs.json"),
               "--backend", "replay", "--out", str(out), "--report", str(report)])
    assert rc == 0, capsys.readouterr().err
    row = json.loads(report.read_text())
    evaluated = next(r for r in json.loads((ROOT / "reports/measure_triton_results.json").read_text())
                     ["tiers"]["triton"]["kernels"] if r["kernel"] == "rowmax_f32_r64_c8192")
    for key in ("returned", "speedup_time", "speedup_ci", "greedy", "baseline"):
        assert row[key] == evaluated[key]
    # a beam set's log-probability is CPU arithmetic: its 4th decimal differs between processors (MKL and
    # ATen pick code paths per CPU); the sets, their order and every measured number must not
    assert [_no_logp(c) for c in row["beam"]] == [_no_logp(c) for c in evaluated["beam"]]
    pairs = zip(row["beam"], evaluated["beam"], strict=True)
    assert all(abs(a["logp"] - b["logp"]) <= 2e-3 for a, b in pairs)
    assert row["returned"] != "baseline" and ".maxnreg" in out.read_text()


def test_a_spec_that_does_not_match_is_one_line_naming_it(tmp_path, capsys):
    bad = tmp_path / "spec.json"
    bad.write_text(json.dumps(json.loads((TRITON / "specs.json").read_text())[:2]))
    ptx = str(TRITON / "rowmax_f32_r64_c8192.ptx")
    rc = main(["optimize", ptx, "--spec", str(bad), "--backend", "replay"])
    err = capsys.readouterr().err
    assert rc == 2 and "0 specs match" in err and err.count("\n") == 1

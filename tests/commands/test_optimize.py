"""`chronos optimize FILE.ptx --spec SPEC.json` on replay: the same decision as the evaluate stage's for that
kernel, the chosen PTX written (by default in the working directory), bad input as one line naming it, a
kernel the store cannot answer as one line and exit 1."""

from __future__ import annotations

import json
from pathlib import Path

from chronos.cli import main

ROOT = Path(__file__).resolve().parents[2]
TRITON = ROOT / "data/kernels/triton"
ROWMAX = "rowmax_f32_r64_c8192"
REPLAY = ["--backend", "replay", "--store", str(ROOT / "data/store/measurements.sqlite"),
          "--checkpoint", str(ROOT / "models/checkpoint_best.pt"), "--params", str(ROOT / "params.yaml")]
"""The replay run of the repository's store, from any working directory."""


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


def test_several_matching_specs_are_named_with_the_kernel_option(capsys):
    """The Triton tier holds one kernel at several shapes: the entry alone cannot pick the spec."""
    specs = json.loads((TRITON / "specs.json").read_text())
    gelu = [s["kernel"] for s in specs if s["entry"] == "gelu_kernel"]
    assert len(gelu) > 1
    rc = main(["optimize", str(TRITON / f"{gelu[0]}.ptx"), "--spec", str(TRITON / "specs.json"), *REPLAY])
    err = capsys.readouterr().err
    assert rc == 2 and err.count("\n") == 1 and "pass --kernel NAME" in err, err
    assert all(name in err for name in gelu), err


def _inputs(folder: Path, rename: str | None = None) -> tuple[Path, Path]:
    """rowmax's PTX and its spec copied into `folder` (a pipeline input folder), its entry renamed to
    `rename` if given: PTX that the store has never measured."""
    folder.mkdir()
    spec = next(s for s in json.loads((TRITON / "specs.json").read_text()) if s["kernel"] == ROWMAX)
    ptx, text = TRITON / f"{ROWMAX}.ptx", json.dumps([spec])
    ptx_text = ptx.read_text()
    if rename:
        ptx_text, text = ptx_text.replace("row_max_kernel", rename), text.replace("row_max_kernel", rename)
        text = text.replace(ROWMAX, rename)
    (folder / ptx.name).write_text(ptx_text)
    (folder / "specs.json").write_text(text)
    return folder / ptx.name, folder / "specs.json"


def test_a_replay_miss_is_one_line_exit_1_naming_the_kernel_and_how_to_measure_it(tmp_path, monkeypatch,
                                                                                  capsys):
    ptx, specs = _inputs(tmp_path / "inputs", rename="row_max_renamed")
    monkeypatch.chdir(tmp_path)
    rc = main(["optimize", str(ptx), "--spec", str(specs), *REPLAY])
    out, err = capsys.readouterr()
    assert rc == 1 and out == "" and err.count("\n") == 1, (rc, out, err)
    assert err.startswith("chronos: error: row_max_renamed (policy's set ") and "not measured" in err, err
    assert f"--kernel row_max_renamed --backend gpu --store {REPLAY[3]}" in err, err
    assert sorted(p.name for p in tmp_path.rglob("*")) == ["inputs", ptx.name, "specs.json"]  # none written


def test_the_outputs_land_in_the_working_directory_not_beside_the_input(tmp_path, monkeypatch, capsys):
    """FILE may sit in a pipeline's input folder (data/kernels/...): a file written there reruns its jobs."""
    _inputs(tmp_path / "inputs")
    (tmp_path / "work").mkdir()
    monkeypatch.chdir(tmp_path / "work")
    rc = main(["optimize", f"../inputs/{ROWMAX}.ptx", "--spec", "../inputs/specs.json", *REPLAY])
    out, err = capsys.readouterr()
    assert rc == 0, err
    assert sorted(p.name for p in (tmp_path / "inputs").iterdir()) == [f"{ROWMAX}.ptx", "specs.json"]
    ptx, report = tmp_path / "work" / f"{ROWMAX}.chronos.ptx", tmp_path / "work" / f"{ROWMAX}.chronos.json"
    assert ".maxnreg" in ptx.read_text() and json.loads(report.read_text())["kernel"] == ROWMAX
    assert f"PTX {ptx.resolve()}, report {report.resolve()}" in out, out  # absolute, wherever it ran


def test_inputs_it_cannot_take_are_refused_before_any_work(tmp_path, capsys):
    """A device, an oversized file, and outputs that cannot be written: one line, exit 2, nothing measured
    (the outputs used to fail with a traceback after the work was done)."""
    big = tmp_path / "big.ptx"
    big.write_text("// padding\n" * 300_000)  # 3.3 MB: over chronos optimize's limit
    ptx, spec = str(TRITON / f"{ROWMAX}.ptx"), ["--spec", str(TRITON / "specs.json"), *REPLAY]
    for argv, says in [(["/dev/zero", *spec], "is not a regular file"),
                       ([str(big), *spec], "chronos optimize takes PTX up to"),
                       ([ptx, *spec, "--out", str(tmp_path / "no" / "x.ptx")], "its folder does not exist"),
                       ([ptx, *spec, "--report", str(tmp_path)], "is a folder")]:
        assert main(["optimize", *argv]) == 2
        err = capsys.readouterr().err
        assert says in err and err.count("\n") == 1, err


def test_from_another_directory_the_shipped_policy_is_used(tmp_path, monkeypatch, capsys):
    """No models/ here: the policy defaults to the copy shipped with chronos (as `chronos tune` does)."""
    monkeypatch.chdir(tmp_path)
    rc = main(["optimize", str(TRITON / "rowmax_f32_r64_c8192.ptx"), "--spec", str(TRITON / "specs.json"),
               "--backend", "replay", "--store", str(ROOT / "data/store/measurements.sqlite"),
               "--params", str(ROOT / "params.yaml")])
    assert rc == 0, capsys.readouterr().err
    row = json.loads((tmp_path / "rowmax_f32_r64_c8192.chronos.json").read_text())
    assert row["returned"] != "baseline" and (tmp_path / "rowmax_f32_r64_c8192.chronos.ptx").is_file()

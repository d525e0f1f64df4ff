"""Bad input through the user path, counted: every case of the #26 audit (and a few more) run as a user runs
it, a subprocess of the CLI, and judged by what it printed and returned. CPU only, a few minutes:

    python benchmarks/bench_reliability.py [--out reports/reliability.json]

A case is `ok` when the command exits non-zero with a message that says what is wrong and no traceback;
`traceback` when stderr holds a Python traceback; `silent` when it exits 0, or fails without a word. The
summary (`inputs_tried`, `tracebacks`, `silent`) is what stage `report` publishes as `reliability.*`.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
ATTORCH = ROOT / "data/library/attorch"
GEMM = ROOT / "data/kernels/gemm_tile"
PY = sys.executable


def _corpus(work: Path, name: str, edit) -> Path:
    """A copy of the attorch corpus (specs, PTX, identities, parts), changed by `edit`."""
    d = work / name
    shutil.copytree(ATTORCH, d, ignore=shutil.ignore_patterns("*.sqlite*", "tune-summary.json"))
    edit(d)
    return d


def _spec_ptx(d: Path, kernel_prefix: str, value) -> None:
    specs = json.loads((d / "specs.json").read_text())
    for s in specs:
        if s["kernel"].startswith(kernel_prefix):
            s["ptx"] = value(d, s["ptx"])
    (d / "specs.json").write_text(json.dumps(specs))


def _tuned_db(work: Path, column: str, value) -> Path:
    """A tuned DB of attorch's entries (written from its parts) with one column of its newest row replaced by
    what a hand edit could leave there."""
    db = work / f"db_{column}.sqlite"
    subprocess.run([PY, "-m", "chronos.cli", "tune", str(ATTORCH), "--merge-only", "--db", str(db),
                    "--parts", str(ATTORCH / "tune-parts")], capture_output=True, check=True)
    with sqlite3.connect(db) as raw:  # a hand edit need not respect the append-only triggers
        for (trigger,) in raw.execute("SELECT name FROM sqlite_master WHERE type = 'trigger'").fetchall():
            raw.execute(f"DROP TRIGGER {trigger}")
        raw.execute(f"UPDATE tuned SET {column} = ? WHERE id = (SELECT max(id) FROM tuned)", (value,))
    raw.close()
    return db


def _params(work: Path, name: str, text: str) -> Path:
    path = work / f"params_{name}.yaml"
    path.write_text(text)
    return path


def _legacy_checkpoint(work: Path) -> Path:
    import torch

    raw = torch.load(ROOT / "models/checkpoint_best.pt", weights_only=True)
    path = work / "legacy.pt"
    torch.save({"policy": raw["policy"], "hidden": raw["hidden"]}, path)  # no format, no hash
    return path


def _edited_copy(src: Path, dest: Path, trigger: str, rows_sql: str, update_sql: str, edit) -> Path:
    """A copy of a store with `edit(value)` applied to the (id, value) rows `rows_sql` selects (None: left
    as it is): what a flipped bit on disk can leave, past the append-only trigger."""
    shutil.copyfile(src, dest)
    db = sqlite3.connect(dest)
    db.execute(f"DROP TRIGGER IF EXISTS {trigger}")
    with db:
        for rid, value in db.execute(rows_sql).fetchall():
            if (new := edit(value)) is not None:
                db.execute(update_sql, (new, rid))
    db.close()
    return dest


def _flip_first_time(body: str) -> str | None:
    at = body.find('"event_ms"')
    digit = next((i for i in range(at, len(body)) if body[i] in "123456789"), None) if at >= 0 else None
    return None if digit is None else body[:digit] + chr(ord(body[digit]) ^ 1) + body[digit + 1:]


def _flipped_store(work: Path) -> Path:
    """A copy of attorch's measurement store with one bit flipped in a stored time of every comparison (a
    valid number still)."""
    return _edited_copy(ATTORCH / "measurements.sqlite", work / "flipped.sqlite", "no_update_cmp",
                        "SELECT id, body FROM comparisons", "UPDATE comparisons SET body = ? WHERE id = ?",
                        _flip_first_time)


def _flipped_measurements(work: Path) -> Path:
    """A copy of the gemm_tile store with one bit flipped in the cycle count of every gemm_tile(2,2,2) row."""
    return _edited_copy(ROOT / "data/store/measurements.sqlite", work / "flipped_gemm.sqlite", "no_update",
                        "SELECT id, cycles_median FROM measurements WHERE kernel = 'gemm_tile(2,2,2)' AND "
                        "cycles_median IS NOT NULL", "UPDATE measurements SET cycles_median = ? WHERE id = ?",
                        lambda cycles: float(int(cycles) ^ 4))


def _schema1_store(work: Path) -> Path:
    """A copy of attorch's store that says schema 1 (rows without checksums)."""
    path = work / "schema1.sqlite"
    shutil.copyfile(ATTORCH / "measurements.sqlite", path)
    with sqlite3.connect(path) as db:
        db.execute("PRAGMA user_version = 1")
    return path


def cases(work: Path) -> list[tuple[str, list[str]]]:
    """(name, argv) of every bad input tried."""
    tune = [PY, "-m", "chronos.cli", "tune"]
    replay = ["--backend", "replay", "--store", str(ATTORCH / "measurements.sqlite")]
    capture = [PY, "-m", "chronos.cli", "capture"]
    optimize = [PY, "-m", "chronos.cli", "optimize"]
    spec = ["--spec", str(GEMM / "specs.json"), "--backend", "replay", "--store",
            str(ROOT / "data/store/measurements.sqlite")]
    gemm = str(GEMM / "gemm_tile_2_2_2.ptx")
    (work / "afile").write_text("not json")
    (work / "big.ptx").write_text("// padding\n" * 300_000)
    for name, files in {"rec_obj": {"launches/1.json": "{}"}, "rec_list": {"launches/1.json": "[]"},
                        "counts": {"launches/x": "", "counts/1.json": "[1]"},
                        "specs": {"specs.json": '[{"kernel": 1}]'}}.items():
        for rel, text in files.items():
            (work / name / rel).parent.mkdir(parents=True, exist_ok=True)
            (work / name / rel).write_text(text)
    loop = work / "loop.sqlite"
    loop.symlink_to(loop)
    fresh = lambda n: _corpus(work, n, lambda d: shutil.rmtree(d / "tune-parts"))
    only = ["--only", "dropout_forward"]
    return [
        ("tune: PTX file missing", [*tune, str(_corpus(work, "c1", lambda d: (
            shutil.rmtree(d / "tune-parts"), *(p.unlink() for p in (d / "ptx").glob("dropout_forward*"))))),
            *replay, *only]),
        ("tune: PTX path is a folder", [*tune, str(_corpus(work, "c2", lambda d: (
            shutil.rmtree(d / "tune-parts"), _spec_ptx(d, "dropout_forward", lambda d, p: "ptx")))),
            *replay, *only]),
        ("tune: PTX is binary", [*tune, str(_corpus(work, "c3", lambda d: (
            shutil.rmtree(d / "tune-parts"), (d / "bin.ptx").write_bytes(b"\xff\x00\xfe" * 100),
            _spec_ptx(d, "dropout_forward", lambda d, p: "bin.ptx")))), *replay, *only]),
        ("tune: --only not a regex", [*tune, str(fresh("c4")), *replay, "--only", "("]),
        ("tune: --order-by missing", [*tune, str(fresh("c5")), *replay, "--order-by",
                                      str(work / "none.json")]),
        ("tune: --order-by not JSON", [*tune, str(fresh("c6")), *replay, "--order-by", str(work / "afile")]),
        ("tune: --fixed unknown action", [*tune, str(fresh("c7")), *replay, "--fixed", "bogus"]),
        ("tune: --parts is a file", [*tune, str(fresh("c8")), *replay, "--parts", str(work / "afile")]),
        ("tune: folder without specs", [*tune, str(work / "rec_obj"), *replay]),
        ("tune: bad part when merging", [*tune, str(_corpus(work, "c9", lambda d: next(
            (d / "tune-parts").glob("dropout_forward*.json")).write_text("{"))), "--merge-only", "--db",
            str(work / "m1.sqlite")]),
        ("tune: bad triton.json when merging", [*tune, str(_corpus(work, "c10", lambda d: (
            d / "triton.json").write_text("[1]"))), "--merge-only", "--db", str(work / "m2.sqlite")]),
        ("tune: a kernel fails", [*tune, str(_corpus(work, "c11", lambda d: (
            shutil.rmtree(d / "tune-parts"), *(p.unlink() for p in (d / "ptx").glob("dropout_forward*"))))),
            *replay, *only]),
        ("capture: --out under a file", [*capture, "--out", str(work / "afile" / "sub"), "--", "true"]),
        ("capture: --out in /proc", [*capture, "--out", "/proc/chronos-capture", "--", "true"]),
        ("capture: launch record {}", [*capture, "--out", str(work / "rec_obj"), "--assemble-only"]),
        ("capture: launch record []", [*capture, "--out", str(work / "rec_list"), "--assemble-only"]),
        ("capture: bad counts", [*capture, "--out", str(work / "counts"), "--assemble-only"]),
        ("capture: --compact-only on bad specs", [*capture, "--out", str(work / "specs"), "--compact-only"]),
        ("capture: --assemble-only on a missing folder", [*capture, "--out", str(work / "nope"),
                                                          "--assemble-only"]),
        ("capture: --compact-only on a missing folder", [*capture, "--out", str(work / "nope"),
                                                         "--compact-only"]),
        ("optimize: /dev/zero", [*optimize, "/dev/zero", *spec]),
        ("optimize: PTX over the limit", [*optimize, str(work / "big.ptx"), *spec]),
        ("optimize: --out in a missing folder", [*optimize, gemm, *spec, "--out",
                                                 str(work / "no" / "x.ptx")]),
        ("optimize: --report is a folder", [*optimize, gemm, *spec, "--report", str(work)]),
        ("tuned show: PTX stored as bytes", [PY, "-m", "chronos.cli", "tuned", "show",
                                              str(_tuned_db(work, "ptx", b"\x00bytes"))]),
        ("tuned show: ratio stored as text", [PY, "-m", "chronos.cli", "tuned", "show",
                                               str(_tuned_db(work, "ratio", "fast"))]),
        ("tuned show: DB is a folder", [PY, "-m", "chronos.cli", "tuned", "show", str(work)]),
        ("tuned show: DB is /dev/null", [PY, "-m", "chronos.cli", "tuned", "show", "/dev/null"]),
        ("tuned show: DB is a symlink loop", [PY, "-m", "chronos.cli", "tuned", "show", str(loop)]),
        *((f"params: {name}", [PY, "-m", "chronos.stages.kernels", "--params", str(_params(work, name, text)),
                               "--out", str(work / f"k_{name}")])
          for name, text in [("gemm_tile.m huge", "kernels:\n  gemm_tile:\n    m: [1000000000]\n"),
                             ("target sm_9000", "kernels:\n  gemm_tile:\n    target: sm_9000\n"),
                             ("ptx_version banana", "kernels:\n  gemm_tile:\n    ptx_version: banana\n"),
                             ("misspelt held-out kernel",
                              "split:\n  heldout_kernels: ['gemm-tile(2,2,2)']\n"),
                             ("empty file", ""), ("null block", "bc:\n")]),
        ("checkpoint without a hash", [PY, "-m", "chronos.optimize.inference", "--checkpoint",
                                       str(_legacy_checkpoint(work))]),
        ("store: a bit flipped in a stored time", [*tune, str(fresh("c12")), "--backend", "replay", "--store",
                                                   str(_flipped_store(work)), *only]),
        ("store: a bit flipped in a measured cycle count", [
            *optimize, gemm, "--spec", str(GEMM / "specs.json"), "--backend", "replay", "--store",
            str(_flipped_measurements(work)), "--checkpoint", str(ROOT / "models/checkpoint_best.pt"),
            "--params", str(ROOT / "params.yaml")]),
        ("store: schema 1 (rows without checksums)", [*tune, str(fresh("c13")), "--backend", "replay",
                                                      "--store", str(_schema1_store(work)), *only]),
    ]


def judge(rc: int, stderr: str) -> str:
    if "Traceback (most recent call last)" in stderr:
        return "traceback"
    if rc == 0 or not stderr.strip():
        return "silent"
    return "ok"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=ROOT / "reports/reliability.json")
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="chronos-reliability-"))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), os.environ.get("PYTHONPATH", "")])}
    rows = []
    t0 = time.perf_counter()
    for name, argv in cases(work):
        res = subprocess.run(argv, capture_output=True, text=True, cwd=work, env=env, check=False,
                             timeout=600)
        verdict = judge(res.returncode, res.stderr)
        last = (res.stderr.strip().splitlines() or [""])[-1][:240]
        rows.append({"case": name, "exit": res.returncode, "verdict": verdict, "said": last})
        print(f"{verdict:9s} {res.returncode:3d}  {name}: {last[:120]}", flush=True)
    summary = {"inputs_tried": len(rows), "tracebacks": sum(r["verdict"] == "traceback" for r in rows),
               "silent": sum(r["verdict"] == "silent" for r in rows)}
    args.out.write_text(json.dumps({**summary, "seconds": round(time.perf_counter() - t0, 1),
                                    "command": "python benchmarks/bench_reliability.py", "cases": rows},
                                   indent=1) + "\n")
    print(json.dumps(summary))
    shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Deployment safety on a GPU (#26), with attorch's tuned DB and its workload's dropout and linear ops:

    python experiments/attorch/deploy_safety.py DB --out safety.json

1. `chronos run --db DB` (cold cache): the tuned kernels swap in; its checksum is the reference.
2. A forged copy of DB, every entry's PTX given another body (`trap;` before its `ret;`, hashes recomputed so
   the file is consistent): deployment re-derives each entry from the stock PTX, finds the recorded variant
   differs, runs stock and says so; the workload's checksum equals step 1's.
3. The genuine DB again, sharing step 1's warm cache, in a process that claims another driver: it must not
   receive step 1's tuned binaries from the cache; every hit becomes a miss naming the driver.
Writes each step's `chronos run` stats and checksum; exits 1 when an expectation fails. `--recheck` judges
a written result again (the expectations were refined after call w: see reports/h200_runs/2026-12-03-v).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from chronos.triton.tuned_db import TunedDB

WORKLOAD = [sys.executable, str(Path(__file__).with_name("workload.py")), "--ops", "dropout,linear",
            "--steps", "1"]


def _checksums(stdout: str) -> dict:
    line = next(x for x in reversed(stdout.splitlines()) if x.startswith('{"workload"'))
    return {op: r.get("checksum") for op, r in json.loads(line)["ops"].items()}


def _run(db: Path, cache: Path, stats: Path, driver: str | None = None) -> dict:
    if driver is None:
        cmd = [sys.executable, "-m", "chronos.cli", "run", "--db", str(db), "--cache-dir", str(cache),
               "--reasons", "--stats", str(stats), "--", *WORKLOAD]
        env = dict(os.environ)
    else:  # enable() told another driver, in the same cache folder `chronos run` uses
        code = ("import json, runpy, sys, atexit; import triton; import chronos.triton as ct; "
                f"ct.enable({str(db)!r}, driver={driver!r}); "
                f"atexit.register(lambda: open({str(stats)!r}, 'w').write(json.dumps(ct.stats()))); "
                f"sys.argv = {WORKLOAD[1:]!r}; runpy.run_path(sys.argv[0], run_name='__main__')")
        cmd = [sys.executable, "-c", code]
        env = {**os.environ, "TRITON_CACHE_DIR": str(cache / "triton")}
    res = subprocess.run(cmd, capture_output=True, text=True, env=env, check=False, timeout=900)
    out = {"exit": res.returncode, "stderr_tail": res.stderr[-1500:]}
    out["checksums"] = _checksums(res.stdout) if res.returncode == 0 else None
    out["stats"] = json.loads(stats.read_text()) if stats.is_file() else None
    return out


def _forge(db: Path, forged: Path) -> int:
    n = 0
    with TunedDB(db, readonly=True) as src, TunedDB(forged) as dst:
        for e in src.entries():
            body = e.ptx.replace("ret;", "trap;\n\tret;", 1)
            dst.put(e.key, e.actions, body, e.ratio, e.ci, e.verification, e.provenance)
            n += 1
    return n


def verdicts(steps: dict) -> dict[str, bool]:
    """The expectations, from the three runs' stats. `reasons` keeps one reason per kernel name (the last):
    a forged entry is judged by its count (every kernel the genuine DB swapped is rejected in the forged
    run) and by the re-derivation reason appearing, with no other kind of rejection."""
    g, f, o = (steps[k]["stats"] or {} for k in ("genuine", "forged", "other_driver_warm_cache"))
    reasons = list(f.get("reasons", {}).values())
    return {
        "genuine swapped": g.get("swapped", 0) > 0,
        "forged: nothing swapped": f.get("swapped", 1) == 0 and f.get("cached", 1) == 0,
        "forged: every genuinely swapped kernel rejected": sorted(f.get("rejected_names", []))
        == sorted(g.get("swapped_names", [])),
        "forged: rejected for not re-deriving, nothing else": any(
            "not what its actions" in r for r in reasons)
        and not any("deploy failed" in r or "ptxas refused" in r for r in reasons),
        "forged: same checksums": steps["forged"]["checksums"] == steps["genuine"]["checksums"],
        "other driver: no tuned binary from the warm cache": o.get("swapped", 1) == 0
        and o.get("cached", 1) == 0,
        "other driver: misses name the driver": o.get("missed", 0) > 0 and any(
            "driver" in r for r in o.get("reasons", {}).values()),
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("db", type=Path, nargs="?")
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--recheck", action="store_true", help="judge the runs recorded in --out again (no GPU)")
    args = ap.parse_args()
    if args.recheck:
        result = json.loads(args.out.read_text())
        result["checks"] = verdicts(result)
        result["ok"] = all(result["checks"].values())
        args.out.write_text(json.dumps(result, indent=1) + "\n")
        print(json.dumps({"checks": result["checks"], "ok": result["ok"]}, indent=1))
        return 0 if result["ok"] else 1
    work = Path(tempfile.mkdtemp(prefix="safety-"))
    cache = work / "cache"
    steps = {"genuine": _run(args.db, cache, work / "s1.json")}
    forged = work / "forged.sqlite"
    steps["forged_entries"] = _forge(args.db, forged)
    steps["forged"] = _run(forged, work / "cache_forged", work / "s2.json")
    steps["other_driver_warm_cache"] = _run(args.db, cache, work / "s3.json", driver="999.9 (CUDA 99.0)")
    checks = verdicts(steps)
    result = {"checks": checks, "ok": all(checks.values()), **steps}
    args.out.write_text(json.dumps(result, indent=1) + "\n")
    print(json.dumps({"checks": checks, "ok": result["ok"]}, indent=1))
    return 0 if result["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())

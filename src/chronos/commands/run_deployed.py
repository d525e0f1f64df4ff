"""`chronos run --db DB -- CMD ...`: run any command with a tuned DB deployed, with no change to its code.

    chronos run --db tuned.sqlite -- python -m pytest tests/
    chronos run --db tuned.sqlite --reasons -- python train.py --steps 100

Every Python process the command starts deploys DB (the bootstrap `chronos capture` uses, here calling
chronos.triton.deploy_env): Triton kernels whose strict key is in DB compile from their tuned PTX, the rest
stock. Triton's and Inductor's caches point at a Chronos folder (`--cache-dir`, default
$XDG_CACHE_HOME/chronos or ~/.cache/chronos), so the user's own caches are never read or written. At exit
one line on stderr sums which binaries ran: tuned (swapped: compiled from tuned PTX here; from cache: compiled
by an earlier run) and stock (missed, rejected, from cache), with the reasons on request (`--reasons`).

A DB that is missing or unreadable never breaks the command: it runs stock, after one warning. The exit
status is the command's own.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from chronos.errors import ChronosError, one_line
from chronos.triton import bootstrap
from chronos.triton.deploy_env import ENV_MODE, ENV_STATS
from chronos.triton.hook import ENV_DB

OUTCOMES = ("swapped", "cached", "missed", "rejected", "cached_stock")


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--db", type=Path, required=True, help="the tuned DB (chronos tune --db writes one)")
    p.add_argument("--mode", choices=("deploy", "strict"), default="deploy",
                   help="strict: a kernel without a usable entry fails its compile (audits); default deploy")
    p.add_argument("--cache-dir", type=Path, metavar="DIR",
                   help="Chronos's Triton and Inductor caches (default $XDG_CACHE_HOME/chronos, else "
                        "~/.cache/chronos)")
    p.add_argument("--reasons", action="store_true", help="list every kernel missed or rejected, and why")
    p.add_argument("--stats", type=Path, metavar="FILE", help="also write the summed stats as JSON")
    p.add_argument("cmd", nargs=argparse.REMAINDER, help="-- the command line to run")


def run(args: argparse.Namespace) -> int:
    cmd = args.cmd[1:] if args.cmd[:1] == ["--"] else args.cmd
    if not cmd:
        raise ChronosError("chronos run: no command (chronos run --db DB -- CMD ...)")
    db = args.db.expanduser().resolve()
    problem = check_db(db)
    env = dict(os.environ)
    if problem:
        print(f"chronos run: warning: {problem}; running the command stock (no tuned kernels)",
              file=sys.stderr)
        return _spawn(cmd, env)
    stats_dir = Path(tempfile.mkdtemp(prefix="chronos-run-"))
    try:
        env = bootstrap.environment(stats_dir / "boot", "chronos.triton.deploy_env:start_from_env", env)
        cache = (args.cache_dir or default_cache_dir()).expanduser().resolve()
        env.update({ENV_DB: str(db), ENV_MODE: args.mode, ENV_STATS: str(stats_dir),
                    "TRITON_CACHE_DIR": str(cache / "triton"),
                    "TORCHINDUCTOR_CACHE_DIR": str(cache / "inductor")})
        rc = _spawn(cmd, env)
        total = summed(stats_dir)
    finally:
        shutil.rmtree(stats_dir, ignore_errors=True)
    print(summary_line(db, total), file=sys.stderr)
    if args.reasons:
        for name, why in sorted(total["reasons"].items()):
            print(f"  {name}: {why}", file=sys.stderr)
    if args.stats:
        args.stats.write_text(json.dumps(total, indent=1, sort_keys=True) + "\n")
    return rc


def default_cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "chronos"


def check_db(db: Path) -> str | None:
    """Why DB cannot be deployed (one line, with its absolute path), or None: read here once, so that a bad
    DB is one warning, not one per process."""
    from chronos.triton.tuned_db import TunedDB

    try:
        with TunedDB(db, readonly=True) as handle:
            handle.entries()
    except ChronosError as e:
        return one_line(e)
    except Exception as e:  # noqa: BLE001 - whatever a corrupt file raises, the command still runs
        return f"tuned DB {db} cannot be read ({type(e).__name__}: {e})"
    return None


def _spawn(cmd: list[str], env: dict[str, str]) -> int:
    try:
        return subprocess.run(cmd, env=env, check=False).returncode
    except OSError as e:
        raise ChronosError(f"chronos run: cannot run {cmd[0]!r}: {e}") from None


def summed(stats_dir: Path) -> dict:
    """The per-process stats files summed: counts, names and reasons per outcome, processes, errors."""
    total: dict = {k: 0 for k in OUTCOMES} | {"processes": 0, "deployed_in": 0, "reasons": {}, "errors": []}
    for k in OUTCOMES:
        total[f"{k}_names"] = []
    for path in sorted(stats_dir.glob("*.json")):
        try:
            data = json.loads(path.read_text())
        except (OSError, ValueError):
            continue
        total["processes"] += 1
        if data.get("error"):
            total["errors"].append(data["error"])
            continue
        total["deployed_in"] += bool(data.get("enabled"))
        for k in OUTCOMES:
            total[k] += int(data.get(k, 0))
            total[f"{k}_names"] += list(data.get(f"{k}_names", []))
        total["reasons"].update(data.get("reasons", {}))
    return total


def summary_line(db: Path, total: dict) -> str:
    tuned = total["swapped"] + total["cached"]
    stock = total["missed"] + total["rejected"] + total["cached_stock"]
    line = (f"chronos run: {db}: tuned {tuned} (swapped {total['swapped']}, from cache {total['cached']}), "
            f"stock {stock} (missed {total['missed']}, rejected {total['rejected']}, "
            f"from cache {total['cached_stock']}); "
            f"deployed in {total['deployed_in']} of {total['processes']} Python processes that used Triton")
    if total["errors"]:
        line += f"; not deployed in {len(total['errors'])}: {min(total['errors'])}"
    return line

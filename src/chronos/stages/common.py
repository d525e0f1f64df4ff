"""What every stage shares: one shell (arguments → config → library call → outputs) and its conventions.

Exit codes: 0 done; 1 done, but some kernels failed (each recorded in the output); 2 a typed error
(`ChronosError`: bad params, a missing input, a replay miss), printed as one line on stderr.
"""

from __future__ import annotations

import argparse
import shlex
import sys
from collections.abc import Callable
from pathlib import Path

from chronos import config as chronos_config
from chronos.errors import ChronosError, one_line
from chronos.files import read_json, write_json  # noqa: F401 - the stages' JSON I/O

EXIT_OK, EXIT_PARTIAL, EXIT_ERROR = 0, 1, 2


def run_stage(name: str, doc: str, add_arguments: Callable[[argparse.ArgumentParser], None],
              body: Callable[[argparse.Namespace, chronos_config.Config], int | None],
              argv: list[str] | None = None) -> int:
    """Parse `--params` and the stage's own arguments, load the typed config, run `body`.

    A ChronosError from anywhere in the stage becomes one line on stderr and exit code 2."""
    ap = argparse.ArgumentParser(prog=f"python -m chronos.stages.{name}", description=doc.splitlines()[0])
    ap.add_argument("--params", type=Path, default=Path("params.yaml"))
    add_arguments(ap)
    args = ap.parse_args(argv)
    args.argv = list(argv if argv is not None else sys.argv[1:])
    try:
        cfg = chronos_config.load(args.params)
        return int(body(args, cfg) or EXIT_OK)
    except ChronosError as e:
        print(f"{name}: error: {one_line(e)}", file=sys.stderr)
        return EXIT_ERROR


def command_line(stage: str, argv: list[str]) -> str:
    return shlex.join(["python", "-m", f"chronos.stages.{stage}", *argv])


def search_provenance(backend_provenance: dict, results: list[dict], argv: list[str] | None,
                      stage: str) -> dict:
    """GPU/driver/ptxas of the records, when they were measured (first/last), the backend and the command."""
    firsts = [r["measured"]["first"] for r in results if r.get("measured", {}).get("first")]
    lasts = [r["measured"]["last"] for r in results if r.get("measured", {}).get("last")]
    cmd = command_line(stage, argv if argv is not None else sys.argv[1:])
    return {**backend_provenance, "date": max(lasts) if lasts else None,
            "measured": {"first": min(firsts), "last": max(lasts)} if firsts else None, "command": cmd}

"""The in-process half of `chronos run --db DB -- CMD`: deploy the tuned DB in every process of the command.

The bootstrap (chronos.triton.bootstrap) calls `start_from_env()` at start-up in every Python process the
command starts. Nothing is imported then: Triton is patched when the process itself imports it (a process
that never uses Triton pays nothing), and `enable()` runs right after. At exit each process writes its
`stats()` (swapped, cached, missed, rejected, with reasons) to CHRONOS_RUN_STATS/<pid>.json, which the
command sums into its one-line summary. A DB that cannot be deployed leaves the process stock: its reason
goes into the same file, never into the program's way.
"""

from __future__ import annotations

import atexit
import json
import os
from pathlib import Path

from chronos.errors import one_line
from chronos.triton.patch_on_import import PatchOnImport

ENV_STATS = "CHRONOS_RUN_STATS"
ENV_MODE = "CHRONOS_TUNED_MODE"
_STATE: dict = {"finder": None, "error": None}


def start_from_env() -> None:
    """What the bootstrap calls: deploy $CHRONOS_TUNED once Triton is imported; write stats at exit."""
    from chronos.triton.hook import ENV_DB

    if not os.environ.get(ENV_DB) or _STATE["finder"] is not None:
        return
    _STATE["finder"] = PatchOnImport({"triton": _enable}, _failed).install()
    atexit.register(_write_stats)


def _enable(_triton_module) -> None:
    from chronos.triton.hook import enable

    enable(mode=os.environ.get(ENV_MODE, "deploy"))


def _failed(_module: str) -> None:
    import sys

    exc = sys.exc_info()[1]
    _STATE["error"] = f"{type(exc).__name__}: {one_line(exc)}"


def _write_stats() -> None:
    folder = os.environ.get(ENV_STATS)
    if not folder:
        return
    from chronos.triton.hook import stats

    data = stats() if _STATE["error"] is None else {"enabled": False, "error": _STATE["error"]}
    try:
        path = Path(folder) / f"{os.getpid()}.json"
        path.write_text(json.dumps(data, default=str) + "\n")
    except OSError:
        pass  # the summary will lack this process; the program's own exit must not fail

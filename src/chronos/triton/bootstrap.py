"""Start Chronos in every Python process of a workload, with no change to the workload's code.

`chronos capture` and `chronos run` put a folder holding a `sitecustomize.py` first on PYTHONPATH: Python
imports it at start-up in every process the workload starts (Inductor's compile workers included), and it
calls the entry point named in CHRONOS_BOOTSTRAP (`module:function`). The sitecustomize it shadows, if any,
is imported after it; a failure is one line on stderr and the process goes on as if Chronos were absent.
"""

from __future__ import annotations

import os
from pathlib import Path

ENV_ENTRY = "CHRONOS_BOOTSTRAP"

_SOURCE = '''"""Written by chronos.triton.bootstrap: start Chronos in every process of the workload."""
import os as _os
import sys as _sys

try:
    import importlib as _importlib

    _mod, _fn = _os.environ["CHRONOS_BOOTSTRAP"].split(":")
    getattr(_importlib.import_module(_mod), _fn)()
except Exception as _e:  # noqa: BLE001 - the workload must run whatever happens here
    _sys.stderr.write(f"chronos: not active in process {_os.getpid()}: {type(_e).__name__}: {_e}\\n")
_here = _os.path.dirname(_os.path.abspath(__file__))
_sys.path[:] = [p for p in _sys.path if _os.path.abspath(p or ".") != _here]
try:  # the sitecustomize this one shadows, if any: run it beside this one (the import system still holds
    # this module under the name while it loads, so a plain `import sitecustomize` would find it again)
    import importlib.machinery as _machinery
    import importlib.util as _util

    _spec = _machinery.PathFinder.find_spec("sitecustomize", _sys.path)
    if _spec is not None and _spec.loader is not None:
        _spec.loader.exec_module(_util.module_from_spec(_spec))
except Exception as _e:  # noqa: BLE001
    _sys.stderr.write(f"chronos: the shadowed sitecustomize failed: {type(_e).__name__}: {_e}\\n")
'''


def environment(folder: Path, entry: str, env: dict[str, str]) -> dict[str, str]:
    """`env` plus what starts `entry` in every Python process: writes `folder/sitecustomize.py` and puts
    it, then the folder Chronos itself is imported from, first on PYTHONPATH."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "sitecustomize.py").write_text(_SOURCE)
    src = Path(__file__).resolve().parents[2]  # so the workload's Python finds chronos
    path = os.pathsep.join([str(folder), str(src), *filter(None, [env.get("PYTHONPATH")])])
    return {**env, ENV_ENTRY: entry, "PYTHONPATH": path}

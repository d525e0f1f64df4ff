"""Chronos-tuned PTX inside Triton, deployed from a tuned DB with no measurement at run time.

`enable(db)` / `disable()` / `stats()` (chronos.triton.hook) swap the PTX of Triton kernels whose strict key
is in the DB (chronos.triton.tuned_db), and have Triton compile each kernel that has a tuned config (block
sizes, num_warps...) with it (chronos.triton.tuned_configs, .deploy_configs). Triton is imported only by
enable(): importing this package needs no Triton. Only the CLI and the stages may import this package
(pyproject's import-linter layers).
"""

from chronos.triton.hook import TunedMissError, disable, enable, stats
from chronos.triton.tuned_configs import show
from chronos.triton.tuned_db import ACTION_SPACE, Entry, TunedDB, TunedDBError, TunedKey, make_key

__all__ = ["ACTION_SPACE", "Entry", "TunedDB", "TunedDBError", "TunedKey", "TunedMissError", "disable",
           "enable", "make_key", "show", "stats"]

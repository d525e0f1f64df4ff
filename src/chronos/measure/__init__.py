"""Measurement: compile, launch, verify bit-exactly, time and count cycles of PTX variants on a GPU.

What is measured and how is `chronos.config.MeasureConfig`; a candidate is `chronos.kernels.variant.Variant`.
Modules: `instrument` (%clock64 cycle instrumentation on the IR), `runner` (pycuda; imported lazily),
`worker`/`pool` (one isolated process per GPU, watchdog, restart), `store` (append-only SQLite, integrity
checked on open, read-only for replay) and `backend` (GpuBackend, ReplayBackend, make_backend). This
package never imports chronos.search: what it must realise (a recipe) or look up (the atlas) is passed in.
"""

from chronos.config import MeasureConfig
from chronos.kernels.variant import Variant

__all__ = ["MeasureConfig", "Variant"]

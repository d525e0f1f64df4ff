"""Measurement: compile, launch, verify bit-exactly, time and count cycles of PTX variants on a GPU.

Layers: `config` (what is measured and how), `instrument` (%clock64 cycle instrumentation on the IR),
`runner` (pycuda; imported lazily), `worker`/`pool` (one isolated process per GPU, watchdog, restart),
`store` (append-only SQLite) and `backend` (GpuBackend, ReplayBackend, make_backend).
"""

from chronos.config import MeasureConfig
from chronos.variant import Variant

__all__ = ["MeasureConfig", "Variant"]

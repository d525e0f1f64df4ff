"""Replay from the atlas: (kernel, set, PTX) -> the set's SASS variant -> its measurement, as a store Record.

The measurement layer does not know the atlas (it sits below the search); `backend_with_atlas` builds a
backend whose replay side answers through an `AtlasReplay` of the `atlas.sqlite` beside the store, which
is what every stage that measures or replays uses.
"""

from __future__ import annotations

import time
from pathlib import Path

from chronos.config import MeasureConfig
from chronos.errors import AtlasError
from chronos.measure import backend as measure_backend
from chronos.measure.store import Record
from chronos.search.atlas_plan import REFUSED, AtlasDB
from chronos.search.space import canonical

ATLAS_NAME = "atlas.sqlite"
"""The atlas file replay reads, beside the measurement store."""


class AtlasReplay:
    """Answers replay requests from an atlas file, read-only. Soft on purpose: anything it cannot answer
    exactly (another config, a kernel or variant it lacks, PTX that differs from the plan's) returns None
    and the caller falls back to the measurement store; `last_miss` says why the last set was missed."""

    def __init__(self, path: str | Path):
        self.db = AtlasDB(path, readonly=True)
        self.meta = self.db.meta()
        self._measured: dict[str, dict[int, dict]] = {}
        self._regs: dict[str, dict[int, tuple[int, int]]] = {}
        self.last_miss = ""

    def record(self, kernel: str, actions, ptx_sha256: str, config_hash: str) -> Record | None:
        if self.meta.get("config_hash") != config_hash or not self.db.has(kernel):
            return None
        try:
            variant = self.db.variant_of(kernel, actions, ptx_sha256)
        except AtlasError as e:
            self.last_miss = str(e)
            return None
        base = {"kernel": kernel, "ptx_sha256": ptx_sha256, "cubin_sha256": "",
                "gpu": self.meta.get("gpu", "?"), "driver": self.meta.get("driver", "?"),
                "ptxas": self.meta.get("ptxas", "?"),
                "config_hash": config_hash, "actions": tuple(canonical(actions))}
        if variant == REFUSED:
            return Record(**base, valid=False, reason="ptxas_error", log=self.db.refusal(kernel, actions),
                          extra={"atlas": str(self.db.path)})
        if kernel not in self._measured:
            self._measured[kernel] = self.db.measured(kernel)
            self._regs[kernel] = self.db.resources(kernel)
        m = self._measured[kernel].get(variant)
        if m is None:
            self.last_miss = f"{kernel}: SASS variant {variant} of the atlas is not measured yet"
            return None
        regs, spills = self._regs[kernel].get(variant, (None, None))
        stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(m["measured_at"]))
        if m["cubin8"] is not None:  # the measured representative's cubin: its sha256's first 16 hex digits
            base["cubin_sha256"] = (m["cubin8"] & (1 << 64) - 1).to_bytes(8, "big").hex()
        return Record(**base, valid=bool(m["valid"]), reason=m["reason"], log=m["log"],
                      cycles_median=m["cycles_median"], cycles_iqr=m["cycles_iqr"],
                      time_ms_median=m["time_ms_median"], time_ms_iqr=m["time_ms_iqr"], registers=regs,
                      spills=spills, extra={"atlas_variant": variant}, created_at=stamp)

    def close(self) -> None:
        self.db.close()


def atlas_beside(store_path: str | Path) -> AtlasReplay | None:
    """The AtlasReplay of the atlas file beside a measurement store, None if there is none."""
    path = Path(store_path).parent / ATLAS_NAME
    return AtlasReplay(path) if path.is_file() else None


def backend_with_atlas(name: str, store_path: str | Path, config: MeasureConfig | None = None, **kw):
    """measure.backend.make_backend, whose replay backend also answers from the atlas beside the store."""
    # through the module, so that a stand-in patched over make_backend (tests) is the one called
    return measure_backend.make_backend(name, store_path, config, open_atlas=atlas_beside, **kw)

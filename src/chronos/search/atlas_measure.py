"""Measuring the atlas plan on a GPU: every SASS variant of the selected kernels not yet measured, a few
kernels per batch, each answer recorded in the plan file as it comes (an interrupted run resumes)."""

from __future__ import annotations

import json
import time
from pathlib import Path

from chronos.errors import AtlasError
from chronos.kernels.spec import KernelSpec, load_module
from chronos.kernels.variant import Variant
from chronos.measure.backend import GpuBackend
from chronos.progress import progress
from chronos.ptx import emit
from chronos.search.atlas_plan import AtlasDB, now

Selected = list[tuple[str, Path, KernelSpec]]


def _stamp_config(db: AtlasDB, backend: GpuBackend) -> None:
    """Refuse a plan file measured with another config; record this run's config and GPU."""
    cfg = backend.config
    meta = db.meta()
    if meta.get("config_hash", cfg.config_hash()) != cfg.config_hash():
        raise AtlasError(f"{db.path} holds measurements of config {meta['config_hash']}, "
                         f"not {cfg.config_hash()}")
    prov = backend.provenance()
    db.set_meta(config_hash=cfg.config_hash(), config=json.dumps(cfg.measured(), sort_keys=True),
                gpu=prov["gpu"], driver=prov["driver"], measured_with_ptxas=prov["ptxas"])


def _batch(db: AtlasDB, batch: Selected) -> tuple[list, list]:
    """(measure_many groups, (spec, [(variant, actions)]) index) of the batch's unmeasured variants; each
    variant ships a recipe, so the compile processes realise its set themselves."""
    groups, index = [], []
    for _, specs_json, spec in batch:
        done = db.measured(spec.kernel)
        todo = [(v, acts) for v, acts in db.representatives(spec.kernel) if v not in done]
        if not todo:
            continue
        recipe = (str(specs_json), spec.entry)
        variants = [Variant(spec, "", acts, recipe=recipe) for _, acts in todo]
        groups.append((spec, variants, emit(load_module(specs_json, spec))))
        index.append((spec, todo))
    return groups, index


def _record(db: AtlasDB, index: list, results: list) -> None:
    for (spec, todo), records in zip(index, results, strict=True):
        rows = []
        for (v, acts), rec in zip(todo, records, strict=True):
            if rec.ptx_sha256:  # realised in the compile process: it must be the plan's PTX
                try:
                    if db.variant_of(spec.kernel, acts, rec.ptx_sha256) != v:
                        raise AtlasError(f"{spec.kernel}: set {acts} is not variant {v} in the plan")
                except AtlasError as e:
                    rec.valid, rec.reason, rec.log = False, "plan_mismatch", str(e)
            rows.append((v, rec.__dict__))
        db.record(spec.kernel, rows)


def measure_missing(db: AtlasDB, selected: Selected, backend: GpuBackend, kernels_per_batch: int = 4,
                    budget_s: float | None = None) -> None:
    """Measure every plan variant of the selected kernels that the plan file has no measurement for.
    With `budget_s`, no new batch starts after that many seconds (the rest is left for a later run)."""
    t_start = time.perf_counter()
    _stamp_config(db, backend)
    starts = range(0, len(selected), kernels_per_batch)
    for start in progress(starts, desc="atlas", unit="batch"):
        if budget_s is not None and time.perf_counter() - t_start > budget_s:
            print(f"atlas: time budget of {budget_s:.0f} s spent; stopping before "
                  f"{selected[start][2].kernel}")
            break
        groups, index = _batch(db, selected[start:start + kernels_per_batch])
        if not groups:
            continue
        t0 = time.perf_counter()
        n = sum(len(t) for _, t in index)
        if "measured_first" not in db.meta():
            db.set_meta(measured_first=now())
        _record(db, index, backend.measure_many(groups))
        dt = time.perf_counter() - t0
        db.set_meta(measured_last=now())
        print(f"atlas: measured {n} variants of {len(index)} kernels in {dt:.1f} s ({n / dt:.1f}/s)",
              flush=True)

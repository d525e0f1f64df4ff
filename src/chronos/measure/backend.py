"""Measurement backends: `measure(spec, variants) -> list[Record]`, one record per variant, in order.

* GpuBackend: compiles with ptxas on a process pool (CPU cores) while the worker pool measures on the GPU;
  every answer is stored as it comes; a variant already in the store (same kernel, PTX, config, GPU, ptxas)
  is not measured again, nor is a cubin whose SASS was already measured (the record is copied).
* ReplayBackend: answers from the store (read-only) and, first, from an atlas lookup if it is given one; a
  miss raises MeasurementMissError.
* make_backend("gpu" | "replay" | "auto", store_path, config): auto = gpu if a CUDA GPU is visible.

This layer sits below the search: what it needs of it comes in as arguments, never as an import. A
GpuBackend measuring variants with a `recipe` is given the function that realises them (`realize`), a
replay backend the atlas lookup (search/atlas_replay.py builds both).
"""

from __future__ import annotations

import concurrent.futures as cf
import functools
import multiprocessing
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from chronos.config import MeasureConfig
from chronos.errors import MeasureError, MeasurementMissError, PtxasError
from chronos.kernels.spec import KernelSpec
from chronos.kernels.variant import Variant, sha256_text
from chronos.measure.comparison import Comparison
from chronos.measure.compile import Compiled, Realize, compile_variant
from chronos.measure.sidebyside import gpu_compare, replay_compare
from chronos.measure.store import Record, Store
from chronos.measure.worker import encode_cubin


class MeasurementBackend(Protocol):
    def measure(self, spec: KernelSpec, variants: list[Variant], *,
                baseline_ptx: str | None = None) -> list[Record]: ...

    def provenance(self) -> dict: ...

    def close(self) -> None: ...


class AtlasLookup(Protocol):
    """What a ReplayBackend asks before its store (the search's atlas_replay.AtlasReplay): a record, or None
    with the reason in `last_miss`."""

    last_miss: str

    def record(self, kernel: str, actions, ptx_sha256: str, config_hash: str) -> Record | None: ...

    def close(self) -> None: ...


@dataclass
class _Run:
    """One measure_many call: its groups, their records so far, and the compiles and copies under way."""

    groups: list[tuple[KernelSpec, list[Variant], str | None]]
    results: list[list[Record | None]]
    bases: dict[int, cf.Future] = field(default_factory=dict)  # group -> its baseline's compile
    futs: dict[cf.Future, tuple[int, int]] = field(default_factory=dict)  # a compile -> (group, variant)
    compiled: dict[tuple[int, int], Compiled] = field(default_factory=dict)
    first_of: dict[tuple[str, str], tuple[int, int]] = field(default_factory=dict)  # (kernel, SASS) -> job
    copies: list[tuple[tuple[int, int], tuple[int, int]]] = field(default_factory=list)  # (copy, of job)


class GpuBackend:
    """Pool + store. Use as a context manager (or call close()) to stop the workers. `realize` realises
    variants that come as a recipe (see Realize)."""

    def __init__(self, store_path: str | Path, config: MeasureConfig | None = None, *,
                 ptxas: str | None = None, worker_argv=None, retry_invalid: bool = False,
                 realize: Realize | None = None):
        from chronos.measure.pool import WORKER_ARGV, WorkerPool
        from chronos.toolchain import find_ptxas, ptxas_version

        self.config = config or MeasureConfig()
        self.retry_invalid = retry_invalid  # re-measure stored invalid records (the newest record wins)
        self.remeasure = False  # compare even where the store has the comparison (tune's re-confirmation)
        self.realize = realize
        self.store = Store(store_path)
        self.ptxas = str(ptxas or find_ptxas())
        self.ptxas_version = ptxas_version(self.ptxas)
        cfg = self.config
        self.pool = WorkerPool(cfg.gpus, argv=worker_argv or WORKER_ARGV, watchdog_s=cfg.watchdog_s,
                               startup_timeout_s=cfg.startup_timeout_s)
        self.info = self.pool.start()
        # Processes, not threads: instrumenting a variant parses and prints PTX in Python, which would
        # serialise on the GIL. spawn, not fork: the pool's watchdog threads are already running.
        self.executor = cf.ProcessPoolExecutor(self.config.compile_workers or os.cpu_count() or 4,
                                               mp_context=multiprocessing.get_context("spawn"))

    def provenance(self) -> dict:
        return {"gpu": self.info.get("gpu", "?"), "driver": self.info.get("driver", "?"),
                "ptxas": self.ptxas_version}

    def use_ptxas(self, path: str) -> None:
        """Assemble with `path` from now on (a captured workload's kernels with the ptxas its Triton deploys
        them with, so that the cubins timed are the ones that will run); records and keys follow it."""
        from chronos.toolchain import ptxas_version

        self.ptxas, self.ptxas_version = str(path), ptxas_version(path)

    def _record(self, spec: KernelSpec, v: Variant, **kw) -> Record:
        base = {"kernel": spec.kernel, "ptx_sha256": "" if v.recipe else v.ptx_sha256, "cubin_sha256": "",
                "gpu": self.info["gpu"], "driver": self.info["driver"], "ptxas": self.ptxas_version,
                "config_hash": self.config.config_hash(), "actions": tuple(v.actions), "valid": False}
        base.update(kw)
        return self.store.insert(Record(**base))

    def measure(self, spec: KernelSpec, variants: list[Variant], *,
                baseline_ptx: str | None = None) -> list[Record]:
        return self.measure_many([(spec, variants, baseline_ptx)])[0]

    def measure_many(self, groups: list[tuple[KernelSpec, list[Variant], str | None]]) -> list[list[Record]]:
        """Several kernels' variants in one pipelined run: ptxas for all of them runs on the process pool
        while the GPU measures whichever is compiled first. Returns one list of records per group."""
        run = _Run(groups, [[None] * len(vs) for _, vs, _ in groups])
        for g in range(len(groups)):
            self._submit(run, g)
        if run.futs:
            self.pool.run(self._jobs(run), functools.partial(self._on_result, run),
                          worker_of=self._worker_of(groups))
        for (g, i), src in run.copies:  # measured once in this run: the copies take its record
            run.results[g][i] = self._copy(groups[g][0], groups[g][1][i], run.compiled[g, i],
                                           run.results[src[0]][src[1]])
        return run.results  # type: ignore[return-value]

    def _submit(self, run: _Run, g: int) -> None:
        """Answer group g's variants from the store where it can; submit the compiles of the others (and of
        the group's baseline, which every measurement verifies against)."""
        spec, variants, baseline_ptx = run.groups[g]
        if baseline_ptx is None:
            baseline_ptx = next((v.ptx for v in variants if not v.actions), None)
            if baseline_ptx is None:
                raise MeasureError(f"{spec.kernel}: no baseline PTX (pass baseline_ptx or a variant with no "
                                   "actions)")
        if self.realize is None and any(v.recipe for v in variants):
            raise MeasureError(f"{spec.kernel}: variants given as a recipe, but no realize function")
        ch, cfg = self.config.config_hash(), self.config
        todo = []
        for i, v in enumerate(variants):
            rec = None if v.recipe else self.store.latest(spec.kernel, v.ptx_sha256, ch, gpu=self.info["gpu"],
                                                          ptxas=self.ptxas_version)
            if rec is not None and (rec.valid or not self.retry_invalid):
                run.results[g][i] = rec
            else:
                todo.append(i)
        if not todo:
            return
        run.bases[g] = self.executor.submit(compile_variant, baseline_ptx, spec, cfg.arch, self.ptxas, False)
        for i in todo:
            v = variants[i]
            recipe = (v.recipe, v.actions) if v.recipe else None
            fut = self.executor.submit(compile_variant, v.ptx, spec, cfg.arch, self.ptxas, True, recipe,
                                       self.realize)
            run.futs[fut] = (g, i)

    def _jobs(self, run: _Run):
        """Worker jobs as compiles finish. A failed compile is recorded, a cubin the store has measured is
        copied, and one with the SASS of a job of this run waits for that job's record."""
        ch, gpu = self.config.config_hash(), self.info["gpu"]
        for fut in cf.as_completed(run.futs):
            g, i = run.futs[fut]
            spec, variants, _ = run.groups[g]
            pair = self._compiled(run, g, i, fut)
            if pair is None:
                continue
            base, c = pair
            run.compiled[g, i] = c
            prior = self.store.latest_by_cubin(c.sha, ch, kernel=spec.kernel, gpu=gpu)
            if prior is not None and (prior.valid or not self.retry_invalid):
                run.results[g][i] = self._copy(spec, variants[i], c, prior)
                continue
            if (spec.kernel, c.sass) in run.first_of:  # same machine code as a variant of this run
                run.copies.append(((g, i), run.first_of[spec.kernel, c.sass]))
                continue
            run.first_of[spec.kernel, c.sass] = (g, i)
            yield {"id": f"{g}:{i}", "op": "measure", "spec": spec.to_json(), "config": self.config.to_json(),
                   "baseline": encode_cubin(base.sha, base.cubin), "variant": encode_cubin(c.sha, c.cubin),
                   "cycles": encode_cubin(*c.cycles) if c.cycles else None, "_base": base.sha}

    def _compiled(self, run: _Run, g: int, i: int, fut: cf.Future) -> tuple[Compiled, Compiled] | None:
        """(baseline, variant) compiled, or None once the failure is recorded as the variant's result."""
        spec, variants, _ = run.groups[g]
        v = variants[i]
        try:
            base = run.bases[g].result()
        except PtxasError as e:
            run.results[g][i] = self._record(spec, v, reason="baseline_ptxas_error", log=f"{e}\n{e.log}")
            return None
        try:
            return base, fut.result()
        except PtxasError as e:
            run.results[g][i] = self._record(spec, v, reason="ptxas_error", log=f"{e}\n{e.log}")
        except MeasureError as e:  # a recipe that does not realise
            run.results[g][i] = self._record(spec, v, reason="illegal", log=str(e))
        return None

    def _on_result(self, run: _Run, job: dict, ans: dict) -> None:
        g, i = map(int, job["id"].split(":"))
        spec, variants, _ = run.groups[g]
        c = run.compiled[g, i]
        cyc, tm = ans.get("cycles") or {}, ans.get("time_ms") or {}
        log = "\n".join(x for x in (ans.get("log", ""), c.note) if x)
        run.results[g][i] = self._record(
            spec, variants[i], ptx_sha256=c.ptx_sha, cubin_sha256=c.sha, valid=bool(ans.get("valid")),
            reason=ans.get("reason", ""), log=log, cycles_median=cyc.get("median"), cycles_iqr=cyc.get("iqr"),
            time_ms_median=tm.get("median"), time_ms_iqr=tm.get("iqr"), registers=c.registers,
            spills=c.spills, extra={"cycles_n": cyc.get("n"), "time_n": tm.get("n"),
                                    "baseline_cubin": job["_base"], "device": ans.get("device")})

    def _worker_of(self, groups) -> Callable[[dict], int] | None:
        """With one_gpu_per_kernel, each kernel's jobs go to one worker (kernels take turns)."""
        if not self.config.one_gpu_per_kernel:
            return None
        turn = {k: i for i, k in enumerate(dict.fromkeys(spec.kernel for spec, _, _ in groups))}
        return lambda job: turn[job["spec"]["kernel"]]

    def measure_rounds(self, groups: list[tuple[KernelSpec, Compiled, list[Compiled]]], rounds: int,
                       realloc: bool = False) -> list[list[dict]]:
        """Side-by-side re-measurement (GpuRunner.measure_rounds) of compiled candidates, one job per kernel,
        spread over the workers. Answers per group: one dict per candidate (valid, reason, log, cycles,
        time_ms stats); a fault, hang or dead worker marks the whole group with its reason. Not stored:
        the caller keeps these numbers beside, not instead of, the per-variant records."""
        out: list[list[dict]] = [[] for _ in groups]
        cfg = self.config

        def jobs():
            for g, (spec, base, cands) in enumerate(groups):
                yield {"id": str(g), "op": "rounds", "spec": spec.to_json(), "config": cfg.to_json(),
                       "baseline": encode_cubin(base.sha, base.cubin), "rounds": rounds, "realloc": realloc,
                       "candidates": [[encode_cubin(c.sha, c.cubin), encode_cubin(*c.cycles)] for c in cands]}

        def on_result(job: dict, ans: dict) -> None:
            g = int(job["id"])
            n = len(groups[g][2])
            out[g] = ans.get("results") or [{"valid": False, "reason": ans.get("reason", "worker_error"),
                                             "log": ans.get("log", "")} for _ in range(n)]

        self.pool.run(jobs(), on_result,
                      timeout_of=lambda job: self.config.watchdog_s * max(1, len(job["candidates"])))
        return out

    def compare(self, spec: KernelSpec, variants: list[Variant], timing) -> Comparison:
        """variants[0] (the baseline) and its challengers, side by side (chronos.measure.sidebyside)."""
        return gpu_compare(self, spec, variants, timing)

    def _copy(self, spec: KernelSpec, v: Variant, c: Compiled, prior: Record) -> Record:
        return self._record(
            spec, v, ptx_sha256=c.ptx_sha, cubin_sha256=c.sha, valid=prior.valid, reason=prior.reason,
            log=f"same cubin as ptx {prior.ptx_sha256} (record {prior.id}): not measured again",
            cycles_median=prior.cycles_median, cycles_iqr=prior.cycles_iqr,
            time_ms_median=prior.time_ms_median, time_ms_iqr=prior.time_ms_iqr, registers=c.registers,
            spills=c.spills,
            extra={**prior.extra, "dedup_of": prior.id})

    def close(self) -> None:
        self.pool.close()
        self.executor.shutdown(wait=False, cancel_futures=True)
        self.store.close()  # the file back in rollback-journal mode: replay then creates nothing beside it

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


class ReplayBackend:
    """Answers from `atlas` (if given; the atlas beside the store, see make_backend) for the kernels and sets
    it covers, so that one kernel's answers all come from one run; else from the store: the newest record for
    (kernel, PTX sha256, config) on any GPU, or on `gpu`. Only reads: the store is opened read-only."""

    def __init__(self, store_path: str | Path, config: MeasureConfig | None = None, *, gpu: str | None = None,
                 atlas: AtlasLookup | None = None):
        self.config = config or MeasureConfig()
        self.path = Path(store_path)
        if not self.path.is_file():
            raise MeasureError(f"replay store {self.path} does not exist",
                               repro=f"python -m chronos.stages.baseline --backend gpu --store {self.path}")
        self.store = Store(self.path, readonly=True)
        self.gpu = gpu
        self.not_after: str | None = None
        """Comparisons created at this store time or before only (a part's recorded_at: replay answers as
        the store stood when the part was recorded, not with a later stage's timing of the same key)."""
        self._last: Record | None = None
        self._cmp_prov: dict | None = None  # of the last replayed comparison
        self.atlas = atlas

    def provenance(self) -> dict:
        r = self._last
        if r is None:
            return self._cmp_prov or {"gpu": "?", "driver": "?", "ptxas": "?"}
        return {"gpu": r.gpu, "driver": r.driver, "ptxas": r.ptxas}

    def measure(self, spec: KernelSpec, variants: list[Variant], *,
                baseline_ptx: str | None = None) -> list[Record]:
        ch = self.config.config_hash()
        out = []
        for v in variants:
            sha = sha256_text(v.ptx)
            rec = self.atlas.record(spec.kernel, v.actions, sha, ch) if self.atlas else None
            rec = rec or self.store.latest(spec.kernel, sha, ch, gpu=self.gpu)
            if rec is None:
                err = MeasurementMissError(spec.kernel, tuple(v.actions), v.ptx_sha256, ch, self.path)
                if self.atlas and self.atlas.last_miss:
                    err.message += f"; atlas: {self.atlas.last_miss}"
                raise err
            self._last = rec
            out.append(rec)
        return out

    def compare(self, spec: KernelSpec, variants: list[Variant], timing) -> Comparison:
        cmp = replay_compare(self, spec, variants, timing)
        self._cmp_prov = {k: cmp.provenance[k] for k in ("gpu", "driver", "ptxas")}
        return cmp

    def close(self) -> None:
        self.store.close()
        if self.atlas:
            self.atlas.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def make_backend(name: str, store_path: str | Path, config: MeasureConfig | None = None, *,
                 open_atlas: Callable[[Path], AtlasLookup | None] | None = None, **kw):
    """"gpu", "replay" or "auto" (gpu when `cuda_gpu_available()`, else replay). `open_atlas(store_path)`
    gives a replay backend its atlas lookup; it is not called for one filtered to a `gpu`, which asks for
    the store's records of that GPU."""
    if name == "auto":
        from chronos.toolchain import cuda_gpu_available

        name = "gpu" if cuda_gpu_available() else "replay"
    if name == "gpu":
        return GpuBackend(store_path, config, **kw)
    if name == "replay":
        backend = ReplayBackend(store_path, config, gpu=kw.get("gpu"))
        if open_atlas is not None and backend.gpu is None:
            try:
                backend.atlas = open_atlas(backend.path)
            except BaseException:
                backend.close()
                raise
        return backend
    raise MeasureError(f"measure.backend must be gpu, replay or auto, not {name!r}")

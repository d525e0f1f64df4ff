"""Measurement backends: `measure(spec, variants) -> list[Record]`, one record per variant, in order.

* GpuBackend: compiles with ptxas on a thread pool (CPU cores) while the worker pool measures on the GPU;
  every answer is stored as it comes; a variant already in the store (same kernel, PTX, config, GPU, ptxas)
  is not measured again, nor is a cubin whose SASS was already measured (the record is copied).
* ReplayBackend: answers from the store only; a miss raises MeasurementMissError.
* make_backend("gpu" | "replay" | "auto", store_path, config): auto = gpu if a CUDA GPU is visible.
"""

from __future__ import annotations

import base64
import concurrent.futures as cf
import functools
import hashlib
import multiprocessing
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from chronos.errors import PtxasError
from chronos.kernels.spec import KernelSpec
from chronos.measure.config import MeasureConfig, MeasureError, Variant, sha256_text
from chronos.measure.store import Record, Store


class MeasurementMissError(MeasureError):
    """The replay store holds no measurement for a requested variant."""

    def __init__(self, kernel: str, actions: tuple[str, ...], ptx_sha256: str, config_hash: str, store: Path):
        self.kernel, self.actions, self.ptx_sha256 = kernel, actions, ptx_sha256
        acts = "+".join(actions) if actions else "(baseline, no actions)"
        super().__init__(
            f"no measurement in {store} for kernel {kernel}, actions {acts}, ptx sha256 {ptx_sha256}, "
            f"measure config {config_hash}; measure it on a GPU machine (measure.backend: gpu) and commit the store",
            repro=f"python -m chronos.stages.baseline --backend gpu --store {store}")


class MeasurementBackend(Protocol):
    def measure(self, spec: KernelSpec, variants: list[Variant], *,
                baseline_ptx: str | None = None) -> list[Record]: ...

    def provenance(self) -> dict: ...


@dataclass
class Compiled:
    cubin: bytes
    sha: str
    registers: int
    spills: int
    cycles: tuple[str, bytes] | None
    note: str = ""
    ptx_sha: str = ""
    sass: str = ""  # chronos.search.atlas.sass_key: equal for cubins that differ only in metadata


@functools.lru_cache(maxsize=4)
def _root_module(specs_json: str, entry: str):
    from chronos.kernels.spec import load_module, load_specs

    spec = next(s for s in load_specs(Path(specs_json)) if s.entry == entry)
    return load_module(Path(specs_json), spec)


def realize_recipe(recipe: tuple[str, str], actions: tuple[str, ...]) -> str:
    """The PTX of `actions` on the kernel named by `recipe` (see Variant.recipe)."""
    from chronos.ptx import emit
    from chronos.search.space import realize

    module = realize(_root_module(*recipe), actions, defer_ptxas=True)
    if module is None:
        raise MeasureError(f"{recipe[1]} [{'+'.join(actions)}]: not a legal set")
    return emit(module)


def compile_variant(ptx: str, spec: KernelSpec, arch: str, ptxas: str | None, with_cycles: bool = True,
                    recipe: tuple | None = None) -> Compiled:
    """ptxas the PTX (raises PtxasError) and, for cycles, its %clock64-instrumented twin. With `recipe`
    ((specs.json, entry), actions), the PTX is realised here first."""
    from chronos.measure.instrument import instrument_text
    from chronos.search.atlas import sass_key  # here: chronos.search imports this module
    from chronos.toolchain import assemble

    if recipe is not None:
        ptx = realize_recipe(*recipe)
    res = assemble(ptx, arch, ptxas=ptxas, name="variant")
    e = res.entries.get(spec.entry)
    regs = e.registers if e else 0
    spills = (e.spill_stores + e.spill_loads) if e else 0
    cycles, note = None, ""
    if with_cycles:
        try:
            inst = assemble(instrument_text(ptx, spec.entry), arch, ptxas=ptxas, name="cycles")
            cycles = (hashlib.sha256(inst.cubin).hexdigest(), inst.cubin)
        except Exception as ex:  # noqa: BLE001 - no cycles for this variant, said in its log
            note = f"no cycle instrumentation: {ex}"
    return Compiled(res.cubin, hashlib.sha256(res.cubin).hexdigest(), regs, spills, cycles, note, sha256_text(ptx),
                    sass_key(res.cubin, res.entries))


def _b64(sha: str, cubin: bytes) -> list:
    return [sha, base64.b64encode(cubin).decode()]


class GpuBackend:
    """Pool + store. Use as a context manager (or call close()) to stop the workers."""

    def __init__(self, store_path: str | Path, config: MeasureConfig | None = None, *,
                 ptxas: str | None = None, worker_argv=None, retry_invalid: bool = False):
        from chronos.measure.pool import WORKER_ARGV, WorkerPool
        from chronos.toolchain import find_ptxas, ptxas_version

        self.config = config or MeasureConfig()
        self.retry_invalid = retry_invalid  # re-measure stored invalid records (the newest record wins)
        self.store = Store(store_path)
        self.ptxas = str(ptxas or find_ptxas())
        self.ptxas_version = ptxas_version(self.ptxas)
        self.pool = WorkerPool(self.config.gpus, argv=worker_argv or WORKER_ARGV, watchdog_s=self.config.watchdog_s,
                               startup_timeout_s=self.config.startup_timeout_s)
        self.info = self.pool.start()
        # Processes, not threads: instrumenting a variant parses and prints PTX in Python, which would
        # serialise on the GIL. spawn, not fork: the pool's watchdog threads are already running.
        self.executor = cf.ProcessPoolExecutor(self.config.compile_workers or os.cpu_count() or 4,
                                               mp_context=multiprocessing.get_context("spawn"))

    def provenance(self) -> dict:
        return {"gpu": self.info.get("gpu", "?"), "driver": self.info.get("driver", "?"), "ptxas": self.ptxas_version}

    def _record(self, spec: KernelSpec, v: Variant, **kw) -> Record:
        base = {"kernel": spec.kernel, "ptx_sha256": "" if v.recipe else v.ptx_sha256, "cubin_sha256": "", "gpu": self.info["gpu"],
                "driver": self.info["driver"], "ptxas": self.ptxas_version,
                "config_hash": self.config.config_hash(), "actions": tuple(v.actions), "valid": False}
        base.update(kw)
        return self.store.insert(Record(**base))

    def measure(self, spec: KernelSpec, variants: list[Variant], *,
                baseline_ptx: str | None = None) -> list[Record]:
        return self.measure_many([(spec, variants, baseline_ptx)])[0]

    def measure_many(self, groups: list[tuple[KernelSpec, list[Variant], str | None]]) -> list[list[Record]]:
        """Several kernels' variants in one pipelined run: ptxas for all of them runs on the thread pool
        while the GPU measures whichever is compiled first. Returns one list of records per group."""
        cfg, ch, gpu = self.config, self.config.config_hash(), self.info["gpu"]
        results: list[list[Record | None]] = [[None] * len(vs) for _, vs, _ in groups]
        bases: dict[int, cf.Future] = {}
        futs: dict[cf.Future, tuple[int, int]] = {}
        for g, (spec, variants, baseline_ptx) in enumerate(groups):
            if baseline_ptx is None:
                baseline_ptx = next((v.ptx for v in variants if not v.actions), None)
                if baseline_ptx is None:
                    raise MeasureError(f"{spec.kernel}: no baseline PTX (pass baseline_ptx or a variant with no actions)")
            todo = []
            for i, v in enumerate(variants):
                rec = None if v.recipe else self.store.latest(spec.kernel, v.ptx_sha256, ch, gpu=gpu,
                                                              ptxas=self.ptxas_version)
                if rec is not None and (rec.valid or not self.retry_invalid):
                    results[g][i] = rec
                else:
                    todo.append(i)
            if todo:
                bases[g] = self.executor.submit(compile_variant, baseline_ptx, spec, cfg.arch, self.ptxas, False)
                for i in todo:
                    v = variants[i]
                    recipe = (v.recipe, v.actions) if v.recipe else None
                    futs[self.executor.submit(compile_variant, v.ptx, spec, cfg.arch, self.ptxas, True, recipe)] = (g, i)
        compiled: dict[tuple[int, int], Compiled] = {}
        first_of: dict[tuple[str, str], tuple[int, int]] = {}  # (kernel, cubin sha) -> job measuring it
        copies: list[tuple[tuple[int, int], tuple[int, int]]] = []

        def jobs():
            for fut in cf.as_completed(futs):
                g, i = futs[fut]
                spec, variants, _ = groups[g]
                v = variants[i]
                try:
                    base = bases[g].result()
                except PtxasError as e:
                    results[g][i] = self._record(spec, v, reason="baseline_ptxas_error", log=f"{e}\n{e.log}")
                    continue
                try:
                    c = fut.result()
                except PtxasError as e:
                    results[g][i] = self._record(spec, v, reason="ptxas_error", log=f"{e}\n{e.log}")
                    continue
                except MeasureError as e:  # a recipe that does not realise
                    results[g][i] = self._record(spec, v, reason="illegal", log=str(e))
                    continue
                compiled[g, i] = c
                prior = self.store.latest_by_cubin(c.sha, ch, kernel=spec.kernel, gpu=gpu)
                if prior is not None and (prior.valid or not self.retry_invalid):
                    results[g][i] = self._copy(spec, v, c, prior)
                    continue
                if (spec.kernel, c.sass) in first_of:  # same machine code as a variant of this run
                    copies.append(((g, i), first_of[spec.kernel, c.sass]))
                    continue
                first_of[spec.kernel, c.sass] = (g, i)
                yield {"id": f"{g}:{i}", "op": "measure", "spec": spec.to_json(), "config": cfg.to_json(),
                       "baseline": _b64(base.sha, base.cubin), "variant": _b64(c.sha, c.cubin),
                       "cycles": _b64(*c.cycles) if c.cycles else None, "_base": base.sha}

        def on_result(job: dict, ans: dict) -> None:
            g, i = map(int, job["id"].split(":"))
            spec, variants, _ = groups[g]
            c = compiled[g, i]
            cyc, tm = ans.get("cycles") or {}, ans.get("time_ms") or {}
            log = "\n".join(x for x in (ans.get("log", ""), c.note) if x)
            results[g][i] = self._record(
                spec, variants[i], ptx_sha256=c.ptx_sha, cubin_sha256=c.sha, valid=bool(ans.get("valid")), reason=ans.get("reason", ""),
                log=log, cycles_median=cyc.get("median"), cycles_iqr=cyc.get("iqr"),
                time_ms_median=tm.get("median"), time_ms_iqr=tm.get("iqr"), registers=c.registers,
                spills=c.spills, extra={"cycles_n": cyc.get("n"), "time_n": tm.get("n"),
                                        "baseline_cubin": job["_base"], "device": ans.get("device")})

        if futs:
            kernels = list(dict.fromkeys(spec.kernel for spec, _, _ in groups))  # each kernel: one GPU
            turn = {k: i for i, k in enumerate(kernels)}
            self.pool.run(jobs(), on_result, worker_of=(lambda job: turn[job["spec"]["kernel"]])
                          if cfg.one_gpu_per_kernel else None)
        for (g, i), src in copies:
            results[g][i] = self._copy(groups[g][0], groups[g][1][i], compiled[g, i], results[src[0]][src[1]])
        return results  # type: ignore[return-value]

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
                       "baseline": _b64(base.sha, base.cubin), "rounds": rounds, "realloc": realloc,
                       "candidates": [[_b64(c.sha, c.cubin), _b64(*c.cycles)] for c in cands]}

        def on_result(job: dict, ans: dict) -> None:
            g = int(job["id"])
            n = len(groups[g][2])
            out[g] = ans.get("results") or [{"valid": False, "reason": ans.get("reason", "worker_error"),
                                             "log": ans.get("log", "")} for _ in range(n)]

        self.pool.run(jobs(), on_result, timeout_of=lambda job: self.config.watchdog_s * max(1, len(job["candidates"])))
        return out

    def _copy(self, spec: KernelSpec, v: Variant, c: Compiled, prior: Record) -> Record:
        return self._record(
            spec, v, ptx_sha256=c.ptx_sha, cubin_sha256=c.sha, valid=prior.valid, reason=prior.reason,
            log=f"same cubin as ptx {prior.ptx_sha256} (record {prior.id}): not measured again",
            cycles_median=prior.cycles_median, cycles_iqr=prior.cycles_iqr, time_ms_median=prior.time_ms_median,
            time_ms_iqr=prior.time_ms_iqr, registers=c.registers, spills=c.spills,
            extra={**prior.extra, "dedup_of": prior.id})

    def close(self) -> None:
        self.pool.close()
        self.executor.shutdown(wait=False, cancel_futures=True)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


class ReplayBackend:
    """Answers from the atlas (`atlas.sqlite` beside the store, if there is one) for the kernels and sets it
    covers, so that one kernel's answers all come from one run; else from the store: the newest record for
    (kernel, PTX sha256, config) on any GPU."""

    def __init__(self, store_path: str | Path, config: MeasureConfig | None = None, *, gpu: str | None = None,
                 atlas: str | Path | None = None):
        self.config = config or MeasureConfig()
        self.path = Path(store_path)
        if not self.path.is_file():
            raise MeasureError(f"replay store {self.path} does not exist",
                               repro=f"python -m chronos.stages.baseline --backend gpu --store {self.path}")
        self.store = Store(self.path)
        self.gpu = gpu
        self._last: Record | None = None
        atlas = Path(atlas) if atlas else self.path.parent / "atlas.sqlite"
        self.atlas = None
        if atlas.is_file() and gpu is None:
            from chronos.search.atlas import AtlasReplay

            self.atlas = AtlasReplay(atlas)

    def provenance(self) -> dict:
        r = self._last
        return {"gpu": r.gpu, "driver": r.driver, "ptxas": r.ptxas} if r else {"gpu": "?", "driver": "?", "ptxas": "?"}

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

    def close(self) -> None:
        self.store.close()
        if self.atlas:
            self.atlas.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def make_backend(name: str, store_path: str | Path, config: MeasureConfig | None = None, **kw):
    """"gpu", "replay" or "auto" (gpu when `cuda_gpu_available()`, else replay)."""
    if name == "auto":
        from chronos.toolchain import cuda_gpu_available

        name = "gpu" if cuda_gpu_available() else "replay"
    if name == "gpu":
        return GpuBackend(store_path, config, **kw)
    if name == "replay":
        return ReplayBackend(store_path, config, **{k: v for k, v in kw.items() if k == "gpu"})
    raise MeasureError(f"measure.backend must be gpu, replay or auto, not {name!r}")

"""`compare`: one decision's contenders measured side by side (GPU) or replayed from the store.

    comparison = backend.compare(spec, [baseline, challenger, ...], timing)

variants[0] must be the baseline: its cubin is the verification reference and it is timed again as
contender 0 in the same rounds. On the GPU the contenders are compiled on the ptxas pool, sent to one worker
as one job (chronos.measure.timing.compare) and the answer is stored, keyed by the contenders' PTX hashes in
order and the timing config; a stored comparison is not measured again (runs resume), except one whose
baseline was invalid when the backend has `retry_invalid`, and none while it has `remeasure` (its newest
record is then the one replay answers with). A fault in a worker
loses the job, not the run: each challenger is then tried alone beside the baseline, the ones that fault are
marked `fault:<CUDA error>` and the rest are compared again together.
"""

from __future__ import annotations

import concurrent.futures as cf
from pathlib import Path
from typing import Any, Protocol

from chronos.config import MeasureConfig, TimingConfig
from chronos.errors import ComparisonMissError, MeasureError, PtxasError
from chronos.kernels.spec import KernelSpec
from chronos.kernels.variant import Variant
from chronos.measure.comparison import Comparison, Contender, contenders_key
from chronos.measure.compile import compile_variant
from chronos.measure.store import Store
from chronos.measure.worker import encode_cubin


class ReplaySide(Protocol):
    """What a replayed comparison reads of its backend (chronos.measure.backend.ReplayBackend)."""

    config: MeasureConfig
    store: Store
    gpu: str | None
    not_after: str | None
    path: Path


class GpuSide(Protocol):
    """What a measured comparison uses of its backend (chronos.measure.backend.GpuBackend)."""

    config: MeasureConfig
    store: Store
    executor: cf.Executor
    pool: Any
    ptxas: str | None
    retry_invalid: bool
    remeasure: bool

    def provenance(self) -> dict: ...


def _labels(variants: list[Variant]) -> list[str]:
    return ["+".join(v.actions) or "baseline" for v in variants]


def _check(spec: KernelSpec, variants: list[Variant]) -> None:
    if not variants or variants[0].actions:
        raise MeasureError(f"{spec.kernel}: a comparison's first contender must be the baseline (no actions)")
    if variants[0].launch is not None:  # the worker runs its reference with the spec's geometry
        raise MeasureError(f"{spec.kernel}: a comparison's baseline runs with its spec's launch geometry; "
                           "give it no launch of its own")


def replay_compare(backend: ReplaySide, spec: KernelSpec, variants: list[Variant],
                   timing: TimingConfig) -> Comparison:
    _check(spec, variants)
    th = timing.timing_hash(backend.config.config_hash())
    key = contenders_key([v.key for v in variants])
    hit = backend.store.latest_comparison(spec.kernel, key, th, gpu=backend.gpu, not_after=backend.not_after)
    if hit is None:
        raise ComparisonMissError(spec.kernel, _labels(variants), key, th, backend.path)
    return Comparison.from_json({**hit[0], "provenance": hit[1]})


def gpu_compare(backend: GpuSide, spec: KernelSpec, variants: list[Variant],
                timing: TimingConfig) -> Comparison:
    _check(spec, variants)
    cfg = backend.config
    th = timing.timing_hash(cfg.config_hash())
    key = contenders_key([v.key for v in variants])
    prov = backend.provenance()
    hit = backend.store.latest_comparison(spec.kernel, key, th, gpu=prov["gpu"])
    if hit is not None:
        cmp = Comparison.from_json({**hit[0], "provenance": hit[1]})
        # retry_invalid: a comparison whose baseline was invalid measured nothing; measure it again (the
        # newest record is the one replay answers with)
        # a comparison assembled by another ptxas timed other cubins (knob stages switch ptxas per workload)
        same_ptxas = hit[1].get("ptxas") in (None, prov["ptxas"])
        if (cmp.baseline.valid or not backend.retry_invalid) and not backend.remeasure and same_ptxas:
            return cmp
    futs = {}
    for v in variants:  # copies of one PTX (the A/A test) compile once
        if v.ptx_sha256 not in futs:
            futs[v.ptx_sha256] = backend.executor.submit(compile_variant, v.ptx, spec, cfg.arch,
                                                         backend.ptxas, False)
    cs, compiled = [], {}
    for i, v in enumerate(variants):
        c = Contender(tuple(v.actions), v.ptx_sha256, False)
        try:
            comp = compiled[i] = futs[v.ptx_sha256].result()
            c.cubin_sha256, c.registers, c.spills = comp.sha, comp.registers, comp.spills
        except PtxasError as e:
            c.reason, c.log = "ptxas_error", f"{e}\n{e.log}"[:4000]
        cs.append(c)
    if 0 not in compiled:
        for c in cs:
            c.reason = c.reason or "baseline_ptxas_error"
        cmp = Comparison(spec.kernel, cs)
    else:
        cmp = _measure(backend, spec, timing, cs, compiled, [v.launch for v in variants])
    body = cmp.to_json()
    body.pop("provenance")
    created = backend.store.insert_comparison(spec.kernel, key, th, prov, body)
    cmp.provenance = {**prov, "created_at": created}
    return cmp


def _job(backend, spec, timing, base, comps: list) -> dict:
    """One worker answer for `comps` (pairs of Compiled and its Launch or None) beside `base` (a fault or
    dead worker gives an answer without `contenders`)."""
    answers = []
    job = {"id": "0", "op": "compare", "spec": spec.to_json(), "config": backend.config.to_json(),
           "timing": timing.to_json(), "baseline": encode_cubin(base.sha, base.cubin),
           "contenders": [encode_cubin(c.sha, c.cubin, launch) for c, launch in comps]}
    budget = backend.config.watchdog_s * max(2, len(comps))
    backend.pool.run([job], lambda _job, ans: answers.append(ans), timeout_of=lambda _job: budget)
    return answers[0] if answers else {"reason": "worker_error", "log": "no answer"}


def _fill(cs: list[Contender], idx: list[int], ans: dict) -> None:
    for i, a in zip(idx, ans["contenders"], strict=True):
        c = cs[i]
        c.valid, c.reason, c.log = bool(a["valid"]), a.get("reason", ""), a.get("log", "")
        c.event_ms, c.graph_ms = a.get("event_ms"), a.get("graph_ms")


def _measure(backend, spec, timing, cs: list[Contender], compiled: dict, launches: list) -> Comparison:
    idx = sorted(compiled)
    base = compiled[0]
    ans = _job(backend, spec, timing, base, [(compiled[i], launches[i]) for i in idx])
    if "contenders" not in ans and len(idx) > 2:  # isolate the contenders that fault, keep the others
        for i in idx[1:]:
            alone = _job(backend, spec, timing, base, [(base, None), (compiled[i], launches[i])])
            if "contenders" not in alone:
                cs[i].reason, cs[i].log = alone.get("reason", "worker_error"), alone.get("log", "")[:4000]
        idx = [i for i in idx if not cs[i].reason]
        ans = _job(backend, spec, timing, base, [(compiled[i], launches[i]) for i in idx])
    if "contenders" not in ans:
        for i in idx:
            cs[i].reason, cs[i].log = ans.get("reason", "worker_error"), ans.get("log", "")[:4000]
        return Comparison(spec.kernel, cs)
    _fill(cs, idx, ans)
    return Comparison(spec.kernel, cs, ans.get("primary", "event"), ans.get("probe_ms"),
                      ans.get("flush_graph_ms"))

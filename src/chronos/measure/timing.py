"""Side-by-side timing on the GPU: every contender of one decision, verified, then timed in interleaved rounds
on one allocation, with the L2 state explicit and host delays kept out of every interval.

Runs inside a measurement worker (GpuRunner's context). Per round, each valid contender (in a seeded shuffled
order) gets
  * `reps` single-launch samples: [flush L2 if cold, behind a demote of the kernel's buffers with
    timing.l2_demote (chronos.measure.l2)] → spin → start event → launch → end event. The spin
    kernel (%globaltimer, `spin_us`) keeps the GPU busy while the host enqueues start, launch and end, so a
    slow or preempted host never lands inside the interval (experiments/measurement/launch_gap.py: the flush
    alone hides host delays up to ~22 µs only);
  * for short kernels, `graph_reps` samples of a CUDA graph of `graph_launches` launches (each preceded by
    its flush when cold), timed the same way; the per-launch time subtracts a flush-only graph measured in
    the same round. A graph replays launches without the host, so a sub-µs body is not hidden under
    launch overhead.
The round's value is the median of its samples; verdicts bootstrap over rounds (chronos.measure.verdicts).
Each contender is loaded as its own module, so a copy of the baseline (the A/A test) is a second load.

pycuda 2026.1 has no graph API: capture goes through the driver (libcuda) with ctypes, on a pycuda stream.
"""

from __future__ import annotations

import ctypes
import math
import random
import statistics

import numpy as np

from chronos.config import MeasureConfig, TimingConfig
from chronos.errors import CudaFault
from chronos.kernels.spec import KernelSpec
from chronos.measure.l2 import Demoter
from chronos.measure.runner import buffer_bytes
from chronos.measure.verdicts import ratio_estimate
from chronos.measure.verify_device import DeviceDraws, helper_kernel, verify_all

SPIN_ENTRY = "chronos_spin"
SPIN_PTX = """.version 8.0
.target sm_89
.address_size 64
.visible .entry chronos_spin(.param .u64 chronos_spin_ns)
{
    .reg .pred %p<2>;
    .reg .b64 %rd<5>;
    ld.param.u64 %rd1, [chronos_spin_ns];
    mov.u64 %rd2, %globaltimer;
$L_spin:
    mov.u64 %rd3, %globaltimer;
    sub.s64 %rd4, %rd3, %rd2;
    setp.lt.u64 %p1, %rd4, %rd1;
    @%p1 bra $L_spin;
    ret;
}
"""
_CAPTURE_RELAXED = 2  # CU_STREAM_CAPTURE_MODE_RELAXED


class Graphs:
    """The few CUDA driver graph calls pycuda lacks: capture a stream into an executable graph, launch it."""

    def __init__(self):
        self.cu = ctypes.CDLL("libcuda.so.1")

    def _ok(self, rc: int, what: str) -> None:
        if rc:
            name = ctypes.c_char_p()
            self.cu.cuGetErrorName(rc, ctypes.byref(name))
            raise CudaFault((name.value or b"CUDA_ERROR_UNKNOWN").decode(), f"{what} failed ({rc})",
                            sticky=False)

    def capture(self, stream: int, enqueue) -> ctypes.c_void_p:
        graph, exe = ctypes.c_void_p(), ctypes.c_void_p()
        self._ok(self.cu.cuStreamBeginCapture_v2(ctypes.c_void_p(stream), _CAPTURE_RELAXED), "begin capture")
        try:
            enqueue()
        finally:
            self._ok(self.cu.cuStreamEndCapture(ctypes.c_void_p(stream), ctypes.byref(graph)), "end capture")
        try:
            self._ok(self.cu.cuGraphInstantiateWithFlags(ctypes.byref(exe), graph, ctypes.c_ulonglong(0)),
                     "graph instantiate")
        finally:
            self.cu.cuGraphDestroy(graph)
        return exe

    def launch(self, exe: ctypes.c_void_p, stream: int) -> None:
        self._ok(self.cu.cuGraphLaunch(exe, ctypes.c_void_p(stream)), "graph launch")

    def destroy(self, exe: ctypes.c_void_p) -> None:
        self.cu.cuGraphExecDestroy(exe)


def _stream_handle(stream) -> int:
    h = getattr(stream, "handle", None)
    return int(h if h is not None else stream.handle_int)


class _Timer:
    """The timed protocols of one comparison, on one stream."""

    def __init__(self, runner, mcfg: MeasureConfig, tcfg: TimingConfig, spans: list[tuple[int, int]]):
        self.r, self.drv, self.t = runner, runner.drv, tcfg
        self.cold = tcfg.l2 == "cold"
        self.flush_bytes = mcfg.l2_flush_bytes
        self.stream = runner._call(self.drv.Stream)
        self.handle = _stream_handle(self.stream)
        if self.cold and runner.flush is None:
            runner.flush = runner._call(self.drv.mem_alloc, self.flush_bytes)
        self.spin = helper_kernel(runner, SPIN_PTX, SPIN_ENTRY, "Q")
        self.spin_ns = np.uint64(int(tcfg.spin_us * 1000))
        self.graphs: Graphs | None = None
        self.demoter = Demoter(runner, spans) if self.cold and tcfg.l2_demote else None

    def _flush(self) -> None:
        if self.demoter is not None:
            self.demoter.launch(self.stream)
        self.drv.memset_d8_async(self.r.flush, 0xA5, self.flush_bytes, self.stream)

    def _guard(self) -> None:
        if self.t.spin_us:
            self.spin.prepared_async_call((1, 1, 1), (1, 1, 1), self.stream, self.spin_ns)

    def _timed(self, n: int, body) -> list[float]:
        """n intervals (ms) of start event → body() → end event, each behind the flush (cold) and spin."""
        evs = []
        for _ in range(n):
            if self.cold:
                self._flush()
            self._guard()
            start, end = self.drv.Event(), self.drv.Event()
            start.record(self.stream)
            body()
            end.record(self.stream)
            evs.append((start, end))
        self.r._call(self.stream.synchronize)
        return [end.time_since(start) for start, end in evs]

    def single(self, k, args: list, n: int) -> list[float]:
        return self.r._call(self._timed, n, lambda: k.launch(args, self.stream))

    def graph(self, k, args: list | None):
        """An executable graph of graph_launches launches of k (each behind its flush when cold); k None:
        the flushes alone (what the per-launch time subtracts)."""
        if self.graphs is None:
            self.graphs = Graphs()

        def enqueue():
            for _ in range(self.t.graph_launches):
                if self.cold:
                    self._flush()
                if k is not None:
                    k.launch(args, self.stream)
        return self.r._call(self.graphs.capture, self.handle, enqueue)

    def graph_samples(self, exe, n: int) -> list[float]:
        per = self.t.graph_launches
        return [x / per for x in self.r._call(self._timed, n, lambda: self.graphs.launch(exe, self.handle))]


def _median(xs: list[float]) -> float:
    return float(statistics.median(xs))


def compare(runner, spec: KernelSpec, mcfg: MeasureConfig, tcfg: TimingConfig, baseline: tuple[str, bytes],
            contenders: list[tuple[str, bytes]]) -> dict:
    """Verify every contender against `baseline` (sha, cubin) on mcfg.input_draws draws, then time the valid
    ones side by side. Returns plain JSON: per contender valid/reason/log and per-round `event_ms` and
    `graph_ms` (None unless graphs were used), and `primary`: the series verdicts use."""
    from chronos.kernels.variant import launched_as
    from chronos.measure.runner import _Kernel

    runner._warm_once(mcfg)
    bufs = runner._alloc(spec)
    draws = DeviceDraws(runner, spec, mcfg)
    graphs: list = []
    timer = None
    try:
        args = runner._args(spec, bufs)
        base_k = runner._call(_Kernel, runner.drv, baseline[1], spec, False)
        ks = [runner._call(_Kernel, runner.drv, c[1], launched_as(spec, c[2] if len(c) > 2 else None), False)
              for c in contenders]
        out = verify_all(spec, mcfg, draws, base_k, ks, bufs, args)
        draws.restore(bufs, 0)
        timer = _Timer(runner, mcfg, tcfg, [(bufs[a.name], buffer_bytes(a.nbytes)) for a in spec.args
                                            if a.kind == "buffer"])
        live = [i for i, o in enumerate(out) if o["valid"]]
        for i in live:  # warm-up: module load, instruction caches
            timer.single(ks[i], args, 2)
        probe = _median(timer.single(ks[live[0]], args, 5)) if live else 0.0
        use_graph = bool(live) and probe * 1000 < tcfg.graph_below_us
        exes = {}
        if use_graph:
            exes = {i: timer.graph(ks[i], args) for i in live}
            if timer.cold:
                exes[-1] = timer.graph(None, None)
            graphs = list(exes.values())
        series = _rounds(timer, tcfg, ks, args, live, exes, mcfg.seed)
        for i in live:
            out[i]["event_ms"] = series["event"][i]
            out[i]["graph_ms"] = series["graph"].get(i)
        return {"contenders": out, "primary": "graph" if use_graph else "event", "probe_ms": probe,
                "flush_graph_ms": series["graph"].get(-1)}
    finally:
        if timer is not None and timer.graphs is not None:
            for exe in graphs:
                timer.graphs.destroy(exe)
        draws.free()
        runner._free(bufs.values())


def _one_round(timer: _Timer, tcfg: TimingConfig, ks, args, live, exes, seed: int, r: int, event, graph):
    order = [*live, *([-1] if -1 in exes else [])]
    random.Random(seed * 7919 + r).shuffle(order)
    for i in order:
        if i >= 0:
            event[i].append(_median(timer.single(ks[i], args, tcfg.reps)))
        if i in exes:
            graph[i].append(_median(timer.graph_samples(exes[i], tcfg.graph_reps)))


def _per_launch(graph: dict) -> dict:
    """Graph series minus the same round's flush-only graph: the kernel's per-launch time alone."""
    if -1 not in graph:
        return dict(graph)
    flush = graph[-1]
    out = {i: [g - f for g, f in zip(v, flush, strict=True)] for i, v in graph.items() if i != -1}
    out[-1] = flush
    return out


def too_wide(series: dict[int, list[float]], live: list[int], tcfg: TimingConfig) -> bool:
    """Whether some contender's interval against the first live one (the baseline) is still wider than
    timing.target_halfwidth (half the log-width): the adaptive protocol then runs more rounds."""
    if len(live) < 2:
        return False
    base = series[live[0]]
    for i in live[1:]:
        est = ratio_estimate(base, series[i], confidence=tcfg.confidence, resamples=1000, seed=i)
        if (math.log(est.high) - math.log(est.low)) / 2 > tcfg.target_halfwidth:
            return True
    return False


def _rounds(timer: _Timer, tcfg: TimingConfig, ks, args, live: list[int], exes: dict, seed: int) -> dict:
    """Interleaved rounds: per round, each live contender (and the flush-only graph) once, shuffled. With
    timing.max_rounds, batches of timing.rounds_step more rounds follow while an interval is too wide."""
    event: dict[int, list[float]] = {i: [] for i in live}
    graph: dict[int, list[float]] = {i: [] for i in exes}
    r = 0
    while r < tcfg.rounds or (r < tcfg.max_rounds and too_wide(
            _per_launch(graph) if exes else event, live, tcfg)):
        for _ in range(tcfg.rounds if r < tcfg.rounds else min(tcfg.rounds_step, tcfg.max_rounds - r)):
            _one_round(timer, tcfg, ks, args, live, exes, seed, r, event, graph)
            r += 1
    return {"event": event, "graph": _per_launch(graph)}

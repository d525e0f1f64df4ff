"""Does host-side launch latency leak into the event-timed wall time? (GPU; issue #12, the drift question.)

    python experiments/measurement/launch_gap.py [--kernels REGEX] [--reps 200] [--json out.json]

The measurement protocol times one launch as: L2 flush (a 128 MiB memset), start event, launch, end event.
The start event fires on the GPU as soon as the flush ends; if the host has not enqueued the launch by
then, the gap until it does is counted as kernel time. A host that is slower, busier (ptxas processes
compiling beside the worker) or simply a different machine then shifts every short kernel's time by a
constant, while its %clock64 cycles stay put — the signature of the ~+1 µs baseline drift in #12.

Per kernel, side by side in interleaved rounds on one allocation:
  flush        the current protocol (flush, start, launch, end)
  flush+d      the same with the host busy-waiting d µs between the start event and the launch
               (a stand-in for a slower or busier host)
  spin         flush, then a %globaltimer spin kernel that keeps the GPU busy for `--spin-us` while the host
               enqueues start, launch, end: the interval holds the kernel only, whatever the host does
  spin+d       the spin protocol with the same host delay: it should not move
  burst        warm L2, N launches back to back between one event pair, time / N (launch overhead amortised)
Prints median and IQR (µs) per protocol; the differences to `spin` say how much host time each one counts.
Everything runs twice: on an idle host, and with `--hogs` busy processes on the host's CPUs (as when the
measurement's ptxas pool compiles beside the worker).
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import re
import statistics
import time
from pathlib import Path

from chronos.config import MeasureConfig
from chronos.kernels.spec import load_specs, ptx_path
from chronos.measure.runner import GpuRunner
from chronos.measure.timing import SPIN_PTX

SPECS = "data/kernels/{family}/specs.json"


def _busy_wait(us: float) -> None:
    end = time.perf_counter() + us * 1e-6
    while time.perf_counter() < end:
        pass


def _hog(stop) -> None:
    while not stop.is_set():
        pass


def _quantiles(xs: list[float]) -> dict:
    q = statistics.quantiles(xs, n=4)
    return {"median_us": statistics.median(xs), "iqr_us": q[2] - q[0], "n": len(xs)}


class Protocols:
    """The timing protocols above, on one runner, kernel and argument list."""

    def __init__(self, runner, kernel, args, cfg, spin_us: float):
        from chronos.toolchain import assemble

        self.r, self.k, self.args, self.cfg = runner, kernel, args, cfg
        drv = runner.drv
        mod = drv.module_from_buffer(assemble(SPIN_PTX, cfg.arch, name="spin").cubin)
        self.spin = mod.get_function("chronos_spin")
        self.spin_ns = int(spin_us * 1000)
        self._mod = mod
        if runner.flush is None:
            runner.flush = drv.mem_alloc(cfg.l2_flush_bytes)

    def one(self, spin: bool, delay_us: float) -> float:
        drv, r = self.r.drv, self.r
        start, end = drv.Event(), drv.Event()
        drv.memset_d8_async(r.flush, 0xA5, self.cfg.l2_flush_bytes)
        if spin:
            import numpy as np

            self.spin(np.uint64(self.spin_ns), block=(1, 1, 1), grid=(1, 1, 1))
        start.record()
        if delay_us:
            _busy_wait(delay_us)
        self.k.launch(self.args)
        end.record()
        end.synchronize()
        return end.time_since(start) * 1000.0

    def burst(self, n: int) -> float:
        drv = self.r.drv
        start, end = drv.Event(), drv.Event()
        start.record()
        for _ in range(n):
            self.k.launch(self.args)
        end.record()
        end.synchronize()
        return end.time_since(start) * 1000.0 / n


def measure_kernel(runner, spec, ptx: str, cfg, args) -> dict:
    import random

    from chronos.measure.backend import compile_variant

    comp = compile_variant(ptx, spec, cfg.arch, None, with_cycles=False)
    k = runner._kernel(comp.sha, comp.cubin, spec)
    bufs = runner._alloc(spec)
    try:
        runner._upload(spec, bufs, runner._inputs(spec, cfg.seed, 0, cfg.poison_byte), cfg.poison_byte)
        p = Protocols(runner, k, runner._args(spec, bufs), cfg, args.spin_us)
        delayed = [f"+{d:g}" for d in args.delays]
        names = ["flush", *(f"flush{d}" for d in delayed), "spin", *(f"spin{d}" for d in delayed)]
        samples: dict[str, list[float]] = {n: [] for n in [*names, "burst"]}
        for _ in range(5):  # warm-up
            p.one(False, 0)
        per_round = max(1, args.reps // args.rounds)
        for rnd in range(args.rounds):
            order = list(names)
            random.Random(rnd).shuffle(order)
            for name in order:
                spin = name.startswith("spin")
                delay = float(name.split("+")[1]) if "+" in name else 0.0
                samples[name] += [p.one(spin, delay) for _ in range(per_round)]
            samples["burst"].append(p.burst(args.burst))
        return {name: _quantiles(xs) for name, xs in samples.items() if len(xs) >= 2}
    finally:
        runner._free(bufs.values())


def _run_conditions(runner, selected, cfg, args, out: dict) -> None:
    """Every selected kernel on an idle host, then with `args.hogs` busy host processes."""
    for condition in ("idle", "busy"):
        ctx = multiprocessing.get_context("spawn")
        stop = ctx.Event()
        n_hogs = args.hogs if condition == "busy" else 0
        hogs = [ctx.Process(target=_hog, args=(stop,)) for _ in range(n_hogs)]
        for h in hogs:
            h.start()
        try:
            for specs_json, spec in selected:
                res = measure_kernel(runner, spec, ptx_path(specs_json, spec).read_text(), cfg, args)
                out.setdefault(condition, {})[spec.kernel] = res
                base = res["spin"]["median_us"]
                row = "  ".join(f"{n} {v['median_us']:7.2f} ({v['median_us'] - base:+6.2f})"
                                for n, v in res.items())
                print(f"{condition:4s} {spec.kernel:44s} {row}", flush=True)
        finally:
            stop.set()
            for h in hogs:
                h.join()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--kernels", default=r"gemm_tile\(2,2,2\)|gemm_tile\(8,8,8\)|rowmax_f32|layernorm_f16|"
                                         r"softmax_f32|matmul_f16_m1024|silu_mul_f16")
    ap.add_argument("--reps", type=int, default=200)
    ap.add_argument("--rounds", type=int, default=10)
    ap.add_argument("--delays", type=float, nargs="*", default=[10.0, 40.0])
    ap.add_argument("--spin-us", type=float, default=100.0)
    ap.add_argument("--burst", type=int, default=100)
    ap.add_argument("--hogs", type=int, default=os.cpu_count() or 2, help="busy host processes (busy pass)")
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    cfg = MeasureConfig()
    runner = GpuRunner(0)
    runner.warm_up(cfg.gpu_warmup_s)
    selected = []
    for family in ("gemm_tile", "triton"):
        specs_json = Path(SPECS.format(family=family))
        selected += [(specs_json, s) for s in load_specs(specs_json) if re.search(args.kernels, s.kernel)]
    out: dict = {}
    try:
        _run_conditions(runner, selected, cfg, args, out)
    finally:
        runner.close()
    if args.json:
        args.json.write_text(json.dumps({"config": vars(args) | {"json": str(args.json)}, "results": out},
                                        indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

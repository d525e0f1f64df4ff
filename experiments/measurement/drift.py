"""Why did every baseline move ~+1 µs between two device runs (#12, item 5)? (GPU)

    python experiments/measurement/drift.py [--kernels REGEX] [--json out.json] [--device 0]

One process, one GPU. The same kernels are timed under conditions one run can differ from another in:
  fresh      right after the CUDA context exists, no warm-up (clocks ramping from idle)
  warm       after `--warm-s` seconds of memsets (clocks settled)
  modules    with 64 more modules loaded into the context (a long pipeline run's kernel cache)
  host_busy  with one ptxas process per host core compiling beside the worker
  sustained  after `--sustain-s` seconds of back-to-back GEMM work (a hot GPU)
and under three protocols: `old` (flush, start, launch, end: the pipeline's protocol until #12), `spin`
(flush, spin guard, start, launch, end) and `graph` (per-launch time of a CUDA graph of launches, flush
inside, flush-only graph subtracted) — see chronos.measure.timing. Every condition also records the GPU's
SM clock and temperature (nvidia-smi). Run it on two machines (two device calls, or two kinds) and compare:
an absolute offset that follows the machine and not the condition is a machine property, which only
side-by-side ratios are immune to.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import time
from pathlib import Path

from chronos.config import MeasureConfig, TimingConfig
from chronos.kernels.spec import load_specs, ptx_path
from chronos.measure.runner import GpuRunner, _Kernel
from chronos.measure.timing import _Timer
from chronos.measure.verify_device import DeviceDraws
from chronos.toolchain import assemble, find_ptxas

DEFAULT = ("silu_mul_f16_n4096|gelu_erf|rowmax_f32|softmax_r32_c128|layernorm_f16|rmsnorm_bf16|"
           "matmul_f16_m1024|attention_d64_kv64|attention_d64_kv1024|cross_entropy_bf16")


def _smi() -> str:
    try:
        query = "--query-gpu=index,clocks.sm,clocks.mem,temperature.gpu,power.draw"
        done = subprocess.run(["nvidia-smi", query, "--format=csv,noheader"], capture_output=True,
                              check=False, text=True, timeout=20)
        return done.stdout.strip()
    except (OSError, subprocess.SubprocessError) as e:
        return f"nvidia-smi: {e}"


def _measure(runner, timer, kernels, reps: int) -> dict:
    out = {}
    for name, (spec, k, bufs, args) in kernels.items():
        old = runner._time_samples(k, args, runner.mcfg, reps, 3)
        spin = timer.single(k, args, reps)
        exe = timer.graph(k, args)
        flush = timer.graph(None, None)
        g = [a - b for a, b in zip(timer.graph_samples(exe, 10), timer.graph_samples(flush, 10), strict=True)]
        for e in (exe, flush):
            timer.graphs.destroy(e)
        out[name] = {p: statistics.median(v) * 1000 for p, v in (("old", old), ("spin", spin), ("graph", g))}
    return out


def _hogs(ptx: str, n: int) -> list[subprocess.Popen]:
    """n shell loops that run ptxas on `ptx` over and over (a compile pool beside the worker)."""
    ptxas = str(find_ptxas())
    loop = f"while true; do {ptxas} -arch=sm_90a -O3 {ptx} -o /dev/null; done"
    return [subprocess.Popen(["bash", "-c", loop],
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL) for _ in range(n)]


def _sustain(runner, kernels, seconds: float) -> None:
    big = [v for n, v in kernels.items() if "matmul" in n or "attention" in n] or list(kernels.values())
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        for spec, k, bufs, args in big:
            for _ in range(50):
                k.launch(args)
        runner.ctx.synchronize()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--kernels", default=DEFAULT)
    ap.add_argument("--reps", type=int, default=100)
    ap.add_argument("--warm-s", type=float, default=5.0)
    ap.add_argument("--sustain-s", type=float, default=30.0)
    ap.add_argument("--device", type=int, default=0)
    ap.add_argument("--json", type=Path)
    a = ap.parse_args()
    specs_json = Path("data/kernels/triton/specs.json")
    mcfg, tcfg = MeasureConfig(), TimingConfig()
    runner = GpuRunner(a.device)
    runner.mcfg = mcfg
    report = {"info": runner.info(), "host_cores": os.cpu_count(), "conditions": {}}
    kernels, extra = {}, []
    for spec in load_specs(specs_json):
        cubin = assemble(ptx_path(specs_json, spec).read_text(), mcfg.arch, name=spec.kernel).cubin
        if re.search(a.kernels, spec.kernel):
            bufs = runner._alloc(spec)
            args = runner._args(spec, bufs)
            k = _Kernel(runner.drv, cubin, spec, False)
            DeviceDraws(runner, spec, mcfg).restore(bufs, 0)
            kernels[spec.kernel] = (spec, k, bufs, args)
        extra.append((cubin, spec))
    timer = _Timer(runner, mcfg, tcfg)

    def condition(name: str) -> None:
        t0 = time.perf_counter()
        before = _smi()
        measured = _measure(runner, timer, kernels, a.reps)
        report["conditions"][name] = {"smi_before": before, "kernels": measured, "smi_after": _smi(),
                                      "seconds": time.perf_counter() - t0}
        print(name, json.dumps(report["conditions"][name])[:2000], flush=True)

    condition("fresh")
    runner.warm_up(a.warm_s)
    condition("warm")
    loaded = [_Kernel(runner.drv, c, s, False) for c, s in extra * 2][:64]
    condition("modules")
    del loaded
    hogs = _hogs(str(ptx_path(specs_json, extra[-1][1])), os.cpu_count() or 4)
    try:
        time.sleep(1.0)
        condition("host_busy")
    finally:
        for h in hogs:
            h.kill()
    _sustain(runner, kernels, a.sustain_s)
    condition("sustained")
    if a.json:
        a.json.write_text(json.dumps(report, indent=1))
    runner.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

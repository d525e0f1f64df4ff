"""Which phase of a measurement faults for one kernel? Each phase runs in its own process (a fault poisons
the CUDA context). GPU only.

    python experiments/measurement/diag_kernel.py KERNEL [--ptxas PATH] [--actions a+b+c] [--repeat N]

With --actions, the variant (the set realised in canonical order, as the pipeline does) instead of the
baseline; with --repeat, each phase runs N times in its process (a sporadic fault shows up as a rate).
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

PHASES = ("jit_run", "cubin_run", "padded_run", "cubin_time", "cycles_run", "full_measure")


def _spec(name: str):
    from chronos.kernels.spec import load_specs

    for specs_json in sorted(Path("data/kernels").glob("*/specs.json")):
        for s in load_specs(specs_json):
            if s.kernel == name:
                return specs_json, s
    raise SystemExit(f"no kernel {name}")


def phase(name: str, which: str, ptxas: str | None, actions: str = "", repeat: int = 1) -> None:
    from chronos.kernels.spec import ptx_path

    specs_json, spec = _spec(name)
    ptx = ptx_path(specs_json, spec).read_text()
    if actions:
        from chronos.kernels.spec import load_module
        from chronos.ptx import emit
        from chronos.search.space import realize

        ptx = emit(realize(load_module(specs_json, spec), tuple(actions.split("+"))))
    for _ in range(repeat - 1):
        _phase(spec, ptx, which, ptxas)
    _phase(spec, ptx, which, ptxas)


def _phase(spec, ptx: str, which: str, ptxas: str | None) -> None:
    from chronos.config import MeasureConfig
    from chronos.measure.inputs import stats
    from chronos.measure.instrument import instrument_text
    from chronos.measure.runner import GpuRunner
    from chronos.toolchain import assemble

    cfg = MeasureConfig(reps=5, cycle_samples=5, warmup=1)
    r = GpuRunner(0)
    if which == "full_measure":
        res = assemble(ptx, cfg.arch, ptxas=ptxas)
        inst = assemble(instrument_text(ptx, spec.entry), cfg.arch, ptxas=ptxas)
        print(which, r.measure(spec, cfg, ("b", res.cubin), ("b", res.cubin), ("c", inst.cubin)))
        r.close()
        return
    if which == "padded_run":  # 1 MiB of slack after every buffer, as a caching allocator would leave
        real = r.drv.mem_alloc
        r.drv.mem_alloc = lambda n: real(n + (1 << 20))
    bufs = r._alloc(spec)
    args = r._args(spec, bufs)
    inputs = r._inputs(spec, cfg.seed, 0, cfg.poison_byte)
    if which == "jit_run":
        import pycuda.driver as drv

        from chronos.measure.runner import _Kernel

        k = _Kernel.__new__(_Kernel)
        k.module = drv.module_from_buffer(ptx.encode())
        k.func = k.module.get_function(spec.entry)
        if spec.shared_bytes > 48 * 1024:
            k.func.set_attribute(drv.function_attribute.MAX_DYNAMIC_SHARED_SIZE_BYTES, spec.shared_bytes)
        from chronos.measure.runner import _TYPECODE

        k.func.prepare("".join("P" if a.kind in ("buffer", "null") else _TYPECODE[a.dtype]
                               for a in spec.args))
        k.spec = spec
    else:
        res = assemble(ptx, cfg.arch, ptxas=ptxas)
        k = r._kernel("x", res.cubin, spec)
    if which in ("jit_run", "cubin_run", "padded_run"):
        out = r._run_once(k, spec, bufs, args, inputs, cfg)
        print(which, "ok", {n: float(v.astype("float64").sum()) for n, v in out.items()})
    elif which == "cubin_time":
        r._upload(spec, bufs, inputs, cfg.poison_byte)
        print(which, "ok", stats(r._time_samples(k, args, cfg, cfg.reps, cfg.warmup)))
    else:
        inst = assemble(instrument_text(ptx, spec.entry), cfg.arch, ptxas=ptxas)
        r._upload(spec, bufs, inputs, cfg.poison_byte)
        print(which, "ok", stats(r._cycle_samples(
            r._kernel("y", inst.cubin, spec, extra_ptr=True), spec, args, cfg, cfg.cycle_samples, 3)))
    r.close()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("kernel")
    ap.add_argument("--ptxas")
    ap.add_argument("--phase", choices=PHASES)
    ap.add_argument("--actions", default="", help="a+b+c: the variant of this action set")
    ap.add_argument("--repeat", type=int, default=1)
    a = ap.parse_args()
    if a.phase:
        phase(a.kernel, a.phase, a.ptxas, a.actions, a.repeat)
        return
    for p in PHASES:
        cmd = [sys.executable, __file__, a.kernel, "--phase", p, "--actions", a.actions,
               "--repeat", str(a.repeat)] + (["--ptxas", a.ptxas] if a.ptxas else [])
        r = subprocess.run(cmd, check=False, capture_output=True, text=True, timeout=120)
        lines = [ln for ln in (r.stdout + r.stderr).splitlines() if ln.strip() and not ln.startswith("---")]
        print(f"{p}: exit {r.returncode}: " + " | ".join(ln[:300] for ln in lines[-4:]))


if __name__ == "__main__":
    main()

"""Where does run-to-run spread come from, and which measurement protocol removes it? GPU only.

    python experiments/measurement/repeat_protocol.py --kernel 'gemm_tile\\((2,2,2|4,6,8|8,8,8)\\)'
        --variants 24 \\ --json run_a.json                         (one process per GPU; run it again later;
    then compare with python experiments/measurement/repeat_protocol.py --compare run_a.json run_b.json ...  
      (on any machine) python experiments/measurement/repeat_protocol.py --confirm
      data/confirm/gemm_tile.json other_run.json

Per kernel: the baseline and `--variants` atlas representatives (a seeded sample), each measured in one
process, in one CUDA context, by three protocols:

* independent (the atlas's): `GpuRunner.measure` per variant, fresh buffers each time, 200 cycle samples and
  50 event-timed reps in one go; three passes in different orders, so the pass-to-pass spread inside a
  process is visible too;
* rounds: buffers allocated once per kernel; `--rounds` rounds, each visiting every variant (shuffled) for
  1/rounds of the samples and reps; per variant the median over the pooled samples;
* rounds_realloc: as rounds, but every round on fresh buffers behind a spacer allocation (placements
  averaged);
* rounds, relative: the same samples, each variant's median divided by the baseline's median of the same
  process: the quantity a reward log(before/after) uses.

Before and after every kernel, a calibration kernel reads %clock64 and %globaltimer across a 2 M-cycle spin:
the SM clock the measurements ran at (MHz). `--compare` prints, per protocol, the median / p95 / max
relative difference between runs and the share within 0.5% (cycles) and 1% (time).
"""

from __future__ import annotations

import argparse
import concurrent.futures as cf
import itertools
import json
import os
import random
import sys
import time
from pathlib import Path

import numpy as np

CLOCKRATE_PTX = """.version 8.0
.target sm_90
.address_size 64
.visible .entry chronos_clockrate(.param .u64 out)
{
  .reg .pred %p;
  .reg .b64 %rd<8>;
  ld.param.u64 %rd0, [out];
  cvta.to.global.u64 %rd0, %rd0;
  mov.u64 %rd1, %globaltimer;
  mov.u64 %rd2, %clock64;
SPIN:
  mov.u64 %rd3, %clock64;
  sub.s64 %rd4, %rd3, %rd2;
  setp.lt.s64 %p, %rd4, 2000000;
  @%p bra SPIN;
  mov.u64 %rd5, %globaltimer;
  sub.s64 %rd6, %rd5, %rd1;
  st.global.u64 [%rd0], %rd4;
  st.global.u64 [%rd0+8], %rd6;
  ret;
}
"""


def sm_mhz(runner) -> float:
    drv = runner.drv
    if not hasattr(runner, "_clockrate"):
        mod = drv.module_from_buffer(CLOCKRATE_PTX.encode())
        runner._clockrate = (mod, mod.get_function("chronos_clockrate"), drv.mem_alloc(16))
    _, fn, buf = runner._clockrate
    fn(buf, block=(1, 1, 1), grid=(1, 1, 1))
    host = np.empty(2, dtype=np.int64)
    drv.memcpy_dtoh(host, buf)
    return float(host[0]) / float(host[1]) * 1000.0


def compile_all(selected, n_variants: int, seed: int, ptxas: str | None, arch: str):
    from chronos.kernels.spec import load_module
    from chronos.measure.backend import compile_variant
    from chronos.ptx import emit
    from chronos.search.atlas_plan import AtlasDB
    from chronos.search.space import realize_recipe

    db = AtlasDB(Path("data/store/atlas.sqlite"))
    jobs = []
    for _, specs_json, spec in selected:
        reps = db.representatives(spec.kernel)
        rng = random.Random(f"{seed}:{spec.kernel}")
        picked = rng.sample(reps, min(n_variants, len(reps)))
        root = emit(load_module(specs_json, spec))
        jobs.append((spec, root, [(), *[acts for _, acts in picked]], str(specs_json)))
    out = []
    with cf.ProcessPoolExecutor(max_workers=os.cpu_count()) as ex:
        for spec, root, sets, specs_json in jobs:
            futs = [ex.submit(compile_variant, root if not acts else "", spec, arch, ptxas, True,
                              None if not acts else ((specs_json, spec.entry), acts), realize_recipe)
                    for acts in sets]
            out.append((spec, sets, [f.result() for f in futs]))
    return out


def run(args) -> dict:
    from chronos.config import MeasureConfig
    from chronos.measure.runner import GpuRunner
    from chronos.search.runs import kernels_of

    cfg = MeasureConfig()
    selected = list(kernels_of(Path("data/kernels"), ["gemm_tile"], args.kernel))
    t0 = time.perf_counter()
    compiled = compile_all(selected, args.variants, args.seed, os.environ.get("CHRONOS_PTXAS"), cfg.arch)
    print(f"compiled {sum(len(c) for _, _, c in compiled)} variants in {time.perf_counter() - t0:.1f} s",
          flush=True)
    runner = GpuRunner(0)
    runner.warm_up(cfg.gpu_warmup_s)
    rng = random.Random(args.seed)
    result = {"info": runner.info(), "pid": os.getpid(), "gpu_env": os.environ.get("CUDA_VISIBLE_DEVICES"),
              "start": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "kernels": {}}
    for spec, sets, comps in compiled:
        base = (comps[0].sha, comps[0].cubin)
        names = ["+".join(a) or "baseline" for a in sets]
        rec = {n: {"independent": []} for n in names}
        mhz = [sm_mhz(runner)]
        for _ in range(3):  # the atlas's protocol, three passes in different orders
            order = list(range(len(sets)))
            rng.shuffle(order)
            for i in order:
                r = runner.measure(spec, cfg, base, (comps[i].sha, comps[i].cubin), comps[i].cycles)
                rec[names[i]]["independent"].append(
                    {"valid": r["valid"], "cycles": r.get("cycles", {}).get("median"),
                     "time_ms": r.get("time_ms", {}).get("median")})
        mhz.append(sm_mhz(runner))
        # rounds (the library's GpuRunner.measure_rounds): one allocation, every variant visited once per
        # round
        cands = [((c.sha, c.cubin), c.cycles) for c in comps]
        for proto, realloc in (("rounds", False), ("rounds_realloc", True)):
            res = runner.measure_rounds(spec, cfg, base, cands, args.rounds, realloc=realloc)
            for name, r in zip(names, res, strict=True):
                rec[name][proto] = {"valid": r["valid"], "cycles": r["cycles"]["median"],
                                    "time_ms": r["time_ms"]["median"], "cycles_iqr": r["cycles"]["iqr"]}
        mhz.append(sm_mhz(runner))
        result["kernels"][spec.kernel] = {"sm_mhz": mhz, "variants": rec}
        print(f"{spec.kernel}: {len(sets)} variants, SM MHz {min(mhz):.0f}-{max(mhz):.0f}, "
              f"{time.perf_counter() - t0:.1f} s", flush=True)
    runner.close()
    return result


# ------------------------------------------------------------------ comparison (CPU)
def _values(run: dict, kernel: str, protocol: str, key: str) -> dict[str, float]:
    vs = run["kernels"][kernel]["variants"]
    if protocol == "independent":
        return {n: float(np.median([p[key] for p in v["independent"]])) for n, v in vs.items()
                if all(p["valid"] for p in v["independent"])}
    if protocol.startswith("independent_pass"):
        i = int(protocol[-1])
        return {n: v["independent"][i][key] for n, v in vs.items() if v["independent"][i]["valid"]}
    base_protocol = "rounds_realloc" if protocol.startswith("rounds_realloc") else "rounds"
    if any(base_protocol not in v for v in vs.values()):
        return {}
    vals = {n: v[base_protocol][key] for n, v in vs.items()}
    if protocol.endswith("_relative"):
        return {n: x / vals["baseline"] for n, x in vals.items() if n != "baseline"}
    return vals


def compare(paths: list[Path]) -> dict:
    runs = [json.loads(p.read_text()) for p in paths]
    out = {"runs": [{"file": str(p), "gpu": r["gpu_env"], "start": r["start"],
                     "sm_mhz": {k: [round(min(v["sm_mhz"])), round(max(v["sm_mhz"]))]
                                for k, v in r["kernels"].items()}}
                    for p, r in zip(paths, runs, strict=True)]}
    for key, tol in (("cycles", 0.005), ("time_ms", 0.01)):
        for protocol in ("independent_pass0", "independent", "rounds", "rounds_relative", "rounds_realloc",
                         "rounds_realloc_relative"):
            diffs = []
            pairs = itertools.combinations(range(len(runs)), 2)
            if protocol == "independent_pass0":  # inside one process: pass 0 vs pass 1
                pairs = [(i, i) for i in range(len(runs))]
            for a, b in pairs:
                for kernel in runs[a]["kernels"]:
                    if protocol == "independent_pass0":
                        x = _values(runs[a], kernel, "independent_pass0", key)
                        y = _values(runs[b], kernel, "independent_pass1", key)
                    else:
                        x = _values(runs[a], kernel, protocol, key)
                        y = _values(runs[b], kernel, protocol, key)
                    diffs += [abs(y[n] - x[n]) / x[n] for n in x if n in y and x[n]]
            d = np.array(diffs)
            if not d.size:
                continue
            out[f"{key}:{protocol}"] = {"pairs": int(d.size), "median": float(np.median(d)),
                                        "p95": float(np.percentile(d, 95)), "max": float(d.max()),
                                        "within": float((d <= tol).mean()), "tolerance": tol}
    return out


def compare_confirm(a: Path, b: Path) -> dict:
    """Two runs of stage confirm (data/confirm/*.json): per candidate the relative difference of the medians,
    raw and with each kernel's common shift removed (the median log-ratio of its candidates), baselines
    excluded from the second; also the per-kernel shifts themselves."""
    def load(p):
        d = json.loads(p.read_text())
        return {k["kernel"]: {c["variant"]: c for c in k["candidates"] if c["valid"]} for k in d["kernels"]}

    x, y = load(a), load(b)
    out: dict = {"files": [str(a), str(b)]}
    for key, tol in (("cycles", 0.005), ("time_ms", 0.01)):
        raw, common, shifts = [], [], []
        for k in x:
            vs = [v for v in x[k] if v in y.get(k, {})]
            lr = np.array([np.log(y[k][v][key]["median"] / x[k][v][key]["median"]) for v in vs])
            shift = float(np.median(lr))
            shifts.append(abs(np.expm1(shift)))
            raw += list(np.abs(np.expm1(lr)))
            common += [abs(np.expm1(d - shift)) for v, d in zip(vs, lr, strict=True) if v != 0]
        for name, d in (("raw", np.array(raw)), ("kernel_shift_removed", np.array(common)),
                        ("kernel_shift", np.array(shifts))):
            out[f"{key}:{name}"] = {"n": int(d.size), "median": float(np.median(d)),
                                    "p95": float(np.percentile(d, 95)), "max": float(d.max()),
                                    "within": float((d <= tol).mean()), "tolerance": tol}
    return out


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--kernel", default=r"gemm_tile\((2,2,2|4,6,8|8,8,8)\)")
    ap.add_argument("--variants", type=int, default=24)
    ap.add_argument("--rounds", type=int, default=8)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--json", type=Path)
    ap.add_argument("--compare", type=Path, nargs="+")
    ap.add_argument("--confirm", type=Path, nargs=2, help="compare two stage-confirm data files instead")
    args = ap.parse_args()
    if args.confirm:
        print(json.dumps(compare_confirm(*args.confirm), indent=1))
        return 0
    if args.compare:
        res = compare(args.compare)
        print(json.dumps(res, indent=1))
        return 0
    res = run(args)
    if args.json:
        args.json.write_text(json.dumps(res) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())

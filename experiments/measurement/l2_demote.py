"""Do L2 evict_last lines outlive the timing protocol's flush, and does timing.l2_demote fix it? (GPU; #14)

    python experiments/measurement/l2_demote.py [--probe-mib 24] [--rounds 30] [--controls 8]
        [--store OUT/l2_demote.sqlite] [--json OUT/l2_demote.json]

1. probe (raw kernels, no Chronos variant): a buffer X is read once (prime), then X is read again and timed.
   Interleaved rounds of four conditions, each behind an untimed reset (demote X, flush):
     warm          prime (normal loads), no flush: X comes from L2 (the floor)
     flush         prime (normal), 128 MiB memset flush: X comes from DRAM (the protocol's cold)
     last+flush    prime with createpolicy L2::evict_last + .L2::cache_hint loads, then the flush
     last+demote   the same with applypriority.L2::evict_normal over X before the flush (timing.l2_demote)
   If evict_last lines survive the memset, `last+flush` sits near `warm`; with the demote, near `flush`.
2. census: each census kernel whose best single action is an L2 evict_last hint (and `--controls` winners of
   other families) compared again beside its baseline twice in this process, with timing.l2_demote off and
   on (order alternating per kernel), through the side-by-side path (verified bit-exactly, the params'
   timing otherwise). Comparisons go to `--store`, never to the committed store: the off comparisons share
   the census's keys and would otherwise become the ones its replay answers with.
Prints the probe's medians (µs) and, per family, the median of log(ratio_on / ratio_off) (> 0: the gain
shrinks once the lines are demoted), with every kernel's two ratios and intervals.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import random
import statistics
from pathlib import Path

import numpy as np

PROBE_ENTRY = "chronos_probe_read"
_PROBE = """.version 8.0
.target sm_89
.address_size 64
.visible .entry chronos_probe_read(.param .u64 p_src, .param .u64 p_out, .param .u64 p_n16)
{{
    .reg .pred %p<3>;
    .reg .b32 %r<12>;
    .reg .b64 %rd<12>;
    ld.param.u64 %rd1, [p_src];
    ld.param.u64 %rd2, [p_out];
    ld.param.u64 %rd3, [p_n16];
    mov.u32 %r1, %ctaid.x;
    mov.u32 %r2, %ntid.x;
    mov.u32 %r3, %tid.x;
    cvt.u64.u32 %rd4, %r3;
    mad.wide.u32 %rd5, %r1, %r2, %rd4;
    setp.ge.u64 %p1, %rd5, %rd3;
    @%p1 bra $L_done;
    cvta.to.global.u64 %rd6, %rd1;
    cvta.to.global.u64 %rd10, %rd2;
    shl.b64 %rd7, %rd5, 4;
    add.s64 %rd8, %rd6, %rd7;
{load}
    xor.b32 %r8, %r4, %r5;
    xor.b32 %r9, %r6, %r7;
    xor.b32 %r10, %r8, %r9;
    setp.eq.u32 %p2, %r10, 1540483477;
    @%p2 st.global.u32 [%rd10], %r10;
$L_done:
    ret;
}}
"""
_LOAD_NORMAL = "    ld.global.v4.u32 {%r4, %r5, %r6, %r7}, [%rd8];"
_LOAD_LAST = ("    createpolicy.fractional.L2::evict_last.b64 %rd9, 1.0;\n"
              "    ld.global.L2::cache_hint.v4.u32 {%r4, %r5, %r6, %r7}, [%rd8], %rd9;")
PROBE_NORMAL_PTX = _PROBE.format(load=_LOAD_NORMAL)
PROBE_LAST_PTX = _PROBE.format(load=_LOAD_LAST).replace(PROBE_ENTRY, PROBE_ENTRY + "_last")
CONDITIONS = ("warm", "flush", "last+flush", "last+demote")


def probe(runner, mcfg, mib: int, rounds: int, per_round: int = 5) -> dict:
    """The four conditions' timed re-reads of X (µs): median, IQR, n."""
    from chronos.measure.l2 import Demoter
    from chronos.measure.timing import SPIN_ENTRY, SPIN_PTX
    from chronos.measure.verify_device import helper_kernel

    drv = runner.drv
    nbytes = mib << 20
    x, out = drv.mem_alloc(nbytes), drv.mem_alloc(256)
    flush = runner.flush or drv.mem_alloc(mcfg.l2_flush_bytes)
    runner.flush = flush
    read = helper_kernel(runner, PROBE_NORMAL_PTX, PROBE_ENTRY, "QQQ")
    read_last = helper_kernel(runner, PROBE_LAST_PTX, PROBE_ENTRY + "_last", "QQQ")
    spin = helper_kernel(runner, SPIN_PTX, SPIN_ENTRY, "Q")
    demote = Demoter(runner, [(int(x), nbytes)])
    stream = drv.Stream()
    n16 = nbytes // 16
    grid, block = ((n16 + 255) // 256, 1, 1), (256, 1, 1)
    args = (np.uint64(int(x)), np.uint64(int(out)), np.uint64(n16))
    drv.memset_d8(x, 0x3C, nbytes)

    def one(cond: str):
        demote.launch(stream)
        drv.memset_d8_async(flush, 0xA5, mcfg.l2_flush_bytes, stream)
        (read_last if cond.startswith("last") else read).prepared_async_call(grid, block, stream, *args)
        if cond == "last+demote":
            demote.launch(stream)
        if cond != "warm":
            drv.memset_d8_async(flush, 0xA5, mcfg.l2_flush_bytes, stream)
        spin.prepared_async_call((1, 1, 1), (1, 1, 1), stream, np.uint64(30_000))
        start, end = drv.Event(), drv.Event()
        start.record(stream)
        read.prepared_async_call(grid, block, stream, *args)
        end.record(stream)
        return start, end

    samples: dict[str, list[float]] = {c: [] for c in CONDITIONS}
    try:
        for r in range(rounds):
            order = list(CONDITIONS)
            random.Random(r).shuffle(order)
            evs = [(c, one(c)) for c in order for _ in range(per_round)]
            stream.synchronize()
            for c, (start, end) in evs:
                samples[c].append(end.time_since(start) * 1000.0)
    finally:
        x.free()
        out.free()
    return {c: {"median_us": statistics.median(xs), "iqr_us": _iqr(xs), "n": len(xs)}
            for c, xs in samples.items()}


def _iqr(xs: list[float]) -> float:
    q = statistics.quantiles(xs, n=4)
    return q[2] - q[0]


def winners(census: Path, controls: int) -> list[tuple[str, str, str, float]]:
    """(family, kernel, action, census ratio): every L2 evict_last winner, then `controls` others (the
    largest gains first)."""
    rows = []
    for part in sorted(census.rglob("*.json")):
        c = json.loads(part.read_text())
        acts = c.get("best", {}).get("actions") or []
        if len(acts) == 1 and c["best"].get("verdict") == "faster":
            fam = "l2_evict_last" if "l2_evict_last" in acts[0] else "other"
            rows.append((fam, c["kernel"], acts[0], c["best"]["ratio"]))
    last = [r for r in rows if r[0] == "l2_evict_last"]
    other = sorted((r for r in rows if r[0] == "other"), key=lambda r: r[3])[:controls]
    return last + other


def compare_twice(kernels: list, specs: dict, backend, cfg) -> list[dict]:
    from chronos.errors import ChronosError
    from chronos.kernels.spec import load_module
    from chronos.search.timed import TimedEvaluator, time_row

    out = []
    for n, (fam, kernel, action, census_ratio) in enumerate(kernels):
        specs_json, spec = specs[kernel]
        row = {"family": fam, "kernel": kernel, "action": action, "census_ratio": census_ratio}
        order = (False, True) if n % 2 == 0 else (True, False)
        try:
            module = load_module(specs_json, spec)
            for demote in order:
                timing = dataclasses.replace(cfg.timing, l2_demote=demote)
                ev = TimedEvaluator(spec, module, backend, timing, cfg.search.greedy.min_gain)
                cmp, idx = ev.compare([(action,)])
                t = time_row(cmp, idx[0], timing, ev.min_gain)
                row["on" if demote else "off"] = {k: t.get(k) for k in ("ratio", "ci", "verdict")}
        except ChronosError as e:
            row["error"] = " ".join(str(e).split())[:300]
        print(json.dumps(row), flush=True)
        out.append(row)
    return out


def summary(rows: list[dict]) -> dict:
    by: dict[str, list[float]] = {}
    for r in rows:
        if r.get("on", {}).get("ratio") and r.get("off", {}).get("ratio"):
            by.setdefault(r["family"], []).append(math.log(r["on"]["ratio"] / r["off"]["ratio"]))
    return {f: {"kernels": len(v), "median_log_on_over_off": statistics.median(v),
                "mean_log_on_over_off": statistics.mean(v)} for f, v in sorted(by.items())}


def main() -> int:
    from chronos import config as chronos_config
    from chronos.measure.runner import GpuRunner
    from chronos.search.atlas_replay import backend_with_atlas
    from chronos.search.runs import kernels_of

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--params", type=Path, default=Path("params.yaml"))
    ap.add_argument("--kernels", type=Path, default=Path("data/kernels"))
    ap.add_argument("--census", type=Path, default=Path("data/census"))
    ap.add_argument("--store", type=Path, required=True, help="a fresh store (never the committed one)")
    ap.add_argument("--json", type=Path, required=True)
    ap.add_argument("--probe-mib", type=int, default=24)
    ap.add_argument("--rounds", type=int, default=30)
    ap.add_argument("--controls", type=int, default=8)
    ap.add_argument("--skip-census", action="store_true")
    a = ap.parse_args()
    cfg = chronos_config.load(a.params)
    report: dict = {}
    runner = GpuRunner(0)
    runner.warm_up(cfg.measure.gpu_warmup_s)
    report["info"] = runner.info()
    report["probe"] = probe(runner, cfg.measure, a.probe_mib, a.rounds)
    for c, q in report["probe"].items():
        print(f"probe {c:12s} median {q['median_us']:8.2f} µs  IQR {q['iqr_us']:6.2f}  (n={q['n']})",
              flush=True)
    runner.close()
    a.json.write_text(json.dumps(report, indent=1))
    if not a.skip_census:
        specs = {s.kernel: (sj, s) for _, sj, s in kernels_of(a.kernels, cfg.search.census.families)}
        backend = backend_with_atlas("gpu", a.store, cfg.measure)
        try:
            report["census"] = compare_twice(winners(a.census, a.controls), specs, backend, cfg)
        finally:
            backend.close()
        report["summary"] = summary(report["census"])
        for f, s in report["summary"].items():
            print(f"{f:14s} {s['kernels']:3d} kernels: log(on/off) median {s['median_log_on_over_off']:+.4f} "
                  f"mean {s['mean_log_on_over_off']:+.4f}")
        a.json.write_text(json.dumps(report, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

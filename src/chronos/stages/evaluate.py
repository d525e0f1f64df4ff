"""Stage `evaluate`: the trained policy, zero-shot, on the Triton suite's tiers, through the optimize path in
wall time (chronos.optimize.timed), with every kernel's place under the H200's roofline.

    python -m chronos.stages.evaluate --params params.yaml --kernels data/kernels \
        --store data/store/measurements.sqlite --checkpoint models/checkpoint_best.pt \
        --out reports/measure_triton_results.json [--backend gpu|replay|auto]

Per kernel: the policy's greedy rollout (masked, at most `predict.max_steps` transforms) and, with
`predict.beam: k` > 1, its k most probable distinct sets are measured side by side with the baseline in one
comparison (bit-exact verification included). The path returns the fastest candidate whose time ratio has its
whole confidence interval below 1 - `search.greedy.min_gain`, else the baseline: never a slower or unverified
kernel. On replay, a kernel never measured is `unmeasured` (run this stage on a GPU) and the run goes on.

Roofline: the probes (data/kernels/probes: a vectorised copy and a bf16 GEMM) are timed in the same run; each
kernel's baseline gets its achieved bandwidth or FLOP rate as a fraction of what the probes reached.
"""

from __future__ import annotations

import sys
from pathlib import Path

import torch

from chronos.errors import ChronosError, one_line
from chronos.kernels.spec import load_module
from chronos.measure import probes
from chronos.optimize.timed import optimize_time, summarize_time
from chronos.progress import progress
from chronos.rl.checkpoint import load_model
from chronos.search.runs import kernels_of
from chronos.search.timed import TimedEvaluator
from chronos.stages.common import run_stage, write_json
from chronos.stages.measuring import add_backend_arguments, open_backend


def _arguments(ap) -> None:
    ap.add_argument("--kernels", type=Path, default=Path("data/kernels"))
    ap.add_argument("--checkpoint", type=Path, default=Path("models/checkpoint_best.pt"))
    ap.add_argument("--out", type=Path, default=Path("reports/measure_triton_results.json"))
    add_backend_arguments(ap)


def measure_peaks(kernels: Path, backend, cfg) -> dict:
    """The probes' baselines timed through the same path: peak bandwidth (copy) and FLOP rate (GEMM)."""
    out = {}
    if not (kernels / "probes" / "specs.json").is_file():
        return out
    for _, specs_json, spec in kernels_of(kernels, ["probes"]):
        ev = TimedEvaluator(spec, load_module(specs_json, spec), backend, cfg.timing, 0.0)
        cmp, _ = ev.compare([])
        med, iqr = cmp.time_ms(0)
        out[spec.kernel] = {"time_ms": med, "time_ms_iqr": iqr, "bytes": probes.min_bytes(spec),
                            "flops": probes.flops(spec), "measured_at": cmp.provenance.get("created_at", "")}
    return out


def _peaks(measured: dict) -> dict | None:
    """Peak bandwidth and FLOP rate from the probes measured in this run (None without both)."""
    copy = next((v for k, v in measured.items() if k.startswith("probe_copy") and v["time_ms"]), None)
    gemm = next((v for k, v in measured.items() if k.startswith("probe_matmul") and v["time_ms"]), None)
    if copy is None or gemm is None:
        return None
    return probes.peaks_from_probes(copy["time_ms"], copy["bytes"], gemm["time_ms"], gemm["flops"])


def _body(args, cfg) -> int:
    torch.set_num_threads(1)
    policy = load_model(args.checkpoint, action_space=cfg.actions).eval()
    families = cfg.search.triton.families
    tiers: dict[str, list[dict]] = {f: [] for f in families}
    backend = open_backend(args, cfg)
    try:
        peaks = measure_peaks(args.kernels, backend, cfg)
        peak = _peaks(peaks)
        for family, specs_json, spec in progress(list(kernels_of(args.kernels, families)), desc="evaluate",
                                                 unit="kernel"):
            try:
                res = optimize_time(spec, load_module(specs_json, spec), backend, policy,
                                    max_steps=cfg.predict.max_steps, min_gain=cfg.search.greedy.min_gain,
                                    beam=cfg.predict.beam, timing=cfg.timing)
                row = res.to_json()
            except ChronosError as e:
                row = {"kernel": spec.kernel, "verdict": "unmeasured",
                       "error": one_line(e, 400)}
            if peak and row.get("baseline") and row["baseline"].get("time_ms"):
                row["roofline"] = probes.roofline(spec, row["baseline"]["time_ms"],
                                                  peak["peak_bandwidth_Bps"], peak["peak_flops"])
            tiers[family].append(row)
            print(f"evaluate: {spec.kernel:44s} {'+'.join(row['sequence']) if 'sequence' in row else '':40s} "
                  f"{row['verdict']} -> {row.get('returned', '-')} {row.get('speedup_time', 0):.4f}",
                  flush=True)
        prov = backend.provenance()
    finally:
        backend.close()
    out = {"provenance": {**prov, "checkpoint": str(args.checkpoint)}, "probes": peaks, "peaks": peak,
           "tiers": {f: {"summary": summarize_time(rows), "kernels": rows} for f, rows in tiers.items()}}
    write_json(args.out, out)
    print(f"evaluate: { {f: t['summary'] for f, t in out['tiers'].items()} }")
    return 0


def main(argv: list[str] | None = None) -> int:
    return run_stage("evaluate", __doc__, _arguments, _body, argv)


if __name__ == "__main__":
    sys.exit(main())

"""Stage `greedy`: the seed's teacher on every kernel of the chosen families, through the measurement backend.

    python -m chronos.stages.greedy --params params.yaml --kernels data/kernels \
        --store data/store/measurements.sqlite --demos data/demos/trajectories.jsonl \
        --out reports/greedy_results.json

Reads `search.greedy` (families, max_steps, min_gain) and `measure` (backend and MeasureConfig). Writes the
demonstrations (one JSON line per step: kernel, step, applied, features, mask, history, action,
cycles_before, cycles_after) and per kernel: baseline, final, sequence and the per-step trace with medians
and IQRs. Every measurement lands in the store as it is made; on replay nothing is measured.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import yaml

from chronos.errors import ChronosError
from chronos.kernels.spec import load_module
from chronos.measure.backend import make_backend
from chronos.search import run as run_search
from chronos.search.strategies import GreedyConfig
from chronos.stages.baseline import load_measure_params
from chronos.stages.common import kernels_of, search_provenance, search_summary


def load_greedy_params(params_path: Path) -> tuple[list[str], GreedyConfig]:
    block = ((yaml.safe_load(params_path.read_text()) or {}).get("search") or {}).get("greedy") or {}
    families = list(block.get("families", ["gemm_tile"]))
    cfg = GreedyConfig(max_steps=int(block.get("max_steps", 6)), min_gain=float(block.get("min_gain", 0.005)))
    return families, cfg


def run(kernels: Path, families: list[str], cfg: GreedyConfig, backend, only: str | None = None,
        log=print) -> tuple[list[dict], list[dict]]:
    results, demos = [], []
    for family, specs_json, spec in kernels_of(kernels, families, only):
        t0 = time.perf_counter()
        try:
            res = run_search("greedy", spec, load_module(specs_json, spec), backend, cfg)
        except (ChronosError, RuntimeError) as e:  # one kernel's failure is recorded, the run goes on
            log(f"greedy: {spec.kernel}: FAILED: {e}")
            results.append({"kernel": spec.kernel, "family": family, "error": str(e)})
            continue
        entry = res.to_json()
        entry.update(family=family, sequence=list(res.best.actions), final=res.best.to_json())
        results.append(entry)
        demos.extend(res.demos)
        log(f"greedy: {spec.kernel:44s} {res.baseline.cycles:>9.0f} -> {res.best.cycles:>9.0f} cycles "
            f"({100 * res.change:+.1f}%) {'+'.join(res.best.actions) or '-'} "
            f"[{res.evaluated} sets, {res.unique_cubins} cubins, {time.perf_counter() - t0:.1f} s]")
    return results, demos


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--params", type=Path, default=Path("params.yaml"))
    ap.add_argument("--kernels", type=Path, default=Path("data/kernels"))
    ap.add_argument("--store", type=Path, default=Path("data/store/measurements.sqlite"))
    ap.add_argument("--demos", type=Path, default=Path("data/demos/trajectories.jsonl"))
    ap.add_argument("--out", type=Path, default=Path("reports/greedy_results.json"))
    ap.add_argument("--backend", choices=("gpu", "replay", "auto"), help="overrides measure.backend")
    ap.add_argument("--only", help="regex on kernel names (partial runs)")
    args = ap.parse_args(argv)
    try:
        families, cfg = load_greedy_params(args.params)
        name, mcfg = load_measure_params(args.params)
        backend = make_backend(args.backend or name, args.store, mcfg)
        try:
            results, demos = run(args.kernels, families, cfg, backend, args.only)
            prov = {**backend.provenance(), "backend": type(backend).__name__}
        finally:
            backend.close()
    except ChronosError as e:
        print(f"greedy: error: {e}", file=sys.stderr)
        return 1
    args.demos.parent.mkdir(parents=True, exist_ok=True)
    args.demos.write_text("".join(json.dumps(d, sort_keys=True) + "\n" for d in demos))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    summary = search_summary(results)
    prov = {**search_provenance(prov, results, argv, "greedy"),
            "config": {"min_gain": cfg.min_gain, "max_steps": cfg.max_steps}}
    args.out.write_text(json.dumps({"provenance": prov,
                                    "summary": summary, "kernels": results}, indent=1) + "\n")
    print(f"greedy: {summary}")
    return 0 if not summary["failed"] else 1


if __name__ == "__main__":
    sys.exit(main())

"""Stage `greedy`: the seed's teacher, merged over the per-kernel jobs of stage `greedy_kernel`.

    python -m chronos.stages.greedy --params params.yaml --kernels data/kernels --parts data/search/greedy \
        --demos data/demos/trajectories.jsonl --out reports/greedy_results.json

`run` is the search itself (used by greedy_kernel); `main` merges the parts, in kernel order, into the
demonstrations (one JSON line per step: kernel, step, applied, features, mask, history, action,
cycles_before, cycles_after) and per kernel: baseline, final, sequence and the per-step trace with medians
and IQRs. Reads `search.greedy` (families, max_steps, min_gain).
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
from chronos.search import run as run_search
from chronos.search.strategies import GreedyConfig
from chronos.stages.common import kernels_of, search_provenance, search_summary


def load_greedy_params(params_path: Path) -> tuple[list[str], GreedyConfig]:
    block = ((yaml.safe_load(params_path.read_text()) or {}).get("search") or {}).get("greedy") or {}
    families = list(block.get("families", ["gemm_tile"]))
    cfg = GreedyConfig(max_steps=int(block.get("max_steps", 6)), min_gain=float(block.get("min_gain", 0.005)))
    return families, cfg


def run(kernels: Path, families: list[str], cfg: GreedyConfig, backend, only: str | None = None,
        log=print, by_entry: bool = False) -> tuple[list[dict], list[dict]]:
    """Greedy on every selected kernel; `only` is a regex on the kernel name (on the entry with by_entry).
    Results carry an "entry" key when by_entry is set."""
    results, demos = [], []
    for family, specs_json, spec in kernels_of(kernels, families, only, by_entry=by_entry):
        t0 = time.perf_counter()
        try:
            res = run_search("greedy", spec, load_module(specs_json, spec), backend, cfg)
        except (ChronosError, RuntimeError) as e:  # one kernel's failure is recorded, the run goes on
            log(f"greedy: {spec.kernel}: FAILED: {e}")
            results.append({"kernel": spec.kernel, "family": family, "error": str(e),
                            **({"entry": spec.entry} if by_entry else {})})
            continue
        entry = res.to_json()
        entry.update(family=family, sequence=list(res.best.actions), final=res.best.to_json())
        if by_entry:
            entry["entry"] = spec.entry
        results.append(entry)
        demos.extend(res.demos)
        log(f"greedy: {spec.kernel:44s} {res.baseline.cycles:>9.0f} -> {res.best.cycles:>9.0f} cycles "
            f"({100 * res.change:+.1f}%) {'+'.join(res.best.actions) or '-'} "
            f"[{res.evaluated} sets, {res.unique_cubins} cubins, {time.perf_counter() - t0:.1f} s]")
    return results, demos


def main(argv: list[str] | None = None) -> int:
    """Merge the per-kernel parts (stage greedy_kernel) into the demonstrations and the results report."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--params", type=Path, default=Path("params.yaml"))
    ap.add_argument("--kernels", type=Path, default=Path("data/kernels"))
    ap.add_argument("--parts", type=Path, default=Path("data/search/greedy"))
    ap.add_argument("--demos", type=Path, default=Path("data/demos/trajectories.jsonl"))
    ap.add_argument("--out", type=Path, default=Path("reports/greedy_results.json"))
    args = ap.parse_args(argv)
    try:
        families, cfg = load_greedy_params(args.params)
        parts = [(spec, args.parts / f"{spec.entry}.json") for _, _, spec in kernels_of(args.kernels, families)]
        missing = [spec.kernel for spec, path in parts if not path.is_file()]
        if missing:
            raise ChronosError(f"greedy: no part for {len(missing)} kernels ({', '.join(missing[:4])}...)",
                               repro="python -m chronos.stages.greedy_kernel --kernel <entry> (or snakemake)")
        loaded = [json.loads(path.read_text()) for _, path in parts]
    except (ChronosError, json.JSONDecodeError) as e:
        print(f"greedy: error: {e}", file=sys.stderr)
        return 1
    results = [p["result"] for p in loaded]
    demos = [d for p in loaded for d in p["demos"]]
    args.demos.parent.mkdir(parents=True, exist_ok=True)
    args.demos.write_text("".join(json.dumps(d, sort_keys=True) + "\n" for d in demos))
    summary = search_summary(results)
    backends = sorted({json.dumps(p["provenance"], sort_keys=True) for p in loaded})
    prov = {**search_provenance(json.loads(backends[0]) if len(backends) == 1 else {"mixed": backends},
                                results, argv, "greedy"),
            "config": {"min_gain": cfg.min_gain, "max_steps": cfg.max_steps}}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({"provenance": prov, "summary": summary, "kernels": results}, indent=1) + "\n")
    print(f"greedy: {summary}")
    return 0 if not summary["failed"] else 1


if __name__ == "__main__":
    sys.exit(main())

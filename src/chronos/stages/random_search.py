"""Stage `random`: seeded random legal action sequences per kernel, with the same measurement budget as greedy.

    python -m chronos.stages.random_search --params params.yaml --kernels data/kernels \
        --store data/store/measurements.sqlite --greedy reports/greedy_results.json \
        --out reports/random_results.json

Per kernel the budget is the number of action sets greedy measured there (so the comparison is fair), or
`search.random.budget` when greedy has no entry. Reads `search.random` (families, seed, max_steps) and
`measure`.
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
from chronos.search.strategies import RandomConfig
from chronos.stages.baseline import load_measure_params
from chronos.stages.common import kernels_of, search_summary


def load_random_params(params_path: Path) -> dict:
    block = ((yaml.safe_load(params_path.read_text()) or {}).get("search") or {}).get("random") or {}
    return {"families": list(block.get("families", ["gemm_tile"])), "seed": int(block.get("seed", 0)),
            "max_steps": int(block.get("max_steps", 6)), "budget": int(block.get("budget", 64))}


def greedy_budgets(path: Path) -> dict[str, int]:
    """kernel -> number of non-baseline action sets greedy measured there."""
    if not path.is_file():
        return {}
    data = json.loads(path.read_text())
    return {k["kernel"]: int(k["evaluated"]) - 1 for k in data.get("kernels", []) if "evaluated" in k}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--params", type=Path, default=Path("params.yaml"))
    ap.add_argument("--kernels", type=Path, default=Path("data/kernels"))
    ap.add_argument("--store", type=Path, default=Path("data/store/measurements.sqlite"))
    ap.add_argument("--greedy", type=Path, default=Path("reports/greedy_results.json"))
    ap.add_argument("--out", type=Path, default=Path("reports/random_results.json"))
    ap.add_argument("--backend", choices=("gpu", "replay", "auto"), help="overrides measure.backend")
    ap.add_argument("--only", help="regex on kernel names (partial runs)")
    args = ap.parse_args(argv)
    p = load_random_params(args.params)
    budgets = greedy_budgets(args.greedy)
    results = []
    try:
        name, mcfg = load_measure_params(args.params)
        backend = make_backend(args.backend or name, args.store, mcfg)
        try:
            for family, specs_json, spec in kernels_of(args.kernels, p["families"], args.only):
                cfg = RandomConfig(budget=budgets.get(spec.kernel, p["budget"]), seed=p["seed"],
                                   max_steps=p["max_steps"])
                t0 = time.perf_counter()
                try:
                    res = run_search("random", spec, load_module(specs_json, spec), backend, cfg)
                except (ChronosError, RuntimeError) as e:  # recorded; the run goes on
                    print(f"random: {spec.kernel}: FAILED: {e}")
                    results.append({"kernel": spec.kernel, "family": family, "error": str(e)})
                    continue
                results.append({**res.to_json(), "family": family, "budget": cfg.budget,
                                "sequence": list(res.best.actions)})
                _write(args.out, {"partial": True}, results)  # a cut-off run keeps what it measured
                print(f"random: {spec.kernel:44s} {res.baseline.cycles:>9.0f} -> {res.best.cycles:>9.0f} "
                      f"({100 * res.change:+.1f}%) {'+'.join(res.best.actions) or '-'} "
                      f"[{res.evaluated} sets, budget {cfg.budget}, {time.perf_counter() - t0:.1f} s]")
            prov = backend.provenance()
        finally:
            backend.close()
    except ChronosError as e:
        print(f"random: error: {e}", file=sys.stderr)
        return 1
    summary = _write(args.out, {**prov, "seed": p["seed"], "budget": "greedy's per kernel"}, results)
    print(f"random: {summary}")
    return 0 if not summary["failed"] else 1


def _write(out: Path, provenance: dict, results: list[dict]) -> dict:
    summary = search_summary(results)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"provenance": provenance, "summary": summary, "kernels": results}, indent=1) + "\n")
    return summary


if __name__ == "__main__":
    sys.exit(main())

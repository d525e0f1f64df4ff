"""Stage `search_triton`: greedy and a seeded random search on the 33 Triton kernels (their atlas is too
large to enumerate: the references the policy's Triton results are compared with).

    python -m chronos.stages.search_triton --params params.yaml --kernels data/kernels \
        --store data/store/measurements.sqlite --out reports/triton_search.json [--backend gpu|replay|auto]

Reads `search.triton` (families, random_budget, seed), `search.greedy` (max_steps, min_gain) and `measure`.
A kernel that fails (a miss on replay, say) is recorded with its error and the run goes on.
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
from chronos.stages.common import kernels_of, search_provenance, search_summary
from chronos.stages.greedy import load_greedy_params


def load_triton_params(params_path: Path) -> dict:
    block = ((yaml.safe_load(params_path.read_text()) or {}).get("search") or {}).get("triton") or {}
    return {"families": list(block.get("families", ["triton"])), "random_budget": int(block.get("random_budget", 32)),
            "seed": int(block.get("seed", 0))}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--params", type=Path, default=Path("params.yaml"))
    ap.add_argument("--kernels", type=Path, default=Path("data/kernels"))
    ap.add_argument("--store", type=Path, default=Path("data/store/measurements.sqlite"))
    ap.add_argument("--out", type=Path, default=Path("reports/triton_search.json"))
    ap.add_argument("--backend", choices=("gpu", "replay", "auto"), help="overrides measure.backend")
    ap.add_argument("--only", help="regex on kernel names")
    ap.add_argument("--retry-invalid", action="store_true",
                    help="re-measure variants whose stored record is invalid (gpu backend; newest record wins)")
    args = ap.parse_args(argv)
    p = load_triton_params(args.params)
    _, gcfg = load_greedy_params(args.params)
    rows: dict[str, list[dict]] = {"greedy": [], "random": []}
    try:
        name, mcfg = load_measure_params(args.params)
        extra = {"retry_invalid": True} if args.retry_invalid else {}
        backend = make_backend(args.backend or name, args.store, mcfg, **extra)
        try:
            for family, specs_json, spec in kernels_of(args.kernels, p["families"], args.only):
                root = load_module(specs_json, spec)
                for strategy, cfg in (("greedy", gcfg), ("random", RandomConfig(
                        budget=p["random_budget"], seed=p["seed"], max_steps=gcfg.max_steps))):
                    t0 = time.perf_counter()
                    try:
                        res = run_search(strategy, spec, root, backend, cfg)
                    except (ChronosError, RuntimeError) as e:  # recorded; the run goes on
                        print(f"{strategy}: {spec.kernel}: FAILED: {' '.join(str(e).split())[:300]}")
                        rows[strategy].append({"kernel": spec.kernel, "family": family, "error": str(e)})
                        continue
                    rows[strategy].append({**res.to_json(), "family": family, "sequence": list(res.best.actions)})
                    print(f"{strategy}: {spec.kernel:44s} {res.baseline.cycles:>9.0f} -> {res.best.cycles:>9.0f} "
                          f"({100 * res.change:+.1f}%) {'+'.join(res.best.actions) or '-'} "
                          f"[{res.evaluated} sets, {time.perf_counter() - t0:.1f} s]", flush=True)
            prov = search_provenance(backend.provenance(), rows["greedy"] + rows["random"], argv, "search_triton")
        finally:
            backend.close()
    except ChronosError as e:
        print(f"search_triton: error: {e}", file=sys.stderr)
        return 1
    out = {"provenance": prov, "params": p,
           "summary": {s: search_summary(r) for s, r in rows.items()}, "greedy": rows["greedy"], "random": rows["random"]}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(out, indent=1) + "\n")
    print(f"search_triton: {out['summary']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Stage `search_triton`: greedy and a seeded random search on the 33 Triton kernels (their atlas is too
large to enumerate: the references the policy's Triton results are compared with).

    python -m chronos.stages.search_triton --params params.yaml --kernels data/kernels \
        --store data/store/measurements.sqlite --out reports/triton_search.json [--backend gpu|replay|auto]

Reads `search.triton` (families, random_budget, seed), `search.greedy` (max_steps, min_gain) and `measure`.
A kernel that fails (a miss on replay, say) is recorded with its error and the run goes on.
"""

from __future__ import annotations

import sys
from pathlib import Path

from chronos.config import RandomSearchConfig
from chronos.search.runs import search_kernels, search_summary
from chronos.stages.common import run_stage, search_provenance, write_json
from chronos.stages.measuring import add_backend_arguments, open_backend


def _arguments(ap) -> None:
    ap.add_argument("--kernels", type=Path, default=Path("data/kernels"))
    ap.add_argument("--out", type=Path, default=Path("reports/triton_search.json"))
    add_backend_arguments(ap, retry_invalid=True)
    ap.add_argument("--only", help="regex on kernel names")


def _body(args, cfg) -> int:
    tcfg, gcfg = cfg.search.triton, cfg.search.greedy
    strategies = {"greedy": gcfg, "random": RandomSearchConfig(
        families=tcfg.families, budget=tcfg.random_budget, seed=tcfg.seed, max_steps=gcfg.max_steps)}
    rows: dict[str, list[dict]] = {"greedy": [], "random": []}
    backend = open_backend(args, cfg)
    try:
        for run in search_kernels(strategies, args.kernels, tcfg.families, backend, args.only):
            print(run.line(), flush=True)
            if run.result is None:
                rows[run.strategy].append({"kernel": run.spec.kernel, "family": run.family,
                                           "error": run.error})
                continue
            rows[run.strategy].append({**run.result.to_json(), "family": run.family,
                                       "sequence": list(run.result.best.actions)})
        prov = search_provenance(backend.provenance(), rows["greedy"] + rows["random"],
                                                            args.argv, "search_triton")
    finally:
        backend.close()
    params = {"families": list(tcfg.families), "random_budget": tcfg.random_budget, "seed": tcfg.seed}
    out = {"provenance": prov, "params": params,
           "summary": {s: search_summary(r) for s, r in rows.items()},
               "greedy": rows["greedy"], "random": rows["random"]}
    write_json(args.out, out)
    print(f"search_triton: {out['summary']}")
    return 0


def main(argv: list[str] | None = None) -> int:
    return run_stage("search_triton", __doc__, _arguments, _body, argv)


if __name__ == "__main__":
    sys.exit(main())

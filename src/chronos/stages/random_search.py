"""Stage `random`: seeded random legal action sequences per kernel, with the same measurement budget as
greedy.

    python -m chronos.stages.random_search --params params.yaml --kernels data/kernels \
        --store data/store/measurements.sqlite --greedy reports/greedy_results.json \
        --out reports/random_results.json

Per kernel the budget is the number of action sets greedy measured there (so the comparison is fair), or
`search.random.budget` when greedy has no entry. Reads `search.random` (families, seed, max_steps) and
`measure`.
"""

from __future__ import annotations

import dataclasses
import json
import sys
from pathlib import Path

from chronos.search.runs import search_kernels, search_summary
from chronos.stages.common import EXIT_OK, EXIT_PARTIAL, run_stage, write_json
from chronos.stages.measuring import add_backend_arguments, open_backend


def greedy_budgets(path: Path) -> dict[str, int]:
    """kernel -> number of non-baseline action sets greedy measured there."""
    if not path.is_file():
        return {}
    data = json.loads(path.read_text())
    return {k["kernel"]: int(k["evaluated"]) - 1 for k in data.get("kernels", []) if "evaluated" in k}


def _arguments(ap) -> None:
    ap.add_argument("--kernels", type=Path, default=Path("data/kernels"))
    ap.add_argument("--greedy", type=Path, default=Path("reports/greedy_results.json"))
    ap.add_argument("--out", type=Path, default=Path("reports/random_results.json"))
    add_backend_arguments(ap)
    ap.add_argument("--only", help="regex on kernel names (partial runs)")


def _body(args, cfg) -> int:
    rcfg = cfg.search.random
    budgets = greedy_budgets(args.greedy)

    def config_of(spec):
        return dataclasses.replace(rcfg, budget=budgets.get(spec.kernel, rcfg.budget))

    results = []
    backend = open_backend(args, cfg)
    try:
        for run in search_kernels({"random": config_of}, args.kernels, rcfg.families, backend, args.only):
            budget = config_of(run.spec).budget
            print(run.line(f", budget {budget}"))
            if run.result is None:
                results.append({"kernel": run.spec.kernel, "family": run.family, "error": run.error})
                continue
            results.append({**run.result.to_json(), "family": run.family, "budget": budget,
                            "sequence": list(run.result.best.actions)})
            _write(args.out, {"partial": True}, results)  # a cut-off run keeps what it measured
        prov = backend.provenance()
    finally:
        backend.close()
    summary = _write(args.out, {**prov, "seed": rcfg.seed, "budget": "greedy's per kernel"}, results)
    print(f"random: {summary}")
    return EXIT_PARTIAL if summary["failed"] else EXIT_OK


def _write(out: Path, provenance: dict, results: list[dict]) -> dict:
    summary = search_summary(results)
    write_json(out, {"provenance": provenance, "summary": summary, "kernels": results})
    return summary


def main(argv: list[str] | None = None) -> int:
    return run_stage("random_search", __doc__, _arguments, _body, argv)


if __name__ == "__main__":
    sys.exit(main())

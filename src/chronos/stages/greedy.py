"""Stage `greedy`: the seed's teacher, merged over the per-kernel jobs of stage `greedy_kernel`.

    python -m chronos.stages.greedy --params params.yaml --kernels data/kernels --parts data/search/greedy \
        --demos data/demos/trajectories.jsonl --out reports/greedy_results.json

The search itself is `chronos.search.runs.run_greedy` (stage greedy_kernel); this stage merges the parts,
in kernel order, into the
demonstrations (one JSON line per step: kernel, step, applied, features, mask, history, action,
cycles_before, cycles_after) and per kernel: baseline, final, sequence and the per-step trace with medians
and IQRs. Reads `search.greedy` (families, max_steps, min_gain).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from chronos.errors import ChronosError
from chronos.search.runs import kernels_of, search_summary
from chronos.stages.common import EXIT_OK, EXIT_PARTIAL, read_json, run_stage, search_provenance, write_json


def _arguments(ap) -> None:
    ap.add_argument("--kernels", type=Path, default=Path("data/kernels"))
    ap.add_argument("--parts", type=Path, default=Path("data/search/greedy"))
    ap.add_argument("--demos", type=Path, default=Path("data/demos/trajectories.jsonl"))
    ap.add_argument("--out", type=Path, default=Path("reports/greedy_results.json"))


def _body(args, cfg) -> int:
    """Merge the per-kernel parts (stage greedy_kernel) into the demonstrations and the results report."""
    gcfg = cfg.search.greedy
    parts = [(spec, args.parts / f"{spec.entry}.json")
              for _, _, spec in kernels_of(args.kernels, gcfg.families)]
    missing = [spec.kernel for spec, path in parts if not path.is_file()]
    if missing:
        raise ChronosError(f"no part for {len(missing)} kernels ({', '.join(missing[:4])}...)",
                           repro="python -m chronos.stages.greedy_kernel --kernel <entry> (or snakemake)")
    loaded = [read_json(path, "greedy part") for _, path in parts]
    results = [p["result"] for p in loaded]
    demos = [d for p in loaded for d in p["demos"]]
    args.demos.parent.mkdir(parents=True, exist_ok=True)
    args.demos.write_text("".join(json.dumps(d, sort_keys=True) + "\n" for d in demos))
    summary = search_summary(results)
    backends = sorted({json.dumps(p["provenance"], sort_keys=True) for p in loaded})
    prov = {**search_provenance(json.loads(backends[0]) if len(backends) == 1 else {"mixed": backends},
                                results, args.argv, "greedy"),
            "config": {"min_gain": gcfg.min_gain, "max_steps": gcfg.max_steps}}
    write_json(args.out, {"provenance": prov, "summary": summary, "kernels": results})
    print(f"greedy: {summary}")
    return EXIT_PARTIAL if summary["failed"] else EXIT_OK


def main(argv: list[str] | None = None) -> int:
    return run_stage("greedy", __doc__, _arguments, _body, argv)


if __name__ == "__main__":
    sys.exit(main())

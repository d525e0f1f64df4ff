"""The shell that stages headroom, census and random_time share (not a stage itself): arguments, the backend,
the search over the section's families (chronos.search.headroom) and the report."""

from __future__ import annotations

import json
from pathlib import Path

from chronos.search.headroom import search_families, section_report
from chronos.stages.common import command_line, run_stage, write_json
from chronos.stages.measuring import add_backend_arguments, open_backend


def add_arguments(ap) -> None:
    ap.add_argument("--kernels", type=Path, default=Path("data/kernels"))
    ap.add_argument("--section", choices=("headroom", "census", "random_time"), default="headroom",
                    help="the params block under search: census is step 0 alone on more kernels per family, "
                         "random_time seeded random sets in one comparison (chronos.search.timed_random)")
    ap.add_argument("--parts", type=Path, help="default data/<section>")
    ap.add_argument("--out", type=Path, help="default reports/<section>.json")
    ap.add_argument("--budget", type=float, help="(gpu) seconds; default search.headroom.budget_s")
    add_backend_arguments(ap)


def run(args, cfg) -> int:
    hcfg = getattr(cfg.search, args.section)
    parts = args.parts or Path("data", args.section)
    out_path = args.out or Path("reports", f"{args.section}.json")
    budget = args.budget if args.budget is not None else hcfg.budget_s
    backend = open_backend(args, cfg)
    try:
        rows = search_families(cfg, hcfg, backend, args.kernels, parts, budget, args.section)
        prov = {**backend.provenance(), "command": command_line(args.section, args.argv)}
    finally:
        backend.close()
    out = section_report(cfg, hcfg, rows, prov)
    write_json(out_path, out)
    brief = {f: {k: s[k] for k in ("measured", "faster", "time_geomean")} for f, s in out["summary"].items()}
    print(f"{args.section}: {json.dumps(brief)}")
    return 1 if out["disagreements"] else 0


def main(section: str, doc: str, argv: list[str] | None) -> int:
    """Run the stage of `section` (its name, its params block under `search`). headroom is the default
    section, so its recorded command line stays the one its stage was always run with."""
    import sys

    argv = sys.argv[1:] if argv is None else argv
    return run_stage(section, doc, add_arguments, run, argv if section == "headroom" else
                     ["--section", section, *argv])

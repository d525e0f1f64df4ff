"""Find each captured Inductor kernel's walk root (#28 item 4) on a GPU image (torch 2.11, Triton 3.6: the
versions that captured the kernels): the generated module and config that remake its committed stock PTX.

    PYTHONUNBUFFERED=1 python3 scripts/make_walk_roots.py --out . [--workloads llama ...] [--all-kernels]

Each workload runs once with fresh caches (as scripts/make_block_variants.py, whose search for the stock
module it shares); for every kernel the knob stages select (search.knob_census in --params; --all-kernels:
every one with knob variants; templates are left out, with why), the module is kept gzipped and its stock
config, persistence and grid checks recorded: data/kernels/captured/<w>/walk.json and
.../walk/<stem>/module.py.gz. Stage knob_walk (with --compile, on the GPU image) then compiles and times
the configs its walks visit, adding each to walk.json.

A kernel walk.json already roots keeps its entry, compiled configs included (replay walks them): only the
kernels it lacks are looked for, their entries marked with this run's date (`rooted`), unless --refresh.
"""

from __future__ import annotations

import concurrent.futures as cf
import json
import multiprocessing
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from make_anchor_variants import TEMPLATE, wanted
from make_block_variants import inductor_sources, workload_jobs
from make_knob_variants import cache_by_identity, gz, rerun

from chronos.triton.anchor_tuning import is_template
from chronos.triton.inductor_source import error_text
from chronos.triton.walk_compile import find_root, init_worker


def arguments(p) -> None:
    p.add_argument("--params", type=Path, default=ROOT / "params.yaml")
    p.add_argument("--all-kernels", action="store_true", help="not only the knob stages' selection")
    p.add_argument("--refresh", action="store_true",
                   help="find every kernel's root again (drops the configs walk.json recorded for it)")
    p.set_defaults(limit=None)


def main() -> int:
    args, prov = rerun(__doc__, "/tmp/chronos-walk-roots", arguments)
    for w in args.workloads:
        out = args.out / "data/kernels/captured" / w
        found, jobs = workload_jobs(w, cache_by_identity(args.scratch / f"triton-{w}"),
                                    inductor_sources(args.scratch / f"inductor-{w}"))
        job_of = {stock_file: job for _, stock_file, job in jobs}
        kept = {} if args.refresh else recorded(out)
        todo = [f for f in wanted(args, w, {f: j[1] for f, j in job_of.items()}) if f not in kept]
        entries = {f: {**found[f], "error": TEMPLATE} for f in todo if is_template(job_of[f][1])}
        ctx = multiprocessing.get_context("spawn")
        init = (prov["ptxas"], str(args.scratch))
        with cf.ProcessPoolExecutor(args.jobs, mp_context=ctx, initializer=init_worker, initargs=init) as ex:
            futures = {ex.submit(find_root, *job_of[f]): f for f in todo if f not in entries}
            for fut in cf.as_completed(futures):
                f = futures[fut]
                try:
                    res = fut.result()
                except Exception as e:  # noqa: BLE001 - a worker that died is said for its kernel
                    res = {"error": f"worker: {error_text(e)}"}
                if "module_text" in res:
                    res["module"] = f"walk/{found[f]['stem']}/module.py.gz"
                    gz(out / res["module"], res.pop("module_text"))
                    res["configs"] = {}
                entries[f] = {**found[f], **res}
        for e in entries.values():
            e["rooted"] = prov["date"]
        write_manifest(out, prov, kept, entries)
        roots = sum(1 for e in entries.values() if "stock" in e)
        print(f"{w}: {len(entries)} kernels looked for, {roots} walk roots; {len(kept)} kept as recorded",
              flush=True)
    return 0


def recorded(out: Path) -> dict:
    """The kernels the workload's walk.json already holds (none where it has none)."""
    path = out / "walk.json"
    return json.loads(path.read_text())["kernels"] if path.exists() else {}


def write_manifest(out: Path, prov: dict, kept: dict, entries: dict) -> None:
    """walk.json with the kept entries and the new ones; the first run's provenance stays `provenance`,
    each later run's is appended to `provenance_added` (its kernels say which by their `rooted` date)."""
    path = out / "walk.json"
    old = json.loads(path.read_text()) if path.exists() and kept else {}
    manifest = {"provenance": old.get("provenance", prov), "kernels": {**kept, **entries}}
    if old:
        manifest["provenance_added"] = [*old.get("provenance_added", []), prov]
    out.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(manifest, indent=1, sort_keys=True) + "\n")


if __name__ == "__main__":
    sys.exit(main())

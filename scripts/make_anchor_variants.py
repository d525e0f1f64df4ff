"""Build the per-kernel Inductor anchors of the captured kernels (#28 item 5) on a GPU.

Per kernel, the config Inductor's own max-autotune and coordinate-descent tuners choose for it, compiled as a
variant that stage knob_anchors times beside stock and Chronos's winner; run on the GPU image (torch 2.11,
Triton 3.6: the versions that captured the kernels).

    PYTHONUNBUFFERED=1 python3 scripts/make_anchor_variants.py --out . [--workloads flex] [--modes coordesc]

Each workload runs once with fresh caches (as scripts/make_block_variants.py, whose search for each kernel's
stock module it shares: the module and config that remake the committed stock PTX by identity). For every
kernel the knob stages select (search.knob_census in --params; --all-kernels: every one with knob variants),
the stock module is set up as the tuner's run would have generated it and its autotuner launched once on the
kernel's inputs (chronos.triton.anchor_tuning: Inductor benchmarks and walks its configs itself, one kernel at
a time on the GPU); the config it keeps is compiled from the stock module, its grid evaluated for each
committed launch. A whole-workload run under the tuner is not used: there other fusions and names leave
nothing to pair with the stock kernels (reports/h200_runs/2026-12-05-h100, call 3). Templates are left out,
with why. Writes data/kernels/captured/<w>/anchors.json and .../anchors/<stem>/<mode>.ptx.gz.
"""

from __future__ import annotations

import json
import os
import sys
import time
import traceback
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from make_block_variants import inductor_sources, workload_jobs
from make_knob_variants import cache_by_identity, gz, rerun

from chronos.config.params import load
from chronos.kernels.profile import measured_gpu_ms
from chronos.kernels.spec import load_specs
from chronos.search.headroom import selected
from chronos.triton.anchor_tuning import MODES, is_template, torch_args, tune
from chronos.triton.inductor_source import build_kernel, error_text, find_stock

TEMPLATE = ("a template: its config is chosen by select_algorithm when the graph compiles, not by the "
            "launch-time autotuner (the step-level anchors cover it: scripts/e2e_one_process.py --anchors)")


def arguments(p) -> None:
    p.add_argument("--modes", nargs="*", default=list(MODES), choices=list(MODES))
    p.add_argument("--params", type=Path, default=ROOT / "params.yaml")
    p.add_argument("--all-kernels", action="store_true", help="not only the knob stages' selection")
    p.add_argument("--limit", type=int, help="kernels tuned per workload at most (most GPU time first)")


def kernel_anchors(job: tuple, spec, modes: list[str]) -> dict:
    """One kernel: per mode the tuner's config compiled from the stock module (or why not)."""
    paths, name, ident, launches, recorded = job
    if is_template(name):
        return {m: {"error": TEMPLATE} for m in modes}
    found, errors = find_stock(paths, name, ident, recorded)
    if found is None:
        return {m: {"error": "no config of its Inductor source remade the stock PTX", "tried": errors[:4]}
                for m in modes}
    module = Path(found[3])
    out, configs = {}, {}
    for mode in modes:
        t0 = time.perf_counter()
        try:
            configs[f"anchor:{mode}"] = {**tune(module, name, mode, torch_args(spec)),
                                         "tune_s": round(time.perf_counter() - t0, 2)}
        except Exception as e:  # noqa: BLE001 - one tuner's failure is said, the other goes on
            where = " <- ".join(f"{Path(f.filename).name}:{f.lineno} {f.name}"
                                for f in reversed(traceback.extract_tb(e.__traceback__)[-4:]))
            out[mode] = {"error": f"tuning: {error_text(e)} (at {where})"}
    if configs:
        got = build_kernel([str(module)], name, ident, launches, recorded, configs=configs)
        for v in got.get("variants", []):
            out[v["label"].split(":", 1)[1]] = v
        for label in configs:
            out.setdefault(label.split(":", 1)[1], {"error": got.get("error", "not compiled")})
    return out


def wanted(args, w: str, names: dict[str, str]) -> list[str]:
    """The stock PTX files of workload `w` to anchor, most GPU time first (chronos.kernels.profile): the
    kernels the knob stages select (--all-kernels: every one with a stock module), at most --limit of them
    tuned (templates, left out with why, do not count)."""
    folder = ROOT / "data/kernels" / f"captured/{w}"
    weight: dict[str, float] = {}
    ms = measured_gpu_ms(folder)
    for s in load_specs(folder / "specs.json"):
        weight[s.ptx] = weight.get(s.ptx, 0.0) + ms.get(s.kernel, 0.0)
    order = sorted(names, key=lambda f: -weight.get(f, 0.0))  # most GPU time first
    if not args.all_kernels:
        k = load(args.params).search.knob_census
        chosen = {s.ptx for _, s in selected(ROOT / "data/kernels", f"captured/{w}", k.per_family, k.select)}
        order = [f for f in order if f in chosen]
    tuned = [f for f in order if not is_template(names[f])]
    cut = set(tuned[args.limit:]) if args.limit is not None else set()
    return [f for f in order if f not in cut]


def write_manifest(dest: Path, prov: dict, entries: dict) -> None:
    dest.parent.mkdir(parents=True, exist_ok=True)
    dest.write_text(json.dumps({"provenance": prov, "kernels": entries}, indent=1, sort_keys=True) + "\n")


def main() -> int:
    args, prov = rerun(__doc__, "/tmp/chronos-anchors", arguments)
    if prov["ptxas"]:
        os.environ.setdefault("TRITON_PTXAS_PATH", prov["ptxas"])
    prov = {**prov, "modes": args.modes, "method": "the stock module tuned by Inductor (anchor_tuning)"}
    for w in args.workloads:
        folder, out = ROOT / "data/kernels/captured" / w, args.out / "data/kernels/captured" / w
        found, jobs = workload_jobs(w, cache_by_identity(args.scratch / f"triton-{w}"),
                                    inductor_sources(args.scratch / f"inductor-{w}"))
        first = {}
        for s in load_specs(folder / "specs.json"):
            first.setdefault(s.ptx, s)  # the first launch in capture order: the one Inductor tunes on
        job_of = {stock_file: job for _, stock_file, job in jobs}
        entries = {}
        for stock_file in wanted(args, w, {f: j[1] for f, j in job_of.items()}):
            job = job_of[stock_file]
            try:
                modes = kernel_anchors(job, first[stock_file], args.modes)
            except Exception as e:  # noqa: BLE001 - one kernel's failure is said, the rest go on
                modes = {m: {"error": error_text(e)} for m in args.modes}
            for mode, v in modes.items():
                if "ptx_text" in v:
                    v["ptx"] = f"anchors/{found[stock_file]['stem']}/{mode}.ptx.gz"
                    gz(out / v["ptx"], v.pop("ptx_text"))
            entries[stock_file] = {**found[stock_file], **modes}
            write_manifest(out / "anchors.json", prov, entries)  # after each kernel: a cut run keeps them
            print(f"{w} {job[1]}: " + ", ".join(f"{m} {v.get('kwargs', v.get('error', '?'))}"
                                                for m, v in modes.items()), flush=True)
        write_manifest(out / "anchors.json", prov, entries)
        made = {m: sum(1 for e in entries.values() if "ptx" in e.get(m, {})) for m in args.modes}
        same = {m: sum(1 for e in entries.values() if e.get(m, {}).get("same_as_stock")) for m in args.modes}
        print(f"{w}: {len(entries)} kernels; anchor variants {made}, same config as stock {same}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

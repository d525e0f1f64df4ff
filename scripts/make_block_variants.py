"""Build action space v3's block-size variants of the captured Inductor kernels (#28), on the GPU image
(torch 2.11, Triton 3.6: the versions that captured them).

    PYTHONUNBUFFERED=1 python3 scripts/make_block_variants.py --out /tmp/blocks [--workloads llama ...]

Runs each workload once with fresh caches (as scripts/make_knob_variants.py does), takes the generated Python
module of every captured kernel that has knob variants (the capture's own copy where it kept one, else the
one in this run's Inductor cache that defines the kernel), loads it (Inductor's own
autotuner object: the JIT function, its configs, its grid type) and compiles each of its configs until one
remakes the committed stock PTX exactly (by PTX identity) — that is the stock config; a kernel none
remakes gets no variants. Then every legal block move of that config (chronos.triton.blocks) is compiled,
and its grid is Inductor's grid expression evaluated with each launch's numels (checked first: for the stock
config it must give the captured grid). Writes, laid out as the repository holds them:
data/kernels/captured/<w>/blocks.json, .../blocks/<stem>/<label>.ptx.gz and .../blocks/<stem>/source.py.gz
(the kernel's Inductor source), with the provenance.
"""

from __future__ import annotations

import concurrent.futures as cf
import json
import multiprocessing
import os
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from make_knob_variants import cache_by_identity, gz, rerun

from chronos.kernels.spec import read_ptx_file
from chronos.triton.inductor_source import build_kernel, error_text
from chronos.triton.tuned_db import ptx_identity_sha256


def inductor_sources(cache: Path) -> dict[str, list[Path]]:
    """Kernel name -> the generated modules that define it (a kernel module holds one `@triton.jit` def; a
    graph's wrapper holds its kernels' sources as strings and is left out)."""
    out: dict[str, list[Path]] = {}
    for path in sorted(cache.rglob("*.py")):
        text = path.read_text(errors="replace")
        if "async_compile.triton(" in text or "@triton.jit" not in text:
            continue
        for name in re.findall(r"^@triton\.jit\s*\ndef\s+(\w+)\s*\(", text, re.MULTILINE):
            out.setdefault(name, []).append(path)
    return out


def init_worker(ptxas: str | None, scratch: str) -> None:
    if ptxas:
        os.environ["TRITON_PTXAS_PATH"] = ptxas
    os.environ["TRITON_CACHE_DIR"] = os.path.join(scratch, f"compile-{os.getpid()}")


def recorded_config(specs: list[dict], stock_file: str, knobs: dict) -> dict | None:
    """The config that ran, as the capture noted it ("constexprs {...}" in the spec's notes)."""
    notes = next((s.get("notes", "") for s in specs if s["ptx"] == stock_file), "")
    m = re.search(r"constexprs (\{.*\})\s*$", notes)
    if m is None:
        return None
    return {"kwargs": json.loads(m.group(1)), "num_warps": knobs["stock"]["num_warps"],
            "num_stages": knobs["stock"]["num_stages"]}


def workload_jobs(w: str, found: dict, sources: dict) -> tuple[dict, list]:
    folder = ROOT / "data/kernels/captured" / w
    knobs = json.loads((folder / "knobs.json").read_text())["kernels"]
    specs = json.loads((folder / "specs.json").read_text())
    captured = {i["stock_ptx"]: i for i in json.loads((folder / "triton.json").read_text()).values()}
    entries, jobs = {}, []
    for stock_file, k in sorted(knobs.items()):
        if not k.get("remade_stock"):
            continue
        ident = ptx_identity_sha256(read_ptx_file(folder / stock_file))
        hit = found.get(ident)
        name = hit[1]["name"] if hit else captured[stock_file]["name"]
        module = captured[stock_file].get("module")  # captures since #28 keep the module itself
        paths = [str(folder / module)] if module else [str(p) for p in sources.get(name, [])]
        if not paths:
            entries[stock_file] = {"error": "its Inductor module is neither captured nor in this run's cache"}
            continue
        launches = {s["kernel"]: (s["args"], s["grid"]) for s in specs if s["ptx"] == stock_file}
        entries[stock_file] = {"stem": k["stem"]}
        jobs.append((w, stock_file, (paths, name, ident, launches, recorded_config(specs, stock_file, k))))
    return entries, jobs


def record(folder: Path, e: dict, res: dict) -> None:
    """The worker's result into the manifest entry, PTX and source into their files."""
    if "error" in res:
        e.update(error=res["error"], tried=res.get("tried", []))
        return
    stem = e["stem"]
    e.update(source=f"blocks/{stem}/source.py.gz", stock_config=res["stock_config"],
             heuristic=res["heuristic"], grid_checks=res["grid_checks"], remade_stock=True, variants=[])
    if "template_grid_checks" in res:  # a template's row blocks: their grid rule checked per launch
        e["template_grid_checks"] = res["template_grid_checks"]
    gz(folder / e["source"], res["source_text"])
    for v in res["variants"]:
        if "ptx_text" in v:
            rel = f"blocks/{stem}/{v['label'].replace(',', '+')}.ptx.gz"
            gz(folder / rel, v.pop("ptx_text"))
            v["ptx"] = rel
        e["variants"].append(v)


def main() -> int:
    args, prov = rerun(__doc__, "/tmp/chronos-blocks")
    manifests, jobs = {}, []
    for w in args.workloads:
        found = cache_by_identity(args.scratch / f"triton-{w}")
        entries, js = workload_jobs(w, found, inductor_sources(args.scratch / f"inductor-{w}"))
        manifests[w] = entries
        jobs += js
    print(f"{len(jobs)} kernels on {args.jobs} processes", flush=True)
    with cf.ProcessPoolExecutor(args.jobs, mp_context=multiprocessing.get_context("spawn"),
                                initializer=init_worker, initargs=(prov["ptxas"], str(args.scratch))) as ex:
        futures = {ex.submit(build_kernel, *j[2]): j for j in jobs}
        for fut in cf.as_completed(futures):
            w, stock_file, _ = futures[fut]
            try:
                res = fut.result()
            except Exception as e:  # noqa: BLE001 - a worker that died is said for its kernel
                res = {"error": f"worker: {error_text(e)}"}
            record(args.out / "data/kernels/captured" / w, manifests[w][stock_file], res)
    for w, entries in manifests.items():
        folder = args.out / "data/kernels/captured" / w
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "blocks.json").write_text(json.dumps({"provenance": prov, "kernels": entries}, indent=1,
                                                       sort_keys=True) + "\n")
        n = sum(1 for e in entries.values() if e.get("remade_stock"))
        nv = sum(1 for e in entries.values() for v in e.get("variants", []) if "ptx" in v)
        print(f"{w}: {len(entries)} kernels, {n} stock configs found, {nv} block variants", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

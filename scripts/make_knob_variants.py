"""Build action space v3's knob variants of the captured workloads (#28), on the GPU image (Triton 3.6).

    PYTHONUNBUFFERED=1 python3 scripts/make_knob_variants.py --out /tmp/knobs [--workloads llama gpt2 ...]

Runs each workload once (scripts/workloads.py, in parallel, each with a fresh Triton and Inductor cache),
takes from that cache the TTIR of every kernel whose PTX is the committed stock PTX of a captured kernel
(matched by PTX identity, so a kernel is never paired with another's source), then recompiles each TTIR
(chronos.triton.recompile) with its stock options and the stock PTX's ISA version (a hand-written kernel
was compiled under Triton's own ptxas, an Inductor one under torch's, and each writes its own `.version`) —
which must remake the stock PTX, else the kernel gets no variants — and with every single knob value beside
stock. Writes under --out, as the repository lays it
out: data/kernels/captured/<w>/ttir/<stem>.ttir.gz (and
<stem>.json, Triton's metadata: the options it compiled with), .../knobs/<stem>/<knob>=<v>.ptx.gz and
.../knobs.json (per stock PTX: its stock knobs, whether stock was remade, per value the variant's PTX,
num_warps, shared memory, or the compile error), with the provenance; the workloads' logs go to
--scratch/logs.
"""

from __future__ import annotations

import argparse
import concurrent.futures as cf
import datetime
import gzip
import json
import multiprocessing
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from chronos.config.workloads import NAMES
from chronos.kernels.spec import read_ptx_file
from chronos.triton.recompile import knob_label, ptx_version_of, recompile, single_knobs
from chronos.triton.tuned_db import ptx_identity_sha256


def run_workloads(names: list[str], scratch: Path, logs: Path) -> dict[str, int]:
    procs = {}
    for w in names:
        env = {**os.environ, "TRITON_CACHE_DIR": str(scratch / f"triton-{w}"),
               "TORCHINDUCTOR_CACHE_DIR": str(scratch / f"inductor-{w}"), "PYTHONUNBUFFERED": "1"}
        log = open(logs / f"workload-{w}.log", "w")  # noqa: SIM115 - closed with the process
        procs[w] = (subprocess.Popen([sys.executable, str(ROOT / "scripts/workloads.py"), w, "--steps", "1"],
                                     env=env, stdout=log, stderr=subprocess.STDOUT, cwd=ROOT), log)
    codes = {}
    for w, (p, log) in procs.items():
        codes[w] = p.wait()
        log.close()
    return codes


def cache_by_identity(cache: Path) -> dict[str, tuple[Path, dict]]:
    """PTX identity -> (TTIR path, metadata) of every kernel in a Triton cache."""
    out = {}
    for meta_path in sorted(cache.glob("*/*.json")):
        ptx, ttir = meta_path.with_suffix(".ptx"), meta_path.with_suffix(".ttir")
        if not (ptx.is_file() and ttir.is_file()):
            continue
        meta = json.loads(meta_path.read_text())
        if "hash" in meta and "target" in meta:
            out[ptx_identity_sha256(ptx.read_text())] = (ttir, meta)
    return out


def inductor_ptxas() -> str | None:
    """The ptxas Inductor points Triton at before it compiles (torch's bundled one): the captured stock PTX
    was made under it, and its version decides the PTX ISA `.version` Triton writes."""
    import torch

    path = Path(torch.__file__).parent / "bin" / "ptxas"
    return str(path) if path.is_file() else None


def use_ptxas(path: str | None) -> None:
    if path:
        os.environ["TRITON_PTXAS_PATH"] = path


def build(job: tuple) -> dict:
    """One compile in a worker process: the variant's PTX and launch numbers, or the error."""
    ttir, meta, overrides, ptx_version = job
    try:
        b = recompile(Path(ttir), meta, overrides, ptx_version)
    except Exception as e:  # noqa: BLE001 - a knob value Triton cannot compile is a result, said as it is
        return {"error": f"{type(e).__name__}: {' '.join(str(e).split())[:300]}"}
    return {"ptx": b.ptx, "num_warps": b.num_warps, "shared": b.shared}


def gz(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(gzip.compress(text.encode(), 9, mtime=0))


def workload_jobs(w: str, found: dict) -> tuple[dict, list]:
    """Per distinct stock PTX of workload w: its entry in knobs.json (filled later) and its compile jobs."""
    folder = ROOT / "data/kernels/captured" / w
    identity = json.loads((folder / "triton.json").read_text())
    entries, jobs = {}, []
    for item in sorted(identity.values(), key=lambda i: i["stock_ptx"]):
        stock_file = item["stock_ptx"]
        if stock_file in entries:
            continue
        stock_ptx = read_ptx_file(folder / stock_file)
        ident = ptx_identity_sha256(stock_ptx)
        version = ptx_version_of(stock_ptx)
        hit = found.get(ident)
        if hit is None:
            entries[stock_file] = {"error": "no kernel of this run's Triton cache has this PTX"}
            continue
        ttir, meta = hit
        stock = {"num_warps": meta["num_warps"], "num_stages": meta["num_stages"],
                 "maxnreg": meta.get("maxnreg")}
        stem = Path(stock_file).name.split(".")[0]
        entries[stock_file] = {"stem": stem, "ttir": f"ttir/{stem}.ttir.gz", "stock": stock, "ident": ident,
                               "ttir_text": ttir.read_text(), "meta": meta, "variants": []}
        jobs.append((w, stock_file, None, (str(ttir), meta, None, version)))
        for knob, value in single_knobs(stock):
            jobs.append((w, stock_file, (knob, value), (str(ttir), meta, {knob: value}, version)))
    return entries, jobs


def rerun(doc: str, scratch: str, extra=None) -> tuple[argparse.Namespace, dict]:
    """The builders' common start: their arguments (`extra(parser)` adds a builder's own), every workload
    run once with fresh caches, the provenance (date, GPU, torch, Triton, exit codes, command, the ptxas
    Inductor uses)."""
    p = argparse.ArgumentParser(description=doc.splitlines()[0])
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--workloads", nargs="*", default=list(NAMES))
    p.add_argument("--jobs", type=int, default=os.cpu_count() or 4)
    p.add_argument("--scratch", type=Path, default=Path(scratch))
    if extra is not None:
        extra(p)
    args = p.parse_args()
    logs = args.scratch / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    codes = run_workloads(args.workloads, args.scratch, logs)
    print("workloads:", codes, flush=True)
    import torch
    import triton

    prov = {"date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
            "gpu": torch.cuda.get_device_name(0) if torch.cuda.is_available() else None,
            "torch": torch.__version__, "triton": triton.__version__, "workload_exit": codes,
            "command": " ".join(sys.argv), "ptxas": inductor_ptxas()}
    return args, prov


def main() -> int:
    args, prov = rerun(__doc__, "/tmp/chronos-knobs")
    manifests, jobs = {}, []
    for w in args.workloads:
        entries, js = workload_jobs(w, cache_by_identity(args.scratch / f"triton-{w}"))
        manifests[w] = entries
        jobs += js
    print(f"{len(jobs)} compiles on {args.jobs} processes", flush=True)
    with cf.ProcessPoolExecutor(args.jobs, mp_context=multiprocessing.get_context("spawn"),
                                initializer=use_ptxas, initargs=(prov["ptxas"],)) as ex:
        results = list(ex.map(build, [j[3] for j in jobs], chunksize=2))
    for (w, stock_file, knob, _), res in zip(jobs, results, strict=True):
        e = manifests[w][stock_file]
        if knob is None:
            e["remade_stock"] = "ptx" in res and ptx_identity_sha256(res["ptx"]) == e["ident"]
            if "error" in res:
                e["remake_error"] = res["error"]
            elif not e["remade_stock"]:  # kept to see how it differs
                e["remade_ptx"] = f"knobs/{e['stem']}/stock-remade.ptx.gz"
                gz(args.out / "data/kernels/captured" / w / e["remade_ptx"], res["ptx"])
            continue
        if not e["remade_stock"]:  # its variants would not be the stock kernel with one knob moved
            continue
        v = {"knob": knob[0], "value": knob[1]}
        if "error" in res:
            v["error"] = res["error"]
        elif ptx_identity_sha256(res["ptx"]) == e["ident"]:
            v["same_as_stock"] = True
        else:
            rel = f"knobs/{e['stem']}/{knob_label(*knob)}.ptx.gz"
            gz(args.out / "data/kernels/captured" / w / rel, res["ptx"])
            v.update(ptx=rel, num_warps=res["num_warps"], shared=res["shared"])
        e["variants"].append(v)
    for w, entries in manifests.items():
        folder = args.out / "data/kernels/captured" / w
        for e in entries.values():
            if "ttir_text" in e:
                gz(folder / e["ttir"], e.pop("ttir_text"))
                meta = e.pop("meta")
                (folder / e["ttir"]).with_suffix("").with_suffix(".json").write_text(
                    json.dumps(meta, indent=1, sort_keys=True) + "\n")  # the options it was compiled with
            e.pop("ident", None)
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "knobs.json").write_text(json.dumps({"provenance": prov, "kernels": entries}, indent=1,
                                                      sort_keys=True) + "\n")
        n = sum(1 for e in entries.values() if e.get("remade_stock"))
        nv = sum(1 for e in entries.values() for v in e.get("variants", []) if "ptx" in v)
        print(f"{w}: {len(entries)} stock PTX, {n} remade from TTIR, {nv} distinct knob variants", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

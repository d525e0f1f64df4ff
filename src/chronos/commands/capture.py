"""`chronos capture --out DIR -- CMD ...`: run a workload and turn every Triton kernel it launches into specs.

    chronos capture --out data/kernels/captured/llama_train -- python my_training_step.py --steps 2

The workload runs in a child process whose environment (chronos.triton.capture) records each distinct
launch signature, and whose Triton and Inductor caches point at fresh folders inside DIR: a warm cache would
let Triton skip its stages, and every process that compiles (Inductor's workers included, which never see a
hook installed in the parent) writes its PTX and metadata there. Afterwards `assemble` joins the launch
records with the cache into

    DIR/specs.json    KernelSpecs the measurement layer runs as they are (family "captured")
    DIR/ptx/*.ptx     the stock PTX of every kernel, one file per Triton compile hash
    DIR/triton.json   each spec's Triton identity (compile hash, entry, stock PTX): the tuned DB key
    DIR/capture.json  the workload's summary: kernels, launches per signature, what could not be mapped
    DIR/inputs/       captured tensors (size-capped; git-ignored: tuning falls back to a fresh draw)
    DIR/sources/      each launched kernel's defining Python module (Inductor's generated one, or the user's
                      file of a JIT function), by content; triton.json names it and the function in it

Nothing is dropped silently: a launch that does not become a spec (recording failed, an unsupported launch
option, arguments that cannot be mapped onto the PTX parameters) is listed in capture.json's `dropped` with
its kernel, launch count and reason, counted on stderr, and makes the exit status 1 (`--allow-partial` accepts
it). An autotuner's benchmark launches are counted apart (`autotune_benchmark_launches`): the config it chose
is the launch recorded.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

from chronos.errors import ChronosError, SpecError
from chronos.files import read_json_file
from chronos.kernels.spec import KernelSpec, write_specs
from chronos.ptx import parse
from chronos.triton import bootstrap
from chronos.triton.capture import ENV_DIR, ENV_TENSOR_CAP, ENV_TOTAL_CAP, TENSOR_CAP, TOTAL_CAP
from chronos.triton.capture_args import (
    CaptureError,
    map_args,
    ptx_params,
)

FAMILY = "captured"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--out", type=Path, required=True, metavar="DIR", help="where the capture is written")
    p.add_argument("--workload", help="the workload's name in the summary (default: DIR's name)")
    p.add_argument("--tensor-cap", type=int, default=TENSOR_CAP, metavar="BYTES",
                   help=f"largest tensor whose contents are saved (default {TENSOR_CAP >> 20} MiB)")
    p.add_argument("--total-cap", type=int, default=TOTAL_CAP, metavar="BYTES",
                   help=f"all saved tensors together (default {TOTAL_CAP >> 30} GiB)")
    p.add_argument("--assemble-only", action="store_true", help="only rebuild the specs from DIR's records")
    p.add_argument("--compact", action="store_true",
                   help="store the PTX gzip-compressed (ptx/*.ptx.gz), for a corpus kept in git")
    p.add_argument("--compact-only", action="store_true", help="only compact an existing capture DIR")
    p.add_argument("--force", action="store_true", help="replace a capture that DIR already holds")
    p.add_argument("--allow-partial", action="store_true",
                   help="exit 0 even when some launches could not be captured (they are still listed in "
                        "capture.json and counted on stderr)")
    p.add_argument("cmd", nargs=argparse.REMAINDER, help="-- the workload's command line")


def run(args: argparse.Namespace) -> int:
    out = args.out.resolve()
    cmd = args.cmd[1:] if args.cmd[:1] == ["--"] else args.cmd
    rc = 0
    _check_out(out, args)
    if args.compact_only:
        print(f"capture: {compact(out)} PTX files compressed in {out / 'ptx'}")
        return 0
    if not args.assemble_only:
        if not cmd:
            raise ChronosError("chronos capture: no workload command (chronos capture --out DIR -- CMD ...)")
        rc = run_workload(out, cmd, args.tensor_cap, args.total_cap)
    summary = assemble(out, args.workload or out.name)
    if args.compact:
        compact(out)
    print(f"capture {summary['workload']}: {summary['kernels']} kernels ({summary['distinct_ptx']} distinct "
          f"PTX) from {summary['launch_signatures']} launch signatures, {summary['launches']} launches; "
          f"{summary['dropped_launches']} launches dropped -> {out / 'specs.json'}")
    if rc:
        print(f"chronos capture: the workload exited with status {rc}; what it launched before is kept",
              file=sys.stderr)
    return rc or _verdict(summary, out, args.allow_partial)


def _check_out(out: Path, args: argparse.Namespace) -> None:
    """Refuse what would lose data or do nothing: a new capture over an existing one (without --force), and
    --assemble-only / --compact-only on a folder that holds no capture."""
    if args.compact_only or args.assemble_only:
        need = "specs.json" if args.compact_only else "launches"
        if not (out / need).exists():
            raise ChronosError(f"chronos capture: {out} holds no capture ({out / need} is missing)")
    elif (out / "specs.json").exists() and not args.force:
        raise ChronosError(f"chronos capture: {out} already holds a capture; pass --force to replace it (its "
                           "specs, PTX, records and captured inputs are deleted first)")
    else:  # a folder the workload's processes can write into, or one line saying why not
        try:
            out.mkdir(parents=True, exist_ok=True)
            probe = out / ".chronos-write-test"
            probe.write_text("")
            probe.unlink()
        except OSError as e:
            raise ChronosError(f"chronos capture: --out {out} cannot be a capture folder: "
                               f"{e.strerror or e}") from None


def _verdict(summary: dict, out: Path, allow_partial: bool) -> int:
    """Exit status of a capture: 1 when launches were dropped (unless allowed) or nothing was launched."""
    dropped = summary["dropped"]
    if dropped:
        kernels = len({d["kernel"] for d in dropped})
        print(f"chronos capture: {summary['dropped_launches']} launches of {kernels} "
              f"kernels were not captured (listed in {out / 'capture.json'}, 'dropped'):", file=sys.stderr)
        for d in dropped[:20]:
            print(f"  dropped {d['launches']}x {d['kernel']}: {d['reason']}", file=sys.stderr)
    if not summary["launch_signatures"] and not dropped:
        from chronos.toolchain import cuda_gpu_available

        gpu = "" if cuda_gpu_available() else " (no CUDA GPU is visible here: Triton kernels cannot launch)"
        print(f"chronos capture: the workload launched no Triton kernel{gpu}; nothing was captured",
              file=sys.stderr)
        return 1
    return 1 if dropped and not allow_partial else 0


def run_workload(out: Path, cmd: list[str], tensor_cap: int, total_cap: int) -> int:
    """Run `cmd` with recording on and fresh Triton/Inductor caches under `out`; returns its exit status."""
    for sub in ("launches", "counts", "drops", "inputs", "sources", ".triton_cache", ".inductor_cache",
                ".bootstrap"):
        shutil.rmtree(out / sub, ignore_errors=True)
    for stale in out.glob("errors-*.log"):
        stale.unlink()
    env = bootstrap.environment(out / ".bootstrap", "chronos.triton.capture:start_from_env", dict(os.environ))
    env.update({ENV_DIR: str(out), ENV_TENSOR_CAP: str(tensor_cap), ENV_TOTAL_CAP: str(total_cap),
                "TRITON_CACHE_DIR": str(out / ".triton_cache"),
                "TORCHINDUCTOR_CACHE_DIR": str(out / ".inductor_cache"),
                "TORCHINDUCTOR_FX_GRAPH_CACHE": "0", "TORCHINDUCTOR_AUTOGRAD_CACHE": "0"})
    try:
        return subprocess.run(cmd, env=env, check=False).returncode
    except OSError as e:
        raise ChronosError(f"chronos capture: cannot run {cmd[0]!r}: {e}") from e


# ------------------------------------------------------------------ assembly
def scan_cache(cache: Path) -> dict[str, dict]:
    """{path key or compile hash: {"hash", "name", "ptx", "meta"}} of every kernel in a Triton file cache."""
    found: dict[str, dict] = {}
    for meta_path in sorted(cache.glob("*/*.json")) if cache.is_dir() else []:
        if meta_path.name.startswith("__grp__"):
            continue
        ptx = meta_path.with_suffix(".ptx")
        try:
            meta = json.loads(meta_path.read_text())
        except (OSError, json.JSONDecodeError):
            continue
        if not ptx.is_file() or "hash" not in meta or "name" not in meta:
            continue
        item = {"hash": meta["hash"], "name": meta["name"], "ptx": ptx, "meta": meta}
        found[meta_path.parent.name] = item
        found[meta["hash"]] = item
    return found


def _kernel_name(entry: str, compile_hash: str, signature: str) -> str:
    return f"{entry}_{compile_hash[:8]}_{signature[:6]}"


def assemble(out: Path, workload: str) -> dict:
    """Join DIR's launch records with DIR's Triton cache into specs.json, ptx/, triton.json, capture.json."""
    cache = scan_cache(out / ".triton_cache")
    records, counts = _read_records(out)
    shutil.rmtree(out / "ptx", ignore_errors=True)
    (out / "ptx").mkdir(parents=True)
    specs, identity, unmapped, per_kernel = [], {}, [], []
    for rec in sorted(records, key=lambda r: (r["function"], r["signature"])):
        try:
            spec, ident = _spec(out, rec, cache, workload)
        except (CaptureError, SpecError) as e:
            unmapped.append(
                {
                    "function": rec["function"],
                    "signature": rec["signature"],
                    "source": rec["source"],
                    "reason": str(e),
                }
            )
            continue
        specs.append(spec)
        identity[spec.kernel] = ident
        per_kernel.append(
            {
                "kernel": spec.kernel,
                "source": rec["source"],
                "launches": counts.get(rec["signature"], 0),
                "grid": list(spec.grid),
                "block": list(spec.block),
                "captured_inputs": sum(1 for a in spec.args if a.data),
                "launch_options": rec.get("launch_options", {}),
                "autotune": rec.get("autotune"),
            }
        )
    write_specs(out / "specs.json", specs)
    (out / "triton.json").write_text(json.dumps(identity, indent=1, sort_keys=True) + "\n")
    dropped, benchmark = _dropped(out, unmapped, counts)
    summary = {
        "workload": workload,
        "kernels": len(specs),
        "distinct_ptx": len({i["stock_ptx"] for i in identity.values()}),
        "launch_signatures": len(records),
        "launches": sum(counts.values()),
        "unmapped": unmapped,
        "dropped": dropped,
        "dropped_launches": sum(d["launches"] for d in dropped),
        "autotune_benchmark_launches": benchmark,
        "per_kernel": per_kernel,
        "errors": sorted(p.name for p in out.glob("errors-*.log")),
        "ptxas": sorted({i["ptxas"]["version"] for i in identity.values() if i.get("ptxas")}),
    }
    (out / "capture.json").write_text(json.dumps(summary, indent=1) + "\n")
    return summary


def _read_records(out: Path) -> tuple[list[dict], dict[str, int]]:
    """DIR's launch records and the launch count of each signature, summed over the processes."""
    records = []
    for path in sorted((out / "launches").glob("*.json")):
        rec = _read_json(path, "launch record")
        if not isinstance(rec, dict) or not {"function", "signature", "args"} <= set(rec):
            raise CaptureError(f"launch record {path.resolve()} is not one (a JSON object with function, "
                               "signature and args, as the recorder writes)")
        records.append(rec)
    counts: dict[str, int] = {}
    for path in sorted((out / "counts").glob("*.json")):
        data = _read_json(path, "launch count file")
        if not isinstance(data, dict) or not all(isinstance(n, int) and n >= 0 for n in data.values()):
            raise CaptureError(f"launch count file {path.resolve()} is not a map of signatures to counts")
        for sig, n in data.items():
            counts[sig] = counts.get(sig, 0) + n
    return records, counts


def _read_json(path: Path, what: str):
    return read_json_file(path.resolve(), what, error=CaptureError)


def _dropped(out: Path, unmapped: list[dict], counts: dict[str, int]) -> tuple[list[dict], dict[str, int]]:
    """Every launch that did not become a spec: dropped while recording (drops/<pid>.json, per kernel and
    reason) or recorded but not mappable (`unmapped`, with its signature's launch count); and the
    autotuners' benchmark launches per kernel, which are not the workload's and are not specs."""
    merged: dict[tuple[str, str, str], int] = {}
    benchmark: dict[str, int] = {}
    for path in sorted((out / "drops").glob("*.json")):
        try:
            data = json.loads(path.read_text())
            rows, bench = data["dropped"], data["autotune_benchmark_launches"]
        except (OSError, ValueError, KeyError, TypeError) as e:
            raise CaptureError(f"unreadable drop record {path.resolve()}: {e}") from None
        for row in rows:
            key = (row["kernel"], row["reason"], "record")
            merged[key] = merged.get(key, 0) + int(row["launches"])
        for kernel, n in bench.items():
            benchmark[kernel] = benchmark.get(kernel, 0) + int(n)
    for u in unmapped:
        key = (u["function"], u["reason"], "assemble")
        merged[key] = merged.get(key, 0) + max(1, counts.get(u["signature"], 0))
    dropped = [{"kernel": k, "reason": r, "stage": st, "launches": n}
               for (k, r, st), n in sorted(merged.items())]
    return dropped, dict(sorted(benchmark.items()))


def _spec(out: Path, rec: dict, cache: dict, workload: str) -> tuple[KernelSpec, dict]:
    item = cache.get(rec.get("cache_key") or "") or cache.get(rec.get("hash") or "")
    if item is None:
        raise CaptureError(
            "its PTX is not in the capture's Triton cache (compiled before the capture started, "
            "or served from another cache)"
        )
    ptx = item["ptx"].read_text()
    meta = item["meta"]
    module = parse(ptx, file=str(item["ptx"]))
    params = ptx_params(module, item["name"])
    args, alignment = map_args(rec, params)
    ptx_file = f"ptx/{item['name']}_{item['hash'][:8]}.ptx"
    if not (out / ptx_file).exists():
        (out / ptx_file).write_text(ptx)
    name = _kernel_name(item["name"], item["hash"], rec["signature"])
    grid = tuple(int(g) for g in (list(rec["grid"]) + [1, 1])[:3])
    spec = KernelSpec(
        kernel=name,
        family=FAMILY,
        entry=item["name"],
        ptx=ptx_file,
        grid=grid,
        block=(32 * int(meta.get("num_warps", rec["num_warps"])), 1, 1),
        args=tuple(args),
        shared_bytes=int(meta.get("shared", 0)),
        alignment=alignment,
        arch=module.arch,
        notes=f"captured from {workload} ({rec['source']}: {rec['function']}); "
        f"constexprs {json.dumps(rec.get('constexprs', {}), sort_keys=True)}",
    ).validate()
    return spec, {
        "hash": item["hash"],
        "name": item["name"],
        "stock_ptx": ptx_file,
        "num_warps": meta.get("num_warps"),
        "num_stages": meta.get("num_stages"),
        "source_hash": rec.get("source_hash"),
        "launch_options": rec.get("launch_options", {}),
        "ptxas": rec.get("ptxas"),  # the ptxas Triton assembled it with (Inductor: torch's, chronos tune)
        # the defining module under sources/ and the function in it: what a recompile starts from (#28)
        **{k: rec.get(k) for k in ("module", "module_name", "qualname", "source_sha256")},
    }


def compact(out: Path) -> int:
    """gzip DIR's PTX (byte-reproducibly: no timestamp) and point specs.json and triton.json at the
    .ptx.gz files, which every reader of a spec's PTX takes (chronos.kernels.spec.read_ptx_file)."""
    import gzip

    from chronos.errors import SpecError
    from chronos.kernels.spec import load_specs

    try:  # malformed specs or identities are named before anything changes
        if (out / "specs.json").is_file():
            load_specs(out / "specs.json")
    except SpecError as e:
        raise CaptureError(f"{(out / 'specs.json').resolve()}: {e}") from None
    identity = out / "triton.json"
    if identity.is_file() and not isinstance(_read_json(identity, "identity file"), dict):
        raise CaptureError(f"{(out / 'triton.json').resolve()} is not a map of kernels to Triton identities")
    done = 0
    for ptx in sorted((out / "ptx").glob("*.ptx")):
        ptx.with_name(ptx.name + ".gz").write_bytes(gzip.compress(ptx.read_bytes(), 9, mtime=0))
        ptx.unlink()
        done += 1
    for name, field in (("specs.json", "ptx"), ("triton.json", "stock_ptx")):
        path = out / name
        if not path.is_file():
            continue
        data = json.loads(path.read_text())
        items = data if isinstance(data, list) else data.values()
        for item in items:
            if item[field].endswith(".ptx") and (out / (item[field] + ".gz")).is_file():
                item[field] += ".gz"
        path.write_text(json.dumps(data, indent=1, sort_keys=name == "triton.json") + "\n")
    return done

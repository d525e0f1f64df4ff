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

A launch whose arguments cannot be mapped onto the PTX parameters is listed with the reason, not dropped
silently; the rest of the capture goes on.
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
import os
import shutil
import subprocess
import sys
from pathlib import Path

from chronos.errors import ChronosError, SpecError
from chronos.kernels.spec import DTYPES, ArgSpec, KernelSpec, write_specs
from chronos.ptx import Module, parse
from chronos.triton.capture import ENV_DIR, ENV_TENSOR_CAP, ENV_TOTAL_CAP, TENSOR_CAP, TOTAL_CAP

FAMILY = "captured"
_BOOTSTRAP = '''"""Written by chronos capture: record Triton launches in every process of the workload."""
import os as _os
import sys as _sys

try:
    from chronos.triton.capture import start_from_env as _start

    _start()
except Exception as _e:  # noqa: BLE001
    _sys.stderr.write(f"chronos capture: not recording in process {_os.getpid()}: {_e}\\n")
_here = _os.path.dirname(_os.path.abspath(__file__))
_sys.path[:] = [p for p in _sys.path if _os.path.abspath(p or ".") != _here]
del _sys.modules["sitecustomize"]
try:  # the sitecustomize this one shadows, if any
    import sitecustomize  # noqa: F401
except ImportError:
    pass
'''


class CaptureError(ChronosError):
    """A recorded launch that cannot become a KernelSpec."""


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
    p.add_argument("cmd", nargs=argparse.REMAINDER, help="-- the workload's command line")


def run(args: argparse.Namespace) -> int:
    out = args.out.resolve()
    cmd = args.cmd[1:] if args.cmd[:1] == ["--"] else args.cmd
    rc = 0
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
          f"{len(summary['unmapped'])} not mapped -> {out / 'specs.json'}")
    for item in summary["unmapped"][:10]:
        print(f"  not mapped: {item['function']} ({item['signature']}): {item['reason']}", file=sys.stderr)
    if rc:
        print(f"chronos capture: the workload exited with status {rc}; what it launched before is kept",
              file=sys.stderr)
    return rc


def run_workload(out: Path, cmd: list[str], tensor_cap: int, total_cap: int) -> int:
    """Run `cmd` with recording on and fresh Triton/Inductor caches under `out`; returns its exit status."""
    for sub in ("launches", "counts", "inputs", ".triton_cache", ".inductor_cache", ".bootstrap"):
        shutil.rmtree(out / sub, ignore_errors=True)
    for stale in out.glob("errors-*.log"):
        stale.unlink()
    boot = out / ".bootstrap"
    boot.mkdir(parents=True)
    (boot / "sitecustomize.py").write_text(_BOOTSTRAP)
    src = Path(__file__).resolve().parent.parent  # so the workload's Python finds chronos
    env = dict(os.environ)
    env.update({ENV_DIR: str(out), ENV_TENSOR_CAP: str(tensor_cap), ENV_TOTAL_CAP: str(total_cap),
                "TRITON_CACHE_DIR": str(out / ".triton_cache"),
                "TORCHINDUCTOR_CACHE_DIR": str(out / ".inductor_cache"),
                "TORCHINDUCTOR_FX_GRAPH_CACHE": "0", "TORCHINDUCTOR_AUTOGRAD_CACHE": "0",
                "PYTHONPATH": os.pathsep.join([str(boot), str(src), *filter(None, [env.get("PYTHONPATH")])])})
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


_SCALARS = {
    "u32": "i32",
    "s32": "i32",
    "b32": "i32",
    "u64": "i64",
    "s64": "i64",
    "b64": "i64",
    "f32": "f32",
    "f64": "f64",
    "u8": "u8",
    "s8": "i8",
    "b8": "u8",
    "u16": "i16",
    "s16": "i16",
    "b16": "i16",
}


def ptx_params(module: Module, entry: str) -> list[tuple[str, str, bool]]:
    """(name, PTX type, is pointer) of the entry's parameters, in order."""
    for fn in module.entries():
        if fn.name == entry:
            return [(p.name, p.dtype.lstrip("."), p.is_ptr) for p in fn.params]
    raise CaptureError(f"entry {entry} not found in its PTX")


def _mappable(args: list[dict], constants: dict, drop_ones: bool) -> list[dict]:
    kept = []
    for a in args:
        if a["kind"] == "none" or a["name"] in constants:
            continue
        if drop_ones and a["kind"] == "scalar" and a.get("pytype") == "int" and a["value"] == 1:
            continue  # Triton specialises integers equal to 1 into constants
        kept.append(a)
    return kept


def map_args(record: dict, params: list[tuple[str, str, bool]]) -> tuple[list[ArgSpec], dict[str, int]]:
    """The recorded launch arguments as ArgSpecs on the PTX parameters, and the alignment contract (16 bytes
    where the captured pointer had it: Triton specialised on it). The trailing pointer parameters nobody
    passes (Triton's global and profile scratch) become null arguments."""
    fits = None
    for drop_ones in (False, True):
        kept = _mappable(record["args"], record.get("constants", {}), drop_ones)
        if (
            len(kept) <= len(params)
            and all((a["kind"] == "tensor") == p[2] for a, p in zip(kept, params))
            and all(p[2] for p in params[len(kept) :])
        ):
            fits = kept
            break
    if fits is None:
        kinds = ["T" if a["kind"] == "tensor" else "S" for a in _mappable(record["args"], {}, False)]
        raise CaptureError(
            f"cannot map launch arguments {''.join(kinds)} onto PTX parameters "
            f"{''.join('P' if p[2] else 'S' for p in params)} (T/P tensor/pointer, S scalar)"
        )
    out = [_arg_spec(a, p) for a, p in zip(fits, params)]
    out += [ArgSpec(name=p[0], kind="null", dtype="u64", role="null") for p in params[len(fits) :]]
    alignment = {p[0]: 16 for a, p in zip(fits, params) if a["kind"] == "tensor" and a.get("align16")}
    return out, alignment


def _arg_spec(a: dict, param: tuple[str, str, bool]) -> ArgSpec:
    name, ptx_type, _ = param
    if a["kind"] == "scalar":
        dtype = _SCALARS.get(ptx_type)
        if dtype is None or not isinstance(a["value"], (int, float)):
            raise CaptureError(f"scalar {a['name']}={a['value']!r} as PTX .{ptx_type} is not supported")
        return ArgSpec(name=name, kind="scalar", dtype=dtype, value=a["value"])
    if a.get("dtype") is None or a["elements"] <= 0:
        raise CaptureError(
            f"tensor {a['name']} ({a.get('torch_dtype')}, strides {a.get('strides')}) "
            "has no supported dtype or a negative/empty span"
        )
    role = "output" if a.get("write_only") else "inout" if a.get("mutated") else "input"
    init = "poison" if role == "output" else _fresh_draw(a)
    return ArgSpec(
        name=name,
        kind="buffer",
        dtype=a["dtype"],
        elements=a["elements"],
        role=role,
        init=init,
        data=None if role == "output" else a.get("data"),
    )


def _num(x: float) -> str:
    return repr(float(x)) if math.isfinite(x) else "0.0"


def _fresh_draw(a: dict) -> str:
    """The second verification draw: values like the captured ones (integers stay in their observed range,
    so indices and targets stay valid)."""
    if a["dtype"] in ("f32", "f16", "bf16", "f64"):
        if "mean" not in a:
            return "normal(0,1)"
        std = a.get("std") or 0.0
        if std > 0:
            return f"normal({_num(a['mean'])},{_num(std)})"
        return f"uniform({_num(a['mean'])},{_num(a['mean'])})"
    if "min" in a:
        return f"randint({int(a['min'])},{int(a['max']) + 1})"
    return "zeros"


def _aliases(record: dict) -> str | None:
    spans = sorted(
        (a["ptr"], a["ptr"] + a["elements"] * DTYPES[a["dtype"]], a["name"])
        for a in record["args"]
        if a["kind"] == "tensor" and a.get("elements", 0) > 0 and a.get("dtype")
    )
    for (s0, e0, n0), (s1, _, n1) in itertools.pairwise(spans):
        if s1 < e0:
            return f"arguments {n0} and {n1} overlap in memory (a spec allocates each buffer apart)"
    return None


def _kernel_name(entry: str, compile_hash: str, signature: str) -> str:
    return f"{entry}_{compile_hash[:8]}_{signature[:6]}"


def assemble(out: Path, workload: str) -> dict:
    """Join DIR's launch records with DIR's Triton cache into specs.json, ptx/, triton.json, capture.json."""
    cache = scan_cache(out / ".triton_cache")
    records = []
    for path in sorted((out / "launches").glob("*.json")):
        try:
            records.append(json.loads(path.read_text()))
        except (OSError, json.JSONDecodeError) as e:
            raise CaptureError(f"unreadable launch record {path}: {e}") from e
    counts: dict[str, int] = {}
    for path in sorted((out / "counts").glob("*.json")):
        for sig, n in json.loads(path.read_text()).items():
            counts[sig] = counts.get(sig, 0) + n
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
            }
        )
    write_specs(out / "specs.json", specs)
    (out / "triton.json").write_text(json.dumps(identity, indent=1, sort_keys=True) + "\n")
    summary = {
        "workload": workload,
        "kernels": len(specs),
        "distinct_ptx": len({i["stock_ptx"] for i in identity.values()}),
        "launch_signatures": len(records),
        "launches": sum(counts.values()),
        "unmapped": unmapped,
        "per_kernel": per_kernel,
        "errors": sorted(p.name for p in out.glob("errors-*.log")),
        "ptxas": sorted({i["ptxas"]["version"] for i in identity.values() if i.get("ptxas")}),
    }
    (out / "capture.json").write_text(json.dumps(summary, indent=1) + "\n")
    return summary


def _spec(out: Path, rec: dict, cache: dict, workload: str) -> tuple[KernelSpec, dict]:
    item = cache.get(rec.get("cache_key") or "") or cache.get(rec.get("hash") or "")
    if item is None:
        raise CaptureError(
            "its PTX is not in the capture's Triton cache (compiled before the capture started, "
            "or served from another cache)"
        )
    if (why := _aliases(rec)) is not None:
        raise CaptureError(why)
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
        "ptxas": rec.get("ptxas"),  # the ptxas Triton assembled it with (Inductor: torch's, chronos tune)
    }


def compact(out: Path) -> int:
    """gzip DIR's PTX (byte-reproducibly: no timestamp) and point specs.json and triton.json at the
    .ptx.gz files, which every reader of a spec's PTX takes (chronos.kernels.spec.read_ptx_file)."""
    import gzip

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

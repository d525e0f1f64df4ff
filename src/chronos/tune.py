"""`chronos tune DIR`: tune a directory of kernels (a specs.json and its PTX files: a Triton tier, or a
captured workload) into per-kernel results and a tuned DB that chronos.triton deploys from.

    chronos tune data/kernels/triton --parts tune/parts --db tuned.sqlite [--backend gpu|replay]
        [--store STORE] [--checkpoint POLICY.pt] [--params params.yaml]
        [--kernel NAME] [--only REGEX] [--fixed a+b ...] [--budget SECONDS]

From any directory: the policy and params.yaml default to copies shipped in the package (chronos.defaults:
the repository's models/checkpoint_best.pt and params.yaml), the measurement store to DIR/measurements.sqlite
(the store lives with the corpus; the pipeline passes its data/store/measurements.sqlite), the parts to
DIR/tune-parts. Every path is made absolute first, so that messages name absolute paths.

Per kernel, one side-by-side comparison (chronos.optimize_time): the baseline, the policy's greedy decoding
and its `predict.beam` most probable sets, and the `--fixed` sets, each verified bit-exactly; the fastest
whose whole 99% interval clears `min_gain` is the kernel's answer, else the baseline. A part file
`<parts>/<kernel>.json` is written per kernel, so a run resumes where it stopped and shards can run as
separate jobs (`--kernel`, one per GPU or cluster node: workflow/tune/Snakefile); the DB is written from the
parts in one step (`--db`), never by concurrent jobs. `--budget` stops starting new kernels after that many
seconds. Per kernel it prints the returned set and its time ratio tuned/stock with its 99% interval (<1 =
faster), the convention of `chronos tuned show`; the part files keep their `speedup_time` (stock/tuned).

Nothing is dropped silently: at the end (--merge-only too) every selected kernel not tuned is listed on
stderr with why, and in `<parts>/../tune-summary.json` (chronos.tune_summary): failed (with its error),
skipped (float atomics), left by --budget, untuned (no part file yet), not_deployable (faster, but no Triton
identity). The exit status is 1 when a kernel failed in this run, else 0.

A kernel becomes a DB entry only if it is faster and its directory has a `triton.json` with its Triton
identity ({kernel: {"hash": Triton's compile hash, "name": entry, "stock_ptx": file}}), written by capture.
The key's GPU, driver and ptxas are those the comparison was measured with, so a deployment elsewhere, or
one whose Triton assembles with another ptxas, misses and runs stock: tune with `--ptxas triton` to measure
the cubins Triton will build.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import time
from pathlib import Path

from chronos.deploy_rule import deploys
from chronos.errors import ChronosError
from chronos.kernels.profile import by_gpu_time
from chronos.ptx.atomics import float_atomics
from chronos.tune_args import resolve_paths
from chronos.tune_summary import read_part, report_not_tuned, returned_candidate, triton_identity


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("dir", type=Path, metavar="DIR", help="a folder with specs.json and its PTX files")
    p.add_argument("--parts", type=Path, help="per-kernel results (default: DIR/tune-parts)")
    p.add_argument("--db", type=Path, help="write the tuned DB from the parts (after tuning, if any)")
    p.add_argument("--kernel", help="tune this kernel only (a shard); with --db only merges")
    p.add_argument("--only", help="regex on kernel names")
    p.add_argument("--fixed", action="append", default=[], metavar="A+B",
                   help="a fixed action set measured beside the policy's (repeatable)")
    p.add_argument("--budget", type=float, help="stop starting new kernels after this many seconds")
    p.add_argument("--order-by", type=Path, metavar="PROFILE.json",
                   help="tune the kernels with the most GPU time first (a workload profile with per-phase "
                        "'triton_kernels_us' by entry name, as scripts/workloads.py --profile writes)")
    p.add_argument("--retry-invalid", action="store_true",
                   help="(gpu) measure again a kernel whose stored comparison has an invalid baseline; with "
                        "its part file removed, so that it is tuned again")
    p.add_argument("--no-confirm", dest="confirm_new", action="store_false",
                   help="deploy a returned set on its one comparison, without comparing it again")
    p.add_argument("--confirm", action="store_true",
                   help="first compare once more every recorded returned set that has no confirmation")
    p.add_argument("--reconfirm-captured", action="store_true",
                   help="(gpu) compare once more every deployed set whose confirmation ran without the "
                        "captured inputs, now present (the earlier one moves to confirm_history)")
    p.add_argument("--merge-only", action="store_true", help="only write --db from existing parts")
    p.add_argument("--backend", choices=("gpu", "replay", "auto"), default="auto")
    p.add_argument("--store", type=Path, help="the measurement store: replay answers from it, gpu records "
                                              "into it (default: DIR/measurements.sqlite)")
    p.add_argument("--checkpoint", type=Path, help="the policy (default: the one shipped with chronos, a "
                                                   "copy of the repository's models/checkpoint_best.pt)")
    p.add_argument("--params", type=Path, help="params.yaml (default: the one shipped with chronos)")
    p.add_argument("--ptxas", help="the ptxas that assembles the measured cubins; 'triton' = Triton's own, "
                                   "the one that assembles them at deployment (the DB key records it)")


def _selected(specs_json: Path, kernel: str | None, only: str | None):
    from chronos.kernels.spec import load_specs

    specs = [s for s in load_specs(specs_json)
             if (kernel is None or s.kernel == kernel) and (not only or re.search(only, s.kernel))]
    if kernel is not None and not specs:
        raise ChronosError(f"{specs_json}: no kernel named {kernel}")
    return specs


def _ptxas(choice: str, dir_: Path) -> str:
    """A ptxas path, or for 'triton' the one Triton assembles DIR's kernels with at deployment."""
    return deploy_ptxas(dir_) if choice == "triton" else choice


def deploy_ptxas(dir_: Path) -> str:
    """The ptxas Triton will assemble DIR's kernels with. Not always Triton's own: Inductor points
    TRITON_PTXAS_PATH at torch's bundled ptxas before compiling (torch 2.11+cu130 on the H200: 13.0, PTX ISA
    9.0, where Triton 3.6's own is 12.8 and rejects that PTX). Triton picks the PTX ISA from its ptxas's CUDA
    version, so the corpus's `.version` names the ptxas: the one capture recorded, else the first of
    TRITON_PTXAS_PATH, torch's bundled ptxas and Triton's own whose ISA matches."""
    try:
        from triton.backends.nvidia.compiler import get_ptxas, ptx_get_version
    except ImportError as e:
        raise ChronosError(f"--ptxas triton: Triton is not importable ({e})") from e
    from chronos.kernels.spec import read_ptx_file
    from chronos.toolchain import ptxas_version

    identity = triton_identity(dir_) or {}
    recorded = sorted({i["ptxas"]["path"] for i in identity.values() if i.get("ptxas")})
    want = sorted({_ptx_isa(read_ptx_file(dir_ / i["stock_ptx"])) for i in identity.values()} - {None})
    candidates = [*recorded, os.environ.get("TRITON_PTXAS_PATH"), _torch_ptxas(), get_ptxas(90).path]
    tried = []
    for path in dict.fromkeys(c for c in candidates if c and Path(c).is_file()):
        version = ptxas_version(path)
        isa = ptx_get_version(".".join(version.split(".")[:2]))
        if not want or isa == want[-1]:
            return path
        tried.append(f"{path} ({version}: ISA {isa / 10:.1f})")
    raise ChronosError(f"{dir_}: its PTX is ISA {want[-1] / 10:.1f} and no ptxas here emits it "
                       f"(tried {', '.join(tried) or 'none'}); set TRITON_PTXAS_PATH to the ptxas the "
                       "workload's Triton used, or pass --ptxas PATH")


def _ptx_isa(ptx: str) -> int | None:
    m = re.search(r"^\s*\.version\s+(\d+)\.(\d+)", ptx, re.MULTILINE)
    return 10 * int(m.group(1)) + int(m.group(2)) if m else None


def _torch_ptxas() -> str | None:
    """torch's bundled ptxas (CUDA builds), the one Inductor hands to Triton."""
    try:
        import torch
    except ImportError:
        return None
    path = Path(torch.__file__).parent / "bin" / "ptxas"
    return str(path) if path.is_file() else None


def tune_kernels(args: argparse.Namespace, selected: list) -> dict:
    """Tune every selected kernel without a part file yet; returns what happened: done (a count), failed
    ({kernel: error}), skipped and left (kernel names)."""
    from chronos.config import load
    from chronos.progress import progress
    from chronos.rl.checkpoint import load_model
    from chronos.search.atlas_replay import backend_with_atlas
    from chronos.triton.tuned_db import RATIO_HEADER

    cfg, parts, specs_json = load(args.params), args.parts, args.dir / "specs.json"
    todo = [s for s in selected if not (parts / f"{s.kernel}.json").exists()]
    if args.order_by:
        todo = by_gpu_time(todo, args.profile)
    fixed = [tuple(a for a in f.split("+") if a) for f in args.fixed]
    policy = load_model(args.checkpoint, action_space=cfg.actions).eval()
    t0, counts = time.perf_counter(), {"done": 0, "failed": {}, "skipped": [], "left": []}
    parts.mkdir(parents=True, exist_ok=True)
    kw = {"ptxas": _ptxas(args.ptxas, args.dir)} if args.ptxas else {}
    if args.retry_invalid and args.backend != "replay":
        kw["retry_invalid"] = True
    with backend_with_atlas(args.backend, args.store, cfg.measure, **kw) as backend:
        if args.confirm:
            counts["confirmed"] = confirm_recorded(args, specs_json, parts, backend, cfg)
        if args.reconfirm_captured and args.backend != "replay":
            counts["reconfirmed"] = reconfirm_captured(args, specs_json, parts, backend, cfg)
        if todo:
            print(f"tune: {'kernel':44s} returned set, {RATIO_HEADER}", flush=True)
        for spec in progress(todo, desc="tune", unit="kernel"):
            if args.budget is not None and time.perf_counter() - t0 > args.budget:
                counts["left"].append(spec.kernel)
            elif (racy := _racy_or_error(spec, specs_json, parts)) is True:
                counts["skipped"].append(spec.kernel)
            else:
                row, ptx = racy if racy else tune_one(spec, specs_json, backend, policy, cfg, fixed,
                                                      confirm=args.confirm_new)
                _record(args, parts, row, ptx)
                if "error" in row:
                    counts["failed"][spec.kernel] = row["error"]
                else:
                    counts["done"] += 1
    return counts


def _racy_or_error(spec, specs_json: Path, parts: Path) -> bool | tuple[dict, str]:
    """True when the kernel is skipped (float atomics), False to tune it, or the failed row when its PTX
    cannot be read (the run goes on with the next kernel)."""
    from chronos.kernels.spec import read_ptx

    try:
        return _skipped_as_racy(spec, read_ptx(specs_json, spec), parts)
    except ChronosError as e:
        return {"kernel": spec.kernel, "verdict": "unmeasured", "error": " ".join(str(e).split())[:400]}, ""


def _record(args: argparse.Namespace, parts: Path, row: dict, ptx: str) -> None:
    """A tuned kernel's part file (and its PTX), and its line: returned set, time ratio tuned/stock."""
    if "error" not in row or args.backend != "replay":  # a replay miss is not worth resuming from
        if ptx:
            (parts / f"{row['kernel']}.ptx").write_text(ptx)
        (parts / f"{row['kernel']}.json").write_text(json.dumps(row, indent=1) + "\n")
    if "error" in row:
        text = f"failed: {row['error'][:80]}"
    else:
        best = returned_candidate(row)
        ratio, (lo, hi) = (best["ratio"], best["ci"]) if best else (1.0, (1.0, 1.0))
        text = f"{row['returned']}, {ratio:.4f} [{lo:.4f}, {hi:.4f}]"
        if c := row.get("confirm"):
            again = f" {c['ratio']:.4f}" if c.get("ratio") is not None else ""
            text += f"; confirming comparison: {c['verdict']}{again}"
    print(f"tune: {row['kernel']:44s} {text}", flush=True)


def _confirm_parts(args, specs_json: Path, parts: Path, backend, cfg, wanted, record, label: str) -> int:
    """Compare once more (`confirm_one`) the set of every selected part that `wanted(spec, row)` picks,
    within --budget; `record(spec, row, comparison)` puts the answer into the row, whose part is rewritten.
    Returns how many were faster."""
    done, t0 = 0, time.perf_counter()
    for spec in _selected(specs_json, args.kernel, args.only):
        part = parts / f"{spec.kernel}.json"
        row = json.loads(part.read_text()) if part.is_file() else {}
        if not wanted(spec, row):
            continue
        if args.budget is not None and time.perf_counter() - t0 > args.budget:
            break
        tuned = (parts / f"{spec.kernel}.ptx").read_text()
        again = confirm_one(spec, specs_json, backend, tuned, row["returned"].split("+"), cfg)
        record(spec, row, again)
        part.write_text(json.dumps(row, indent=1) + "\n")
        done += again["verdict"] == "faster"
        print(f"tune: {label} {spec.kernel:44s} {again['verdict']} {again.get('ratio')}", flush=True)
    return done


def confirm_recorded(args, specs_json: Path, parts: Path, backend, cfg) -> int:
    """--confirm: the recorded parts that returned a set but carry no confirmation get one (their part
    rewritten), within --budget like the tuning after it; returns how many were confirmed faster."""
    return _confirm_parts(
        args, specs_json, parts, backend, cfg,
        wanted=lambda spec, row: row.get("returned", "baseline") != "baseline" and "confirm" not in row,
        record=lambda spec, row, again: row.update(confirm=again), label="confirm")


def captured_present(spec) -> list[str]:
    """The arguments of `spec` whose captured data file is present (draw 0 verifies on them)."""
    return sorted(a.name for a in spec.args if a.data and Path(a.data).is_file())


def reconfirm_captured(args, specs_json: Path, parts: Path, backend, cfg) -> int:
    """--reconfirm-captured: a deployed set confirmed without the captured inputs is compared again with
    them present (draw 0 = the captured tensors, draw 1 fresh), measured anew rather than answered by the
    store; the row's `confirm` becomes this comparison (the newest, which replay answers with) and
    `confirm_inputs` names the captured arguments it verified on. Returns how many stayed faster."""

    def record(spec, row, again):
        row["confirm_history"] = [*row.get("confirm_history", []), row.get("confirm")]
        row["confirm"] = again
        row["confirm_inputs"] = {"captured": captured_present(spec), "draws": cfg.measure.input_draws}

    def wanted(spec, row) -> bool:
        return deploys(row) and "confirm_inputs" not in row and bool(captured_present(spec))

    backend.remeasure = True
    try:
        return _confirm_parts(args, specs_json, parts, backend, cfg, wanted, record,
                              label="reconfirm on captured inputs")
    finally:
        backend.remeasure = False


def tune_one(spec, specs_json: Path, backend, policy, cfg, fixed=(), confirm=True) -> tuple[dict, str]:
    """One kernel's side-by-side comparison (chronos.optimize_time) -> (its part row, the PTX to deploy or
    "" when the baseline stays). A ChronosError becomes the row's `error`: the caller's run goes on. With
    `confirm`, a returned set is compared once more (`confirm_one`) and deploys only if that confirms it."""
    from chronos.kernels.spec import load_module
    from chronos.optimize_time import optimize_time

    try:
        res = optimize_time(spec, load_module(specs_json, spec), backend, policy,
                            max_steps=cfg.predict.max_steps, min_gain=cfg.search.greedy.min_gain,
                            beam=cfg.predict.beam, timing=cfg.timing, extra=list(fixed))
    except ChronosError as e:
        return {"kernel": spec.kernel, "verdict": "unmeasured", "error": " ".join(str(e).split())[:400]}, ""
    row = {**res.to_json(), "provenance": backend.provenance(), "verified_draws": cfg.measure.input_draws,
           "captured_inputs": captured_present(spec)}
    returned = row.get("returned", "baseline") != "baseline"
    if returned and confirm:
        row["confirm"] = confirm_one(spec, specs_json, backend, res.ptx, row["returned"].split("+"), cfg)
    return row, (res.ptx if returned else "")


def confirm_one(spec, specs_json: Path, backend, tuned_ptx: str, actions, cfg) -> dict:
    """A fresh side-by-side comparison of the baseline, the returned set and the baseline again (an A/A
    control inside it). The best of many contenders in one comparison tends to look faster there than it
    is (the winner's curse): on the H200, sets chosen on graph-timed kernels under 20 µs often measured
    slower in the next comparison (data/headroom). The verdict here decides deployment
    (chronos.deploy_rule)."""
    from chronos.kernels.spec import load_module
    from chronos.ptx import emit
    from chronos.search.timed import time_row
    from chronos.variant import Variant

    base = emit(load_module(specs_json, spec))
    variants = [Variant(spec, base, ()), Variant(spec, tuned_ptx, tuple(actions)), Variant(spec, base, ())]
    try:
        cmp = backend.compare(spec, variants, cfg.timing)
    except ChronosError as e:
        return {"verdict": "unmeasured", "error": " ".join(str(e).split())[:400]}
    row = time_row(cmp, 1, cfg.timing, cfg.search.greedy.min_gain)
    aa = cmp.estimate(2, cfg.timing)
    return {"ratio": row.get("ratio"), "ci": row.get("ci"), "verdict": row["verdict"], "primary": cmp.primary,
            "aa_ratio": aa.ratio if aa else None, "aa_ci": [aa.low, aa.high] if aa else None,
            "measured_at": cmp.provenance.get("created_at", "")}




def _skipped_as_racy(spec, ptx: str, parts: Path) -> bool:
    """A kernel with float atomics differs from itself run to run: nothing about it can be verified
    bit-exactly, so its part file records it as skipped, with the reason."""
    racy = float_atomics(ptx)
    if racy:
        row = {"kernel": spec.kernel, "verdict": "skipped",
               "reason": f"float atomics ({', '.join(racy)}): the output depends on the order the threads "
                         "add in, so no variant can be verified bit-exactly"}
        (parts / f"{spec.kernel}.json").write_text(json.dumps(row, indent=1) + "\n")
        print(f"tune: {spec.kernel:44s} skipped: float atomics", flush=True)
    return bool(racy)


def write_db(dir_: Path, parts: Path, db_path: Path) -> dict:
    """Faster kernels with a Triton identity -> tuned DB entries; returns counts."""
    from chronos.kernels.spec import load_specs, read_ptx_file
    from chronos.triton.tuned_db import TunedDB, make_key

    identity = triton_identity(dir_) or {}
    alignment = {s.kernel: s.alignment for s in load_specs(dir_ / "specs.json")}
    rows = [read_part(p) for p in sorted(parts.glob("*.json"))]
    counts = {"kernels": len(rows), "faster": 0, "not_confirmed": 0, "entries": 0, "no_identity": 0}
    with TunedDB(db_path) as db:
        for row in rows:
            if not deploys(row):
                counts["not_confirmed"] += row.get("returned", "baseline") != "baseline"
                continue
            counts["faster"] += 1
            ident = identity.get(row["kernel"])
            if ident is None:
                counts["no_identity"] += 1
                continue
            best = returned_candidate(row)
            stock = read_ptx_file(dir_ / ident["stock_ptx"])
            tuned = (parts / f"{row['kernel']}.ptx").read_text()
            prov = row["provenance"]
            key = make_key(ident["hash"], stock, ident["name"], gpu=prov["gpu"], driver=prov["driver"],
                           ptxas=prov["ptxas"])
            db.put(key, best["actions"], tuned, best["ratio"], tuple(best["ci"]),
                   {"bit_exact": True, "draws": row["verified_draws"], "verdict": best["verdict"],
                    "captured_inputs": row.get("captured_inputs", [])},
                   {"measured_at": row.get("measured_at", ""), "kernel": row["kernel"],
                    "alignment": alignment.get(row["kernel"], {})})  # deployment re-derives under it
            counts["entries"] += 1
    return counts


def run(args: argparse.Namespace) -> int:
    resolve_paths(args)
    selected = _selected(args.dir / "specs.json", args.kernel, args.only)
    counts: dict = {}
    if not args.merge_only:
        counts = tune_kernels(args, selected)
        print(f"tune: {counts['done']} tuned, {len(counts['failed'])} failed, "
              f"{len(counts['skipped'])} skipped, {len(counts['left'])} left by the "
              f"budget{': ' + ', '.join(counts['left'][:8]) if counts['left'] else ''}"
              + (f"; {counts['confirmed']} recorded sets confirmed faster" if "confirmed" in counts else "")
              + (f"; {counts['reconfirmed']} deployed sets faster again on the captured inputs"
                 if "reconfirmed" in counts else ""))
    if args.db:
        print(f"tune: tuned DB {args.db}: {write_db(args.dir, args.parts, args.db)}")
    return report_not_tuned(args, selected, counts)

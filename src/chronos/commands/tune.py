"""`chronos tune DIR`: tune a directory of kernels (a specs.json and its PTX files: a Triton tier, or a
captured workload) into per-kernel results and a tuned DB that chronos.triton deploys from.

    chronos tune data/kernels/triton --parts tune/parts --db tuned.sqlite [--backend gpu|replay]
        [--store STORE] [--checkpoint POLICY.pt] [--params params.yaml]
        [--kernel NAME] [--only REGEX] [--fixed a+b ...] [--budget SECONDS]

From any directory: the policy and params.yaml default to copies shipped in the package (chronos.defaults:
the repository's models/checkpoint_best.pt and params.yaml), the measurement store to DIR/measurements.sqlite
(the store lives with the corpus; the pipeline passes its data/store/measurements.sqlite), the parts to
DIR/tune-parts. Every path is made absolute first, so that messages name absolute paths.

Per kernel, one side-by-side comparison (chronos.optimize.timed): the baseline, the policy's greedy decoding
and its `predict.beam` most probable sets, and the `--fixed` sets, each verified bit-exactly; the fastest
whose whole 99% interval clears `min_gain` is the kernel's answer, else the baseline. A part file
`<parts>/<kernel>.json` is written per kernel, so a run resumes where it stopped and shards can run as
separate jobs (`--kernel`, one per GPU or cluster node: workflow/tune/Snakefile); the DB is written from the
parts in one step (`--db`), never by concurrent jobs. `--budget` stops starting new kernels after that many
seconds. Per kernel it prints the returned set and its time ratio tuned/stock with its 99% interval (<1 =
faster), the convention of `chronos tuned show`; the part files keep their `speedup_time` (stock/tuned).

Nothing is dropped silently: at the end (--merge-only too) every selected kernel not tuned is listed on
stderr with why, and in `<parts>/../tune-summary.json` (commands.tune_summary): failed (with its error),
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
import re
import time
from dataclasses import replace
from pathlib import Path

from chronos.commands.tune_args import resolve_paths
from chronos.commands.tune_summary import report_not_tuned
from chronos.errors import ChronosError, one_line
from chronos.kernels.profile import by_gpu_time
from chronos.tuning.config_db import latest_parts, leave_out_actions, write_configs
from chronos.tuning.db import write_db
from chronos.tuning.deploy_rule import deploys
from chronos.tuning.kernel import captured_present, confirm_one, skipped_as_racy, tune_one
from chronos.tuning.parts import returned_candidate
from chronos.tuning.ptxas import deploy_ptxas
from chronos.tuning.shapes import measured_rows
from chronos.tuning.step_choice import workload_step_choice


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
    p.add_argument("--configs-from", type=Path, nargs="+", metavar="PARTS",
                   help="with --db: Chronos v3's confirmed winners in these compile-knob stage parts "
                        "(data/knob_ptx/<w>, data/knob_blocks/<w>, data/knob_walk/<w>; a later folder's "
                        "part of a kernel supersedes an earlier one's): each one's config and PTX actions; "
                        "data/knob_shapes/<w>: the shared variants of several shapes judged again")
    p.add_argument("--leave-out-actions", nargs="+", default=[], metavar="ACTION",
                   help="with --configs-from: leave out every winner whose PTX actions use one of these (a "
                        "v2 action or group, e.g. l2_policy_streaming): a DB to time beside the full one "
                        "(default: those the workload's measured step ran faster without, "
                        "chronos.tuning.step_choice)")
    p.add_argument("--full-db", action="store_true",
                   help="with --configs-from: every winner, whatever the measured step chose (an "
                        "experiment's full DB, timed beside one less some winners)")
    p.add_argument("--backend", choices=("gpu", "replay", "auto"), default="auto")
    p.add_argument("--store", type=Path, help="the measurement store: replay answers from it, gpu records "
                                              "into it (default: DIR/measurements.sqlite)")
    p.add_argument("--checkpoint", type=Path, help="the policy (default: the one shipped with chronos, a "
                                                   "copy of the repository's models/checkpoint_best.pt)")
    p.add_argument("--params", type=Path, help="params.yaml (default: the one shipped with chronos)")
    p.add_argument("--tolerance", metavar="rtol=R,atol=A",
                   help="accept variants whose outputs differ from stock within this (NaN and inf matched), "
                        "marked as not bit-exact in the parts and the DB, with their ULP distance (default: "
                        "the params' measure.tolerance, strict: bit for bit)")
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


def tune_kernels(args: argparse.Namespace, selected: list) -> dict:
    """Tune every selected kernel without a part file yet; returns what happened: done (a count), failed
    ({kernel: error}), skipped and left (kernel names)."""
    from chronos.config import load
    from chronos.progress import progress
    from chronos.rl.checkpoint import load_model
    from chronos.search.atlas_replay import backend_with_atlas
    from chronos.triton.tuned_db import RATIO_HEADER

    cfg, parts, specs_json = load(args.params), args.parts, args.dir / "specs.json"
    if args.tolerance:  # checked like params.yaml's measure.tolerance (a ConfigError names the option)
        cfg = replace(cfg, measure=replace(cfg.measure, tolerance=args.tolerance))
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
        return skipped_as_racy(spec, read_ptx(specs_json, spec), parts)
    except ChronosError as e:
        return {"kernel": spec.kernel, "verdict": "unmeasured", "error": one_line(e, 400)}, ""


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


def _leave_out(args: argparse.Namespace) -> frozenset[str]:
    """The PTX actions whose winners the v3 DB leaves out: those named, else those the workload's measured
    step ran faster without (unless --full-db)."""
    if args.leave_out_actions or not args.configs_from or args.full_db:
        return leave_out_actions(args.leave_out_actions)
    choice = workload_step_choice(args.dir)
    if choice["leave_out"]:
        print(f"tune: leaving out the winners of {'+'.join(choice['leave_out'])}: {choice['why']}")
    return leave_out_actions(choice["leave_out"])


def run(args: argparse.Namespace) -> int:
    resolve_paths(args)
    leave_out = _leave_out(args)  # a misspelt action stops the run before it starts
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
        if args.configs_from:
            got = write_configs(args.dir, latest_parts(args.configs_from), args.db, leave_out,
                                measured_rows(args.configs_from))
            confirmed = sum(bool(s.get("confirmed")) for s in got["shared_variant"].values())
            print(f"tune: v3 winners in {args.db}: {got['entries']} configs, {got['ptx_entries']} PTX "
                  f"sets, of {got['kernels']} kernels ({len(got['same_ptx'])} served by the entry of another "
                  f"shape of their PTX; {len(got['shared_variant'])} shapes of one PTX whose winners differ "
                  f"run the one variant that won at each ({confirmed} judged again there by stage "
                  f"knob_shapes); {len(got['left_out'])} left out, why: "
                  f"{sorted(set(got['left_out'].values()))})")
    return report_not_tuned(args, selected, counts)

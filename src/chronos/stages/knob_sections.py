"""The shell that stages knob_census, knob_ptx, knob_blocks, knob_anchors, knob_walk and knob_shapes share
(not a stage itself): arguments, the backend, the per-kernel loop over the captured families
(chronos.search.knob_census, .knob_ptx, .knob_blocks, .knob_anchors, .knob_walk;
chronos.tuning.shape_confirm) and the report."""

from __future__ import annotations

import functools
import json
import sys
import time
from dataclasses import replace
from pathlib import Path

from chronos.errors import ChronosError
from chronos.kernels.profile import measured_gpu_ms, time_share, weighted_speedup
from chronos.kernels.spec import read_ptx
from chronos.measure.backend import ReplayBackend
from chronos.search.headroom import selected
from chronos.search.knob_anchors import NOT_INDUCTOR, anchors_kernel, anchors_summary
from chronos.search.knob_blocks import (
    blocks_kernel,
    blocks_summary,
    measured_without,
    nothing_to_try,
    prior_winner,
    v3_winner,
)
from chronos.search.knob_census import census_family, census_kernel, knob_summary, racy
from chronos.search.knob_ptx import joint_kernel, joint_summary, knob_winner
from chronos.search.knob_walk import walk_kernel, walk_summary
from chronos.stages.common import command_line, run_stage, write_json
from chronos.stages.measuring import add_backend_arguments, open_backend
from chronos.toolchain import ptxas_version
from chronos.tuning.parts import triton_identity
from chronos.tuning.ptxas import deploy_ptxas, ptxas_mismatch, recorded_ptxas
from chronos.tuning.shape_confirm import (
    confirm_kernel,
    own_winners,
    shapes_summary,
    shared_variants,
    stale_confirmation,
)
from chronos.tuning.shapes import NOT_SHARED

SUMMARIES = {"knob_census": knob_summary, "knob_ptx": joint_summary, "knob_blocks": blocks_summary,
             "knob_anchors": anchors_summary, "knob_walk": walk_summary, "knob_shapes": shapes_summary}


def add_arguments(ap) -> None:
    ap.add_argument("--section", choices=tuple(SUMMARIES), default="knob_census")
    ap.add_argument("--knob-parts", type=Path, default=Path("data/knob_census"),
                    help="(knob_ptx) the census's parts: each kernel's knob winner")
    ap.add_argument("--joint-parts", type=Path, default=Path("data/knob_ptx"),
                    help="(knob_blocks, knob_anchors) knob_ptx's parts: each kernel's earlier winner")
    ap.add_argument("--blocks-parts", type=Path, default=Path("data/knob_blocks"),
                    help="(knob_anchors) knob_blocks' parts: Chronos v3's winners beside the anchors")
    ap.add_argument("--walk-parts", type=Path, default=Path("data/knob_walk"),
                    help="(knob_shapes) knob_walk's parts: the DB's winners, with knob_ptx's, knob_blocks'")
    ap.add_argument("--kernels", type=Path, default=Path("data/kernels"))
    ap.add_argument("--parts", type=Path, help="default data/<section>")
    ap.add_argument("--out", type=Path, help="default reports/<section>.json")
    ap.add_argument("--budget", type=float, help="(gpu) seconds; default search.knob_census.budget_s")
    ap.add_argument("--compile", action="store_true",
                    help="(knob_walk, GPU image) compile the configs a walk visits that walk.json lacks")
    ap.add_argument("--remeasure", action="store_true",
                    help="(gpu) time again the kernels whose part is recorded (default: taken as recorded)")
    add_backend_arguments(ap)


def earlier_winners(args):
    """(spec, folder, family) -> v3_winner (knob_blocks' winner, else knob_ptx's), each kernel's rebuilt once
    per run: knob_walk's staleness check and its measure both ask for it (about 0.3 s a kernel here)."""
    parts = {"knob_ptx": args.joint_parts, "knob_blocks": args.blocks_parts}
    memo: dict[tuple[str, str], object] = {}

    def won(spec, folder: Path, family: str):
        if (family, spec.kernel) not in memo:
            memo[family, spec.kernel] = v3_winner(spec, folder, parts, family)
        return memo[family, spec.kernel]

    return won


def measuring_anew(backend, args):
    """The backend, told (on a GPU) to time again contenders the store has already compared, where the run
    must measure anew: a repeat (--remeasure) and stage knob_shapes, whose comparison is a judgement of its
    own (where a shape's own winner is the shared variant, [stock, variant] is the comparison its own stage
    confirmed it with: served from the store it would judge nothing again)."""
    if not isinstance(backend, ReplayBackend) and (args.remeasure or args.section == "knob_shapes"):
        backend.remeasure = True
    return backend


def shape_plan(args, parts: Path):
    """(knob_shapes) family -> (kernel -> the variant that stands for its shapes now, kernel -> its own
    winner's actions), read once per family and run: a run judges the variants chosen before it."""
    @functools.cache
    def plan(family: str) -> tuple[dict[str, str], dict[str, list[str]]]:
        folders = [args.joint_parts / family, args.blocks_parts / family, args.walk_parts / family,
                   parts / family]
        return shared_variants(args.kernels / family, folders), own_winners(folders[:3])

    return plan


def measurer(args, folder: Path, family: str, backend, timing, min_gain: float, compilers: dict, winners):
    """The section's measurement of one kernel of `family` (a row); earlier steps come from their parts
    (`winners`: earlier_winners). `compilers`: knob_walk's compiler per family, made on first use by
    `args.walk_compiler(args, folder)` (stage knob_walk gives it: only it depends on chronos.triton)."""
    section = args.section

    def measure(spec) -> dict:
        if section == "knob_census":
            return census_kernel(spec, folder, backend, timing, min_gain)
        if section == "knob_ptx":
            knob = knob_winner(args.knob_parts, family, spec.kernel)
            return joint_kernel(spec, folder, knob, backend, timing, min_gain)
        if section == "knob_blocks":
            prior = prior_winner(spec, folder, args.joint_parts, family)
            return blocks_kernel(spec, folder, prior, backend, timing, min_gain)
        if section == "knob_shapes":
            variants, owns = args.shape_plan(family)
            return confirm_kernel(spec, folder, variants[spec.kernel], owns.get(spec.kernel), backend, timing,
                                  min_gain)
        won = winners(spec, folder, family)
        if section == "knob_walk":
            if family not in compilers:
                compilers[family] = args.walk_compiler(args, folder)
            return walk_kernel(spec, folder, won, compilers[family], backend, timing, min_gain,
                               args.walk_steps)
        return anchors_kernel(spec, folder, won, backend, timing, min_gain)

    return measure


FOLLOWS_PTX = ("knob_blocks", "knob_walk")
"""Sections that build on knob_ptx's winner: a kernel knob_ptx has not measured has nothing to build on yet
(not "nothing won there", which would count it at 1.0)."""
WAITS_FOR_PTX = "not_measured: knob_ptx has not measured it yet (run stage knob_ptx on a GPU first)"


def hand_written(identity: dict, spec) -> dict | None:
    """The row of a kernel that is not Inductor's (its capture's `identity`, triton.json, names a module
    outside torch._inductor), None for an Inductor kernel or where the capture names no module."""
    module = (identity.get(spec.kernel) or {}).get("module_name") or ""
    if not module or module.startswith("torch._inductor"):
        return None
    return {"kernel": spec.kernel, "error": f"{NOT_INDUCTOR} ({module}): Inductor's max-autotune and "
            "coordinate descent choose configs for the kernels Inductor generates, not for it"}


def settler(args, folder: Path, family: str):
    """The row of a kernel the section decides from committed files alone, alike on a GPU and in replay (None:
    it is measured): float atomics are skipped (no variant can be verified bit-exactly); in knob_anchors, a
    hand-written kernel has no Inductor tuner to anchor it; in knob_blocks and knob_walk, a kernel knob_ptx
    has not measured waits for it; in knob_blocks, a kernel with nothing to try keeps stock."""
    identity = (triton_identity(folder) or {}) if args.section == "knob_anchors" else {}  # read once

    def settled(spec) -> dict | None:
        if row := racy(spec, read_ptx(folder / "specs.json", spec)):
            return row
        if args.section == "knob_anchors" and (row := hand_written(identity, spec)):
            return row
        if args.section in FOLLOWS_PTX and not (args.joint_parts / family / f"{spec.kernel}.json").is_file():
            return {"kernel": spec.kernel, "error": WAITS_FOR_PTX}
        if args.section == "knob_blocks":
            return nothing_to_try(spec, folder, prior_winner(spec, folder, args.joint_parts, family))
        if args.section == "knob_shapes" and spec.kernel not in args.shape_plan(family)[0]:
            return {"kernel": spec.kernel, "error": NOT_SHARED}
        return None

    return settled


def staleness(args, folder: Path, family: str, winners):
    """Why a recorded part of this section no longer answers its question, or None (census_family's
    `stale`): it was measured with another ptxas than the one the capture's Triton assembles the kernel with
    (the cubins timed are not the ones that run), or on another root than the earlier step's winner now (a
    walk: beside another earlier winner than knob_ptx's and knob_blocks' parts give now: `winners`)."""
    want = recorded_ptxas(folder)

    def stale(spec, recorded: dict) -> str | None:
        if why := ptxas_mismatch(want, recorded.get("provenance")):
            return why
        if args.section == "knob_ptx" and "root" in recorded:
            root = knob_winner(args.knob_parts, family, spec.kernel)
            if recorded["root"] != root:
                return (f"measured on {recorded['root'] or 'stock'}; the census's winner is now "
                        f"{root or 'stock'}")
        if args.section == "knob_blocks" and "blocks" in recorded and (  # rebuild knob_ptx's winner only then
                label := measured_without(recorded, prior_winner(spec, folder, args.joint_parts, family))):
            return f"measured without knob_ptx's winner {label}"
        if args.section == "knob_walk" and "prior" in recorded:
            won = winners(spec, folder, family)
            now = list(won.actions) if won is not None else None
            if recorded["prior"] != now:  # its comparisons judged another lineup than replay would build
                return (f"walked beside the earlier stages' winner {_label(recorded['prior'])}, which is now "
                        f"{_label(now)}")
        if args.section == "knob_shapes":
            return stale_confirmation(recorded, args.shape_plan(family)[0].get(spec.kernel))
        return None

    return stale


def _label(actions: list[str] | None) -> str:
    return "+".join(actions) if actions else "stock"


def deploying_ptxas(folder: Path, default: str) -> tuple[str, str | None]:
    """(gpu) The ptxas to time the family's kernels with: the one its capture recorded Triton using (or one
    here of that version: chronos.tuning.ptxas.deploy_ptxas), `default` where it recorded none; and why it
    cannot be matched here, or None."""
    want = recorded_ptxas(folder)
    if want is None:
        return default, None
    try:
        found = deploy_ptxas(folder)
        got = ptxas_version(found)
    except ChronosError as e:
        found, got = "", str(e)
    if got == want["version"]:
        return found, None
    return default, (f"{folder}: its kernels deploy with ptxas {want['version']} ({want['path']}), not "
                     f"found here ({found or 'none'}: {got}); set TRITON_PTXAS_PATH to it")


def refusing(why: str):
    def measure(spec) -> dict:
        raise ChronosError(why)
    return measure


def run(args, cfg) -> int:
    kcfg = cfg.search.knob_census
    parts = args.parts or Path("data", args.section)
    out_path = args.out or Path("reports", f"{args.section}.json")
    timing = kcfg.timing_for(cfg.timing)
    budget = args.budget if args.budget is not None else kcfg.budget_s
    args.walk_steps, args.shape_plan = kcfg.walk_steps, shape_plan(args, parts)
    if args.section in ("knob_anchors", "knob_walk"):  # Inductor's tuners change numerics: a tolerance
        cfg = replace(cfg, measure=replace(cfg.measure, tolerance=kcfg.anchor_tolerance))
    backend = measuring_anew(open_backend(args, cfg), args)
    weights = {f: measured_gpu_ms(args.kernels / f) for f in kcfg.families}  # each family's timed GPU time
    t0 = time.perf_counter()
    compilers: dict = {}
    gpus: set[str] = set()  # (replay) the GPUs the replayed parts were measured on

    def pin(prov: dict) -> None:
        if prov.get("gpu"):
            gpus.add(prov["gpu"])
        pin_part(backend, prov)

    try:
        replay, rows = isinstance(backend, ReplayBackend), []
        min_gain = cfg.search.greedy.min_gain
        default_ptxas = getattr(backend, "ptxas", None)
        # once per family, not per kernel: both read the capture's files (deploy_ptxas every stock PTX)
        family_ptxas = functools.cache(lambda folder: deploying_ptxas(folder, default_ptxas))
        winners = earlier_winners(args)
        family_stale = functools.cache(lambda family: staleness(args, args.kernels / family, family, winners))
        for family, item in measuring_order(args.kernels, kcfg, weights):
            folder = args.kernels / family
            measure = measurer(args, folder, family, backend, timing, min_gain, compilers, winners)
            if not replay and default_ptxas:
                path, why = family_ptxas(folder)
                backend.use_ptxas(path)
                measure = refusing(why) if why else measure
            rows += census_family(family, [item], measure, parts, replay,
                                  lambda: time.perf_counter() - t0 > budget, backend.provenance,
                                  args.section, settler(args, folder, family), pin, remeasure=args.remeasure,
                                  stale=family_stale(family))
        prov = {**backend.provenance(), "command": command_line(args.section, args.argv[2:]),
                **({"gpus": sorted(gpus)} if replay else {})}
    finally:
        backend.close()
        for c in compilers.values():
            getattr(c, "close", lambda: None)()
    summarize = SUMMARIES[args.section]
    by_family = {f: [r for r in rows if r.get("family") == f] for f in kcfg.families}
    out = {"section": args.section, "provenance": prov,
           "params": {"families": list(kcfg.families), "per_family": kcfg.per_family,
                      "timing": timing.to_json(),
                      **({"walk_steps": args.walk_steps} if args.section == "knob_walk" else {})},
           "summary": {f: {**summarize(rs), **time_shares(weights[f], rs)}
                       for f, rs in by_family.items()},
           "disagreements": [r["kernel"] for r in rows if r.get("as_recorded") is False],
           "kernels": rows}
    write_json(out_path, out)
    brief = {f: {k: s.get(k) for k in ("measured", "faster", "time_geomean", "exact_share")}
             for f, s in out["summary"].items()}
    print(f"{args.section}: {json.dumps(brief)}")
    return 1 if out["disagreements"] else 0


def pin_part(backend, prov: dict) -> None:
    """Replay a part as it was recorded: on its own GPU, from the comparisons the store held then (where
    the part says when: `recorded_at`), not a later stage's timing of the same contenders."""
    backend.gpu, backend.not_after = prov.get("gpu"), prov.get("recorded_at")


def measuring_order(kernels: Path, kcfg, weights: dict[str, dict[str, float]]) -> list[tuple[str, tuple]]:
    """(family, selected kernel) in the order they are measured. Selected by measured time (alone or after
    the profile's), the budget is spent by share (`weights`: per family chronos.kernels.profile.
    measured_gpu_ms): every family's kernels together, the largest share of its workload's timed Triton GPU
    time first, so a budget that runs out leaves the smallest shares unmeasured in every workload alike;
    otherwise family by family in selection order."""
    plan = []
    for f_index, family in enumerate(kcfg.families):
        weight = weights.get(family, {})
        total = sum(weight.values()) or 1.0
        for k_index, item in enumerate(selected(kernels, family, kcfg.per_family, kcfg.select,
                                                          kcfg.once_per)):
            plan.append((weight.get(item[1].kernel, 0.0) / total, f_index, k_index, family, item))
    if kcfg.select != "profile":
        plan.sort(key=lambda p: (-p[0], p[1], p[2]))
    return [(family, item) for *_, family, item in plan]


def time_shares(weight: dict[str, float], rows: list[dict]) -> dict:
    """The share of the family's timed GPU time (`weight`: chronos.kernels.profile.measured_gpu_ms) that its
    selected kernels carry, and its measured ones: what a per-kernel geomean over them can say of a step; and
    `triton_time_speedup`: that whole timed time over itself with each measured kernel's confirmed speedup
    applied (every other kernel at 1.0) — what the winners, all deployed, would give the workload's
    Triton kernels (not a measurement of the step: the e2e stages measure that)."""
    done = [r for r in rows if "best" in r]
    return {"selected_time_share": time_share(weight, [r["kernel"] for r in rows]),
            "measured_time_share": time_share(weight, [r["kernel"] for r in done]),
            "triton_time_speedup": weighted_speedup(weight, {r["kernel"]: r["speedup"] for r in done})}


def main(section: str, doc: str, argv: list[str] | None, walk_compiler=None) -> int:
    """Run the stage of `section` (one of SUMMARIES)."""
    argv = sys.argv[1:] if argv is None else argv
    def run_section(args, cfg) -> int:
        args.walk_compiler = walk_compiler
        return run(args, cfg)

    return run_stage(section, doc, add_arguments, run_section, ["--section", section, *argv])

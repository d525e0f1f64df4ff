"""reports/knob_walk.json (#28 item 4, stage knob_walk: the local search over each Inductor kernel's config)
as metrics and as a section of reports/README.md."""

from __future__ import annotations

from chronos.measure.verdicts import geomean
from chronos.report.knobs import _gpu, _workload, _x

V3 = ("kernels", "measured", "faster", "time_geomean", "exact_share", "with_coordesc", "walked", "moved",
      "steps", "chose_walk", "selected_time_share", "measured_time_share", "triton_time_speedup")


def latest_speedups(stages: dict[str, dict | None]) -> dict[tuple[str, str], tuple[str, float]]:
    """(family, kernel) -> (stage, v3's confirmed speedup) from the latest of `stages` (name -> report, in
    stage order) that measured the kernel: a later stage's row replaces an earlier one's, a row that is an
    error (not measured yet, skipped) replaces none. As the v3 DB takes each kernel's winner
    (chronos.tuning.config_db.latest_parts)."""
    out: dict[tuple[str, str], tuple[str, float]] = {}
    for stage, report in stages.items():
        for k in (report or {}).get("kernels") or []:
            if "error" not in k:
                out[(k["family"], k["kernel"])] = (stage, k.get("speedup") or 1.0)
    return out


def per_kernel_v3(stages: dict[str, dict | None]) -> dict[str, dict]:
    """Per workload, over every kernel some v3 stage measured, its latest stage's speedup: the per-kernel
    number of #28's targets (`time_geomean`, `measured`, `faster`, and how many kernels each stage gave)."""
    by_workload: dict[str, list[tuple[str, float]]] = {}
    for (family, _), won in latest_speedups(stages).items():
        by_workload.setdefault(_workload(family), []).append(won)
    return {w: {"time_geomean": geomean([s for _, s in rows]), "measured": len(rows),
                "faster": sum(s > 1.0 for _, s in rows),
                "from_stage": {st: n for st in stages if (n := sum(r[0] == st for r in rows))}}
            for w, rows in sorted(by_workload.items())}


def walk_metrics(walk: dict | None, metrics: dict, earlier: dict[str, dict | None] | None = None) -> None:
    """Into `metrics`: v3.<workload> from the walk where it measured the workload (the latest v3 step: the
    walk's choice includes the earlier winner), the block step's geomean kept as `before_walk`;
    v3_on_coordesc.<workload> from the walk from coordinate descent's config (knobs and PTX on top of it),
    knob_anchors' PTX-only number kept as `ptx_only`. With `earlier` (the stages before the walk, name ->
    report, in stage order), v3's `time_geomean`, `measured` and `faster` count every kernel at its latest
    stage's winner (a kernel the walk has not measured keeps its earlier winner, as the DB deploys it); the
    walk's own numbers over its kernels stay as `walk_time_geomean`, `walk_measured`, `walk_faster`."""
    for family, s in ((walk or {}).get("summary") or {}).items():
        if not s.get("measured"):
            continue
        w = _workload(family)
        prior = (metrics.get("v3") or {}).get(w, {})
        entry = {**{k: s[k] for k in V3 if k in s}, "gpu": _gpu(walk),
                 "before_walk": prior.get("time_geomean")}
        if entry.get("exact_share") is None and prior.get("exact_share") is not None:
            # the walk timed no candidate (no walk roots: hand-written kernels): the earlier step's share
            entry.update(exact_share=prior["exact_share"], exact_share_from="before_walk")
        metrics.setdefault("v3", {})[w] = entry
        if s["v3_on_coordesc"]["kernels"]:
            ptx_only = (metrics.get("v3_on_coordesc") or {}).get(w, {}).get("time_geomean")
            metrics.setdefault("v3_on_coordesc", {})[w] = {**s["v3_on_coordesc"], "ptx_only": ptx_only,
                                                            "from": "walk"}
    if earlier is None:
        return
    for w, every in per_kernel_v3({**earlier, "knob_walk": walk}).items():
        v3 = metrics.setdefault("v3", {}).setdefault(w, {})
        if "walked" in v3:  # the walk's entry: its own numbers kept beside the per-kernel ones
            v3.update({f"walk_{k}": v3[k] for k in ("time_geomean", "measured", "faster")})
        v3.update(every)


def walk_section(walk: dict | None, blocks: dict | None, v3: dict | None = None) -> list[str]:
    """Per workload: v3 before the walk (knob_blocks) and after it, with coordinate descent's configs
    admitted where bit-exact, how many walks moved and how far, the walk from coordinate descent's config
    over its kernel, and (from metrics' `v3`, walk_metrics with `earlier`) every kernel at its latest
    stage's winner."""
    summary = {f: s for f, s in ((walk or {}).get("summary") or {}).items() if s.get("measured")}
    if not summary:
        return []
    before = (blocks or {}).get("summary") or {}
    steps = (walk.get("params") or {}).get("walk_steps", "?")
    note = ("The walk (stage knob_walk, #28 item 4): from each Inductor kernel's stock config, moves of one "
            "block size or num_warps by a power of two, one side-by-side comparison per move against the "
            f"incumbent (at most search.knob_census.walk_steps = {steps} moves), bit-exact only, the v2 PTX "
            "actions on top of where it stops; likewise from coordinate descent's config (within the "
            "anchors' tolerance). Per kernel the ends and the earlier v3 winner are chosen in one comparison "
            "and the choice confirmed beside stock. Geomeans of stock / contender over the stage's kernels, "
            f"1.0 where nothing won (GPU: {_gpu(walk)}). The last column is #28's per-kernel number: every "
            "kernel some v3 stage measured, at the winner of the latest stage that measured it (a kernel the "
            "walk has not reached keeps its knob_blocks or knob_ptx winner, as the v3 DB deploys it).")
    head = ("| workload | kernels | v3 before the walk | v3 with the walk (faster) | with coordesc's configs "
            "(bit-exact) | walks moved (moves) | chosen from a walk | walk on coordesc over coordesc "
            "(faster/n) | every kernel, latest stage (faster/n) |")
    lines = ["", note, "", head, "|---|---|---|---|---|---|---|---|---|"]
    for family, s in summary.items():
        on, every = s["v3_on_coordesc"], (v3 or {}).get(_workload(family)) or {}
        latest = (f"{_x(every['time_geomean'])} ({every['faster']}/{every['measured']})"
                  if "from_stage" in every else "—")
        lines.append(f"| {_workload(family)} | {s['measured']} | "
                     f"{_x((before.get(family) or {}).get('time_geomean'))} | {_x(s['time_geomean'])} "
                     f"({s['faster']}) | {_x(s['with_coordesc'])} | {s['moved']}/{s['walked']} "
                     f"({s['steps']}) | {s['chose_walk']} | {_x(on['time_geomean'])} "
                     f"({on['faster']}/{on['kernels']}) | {latest} |")
    return lines

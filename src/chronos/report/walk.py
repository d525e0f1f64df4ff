"""reports/knob_walk.json (#28 item 4, stage knob_walk: the local search over each Inductor kernel's config)
as metrics and as a section of reports/README.md."""

from __future__ import annotations

from chronos.report.knobs import _gpu, _workload, _x

V3 = ("kernels", "measured", "faster", "time_geomean", "exact_share", "with_coordesc", "walked", "moved",
      "steps", "chose_walk", "selected_time_share", "measured_time_share", "triton_time_speedup")


def walk_metrics(walk: dict | None, metrics: dict) -> None:
    """Into `metrics`: v3.<workload> from the walk where it measured the workload (the latest v3 step: the
    walk's choice includes the earlier winner), the block step's geomean kept as `before_walk`;
    v3_on_coordesc.<workload> from the walk from coordinate descent's config (knobs and PTX on top of it),
    knob_anchors' PTX-only number kept as `ptx_only`."""
    for family, s in ((walk or {}).get("summary") or {}).items():
        if not s.get("measured"):
            continue
        w = _workload(family)
        before = (metrics.get("v3") or {}).get(w, {}).get("time_geomean")
        metrics.setdefault("v3", {})[w] = {**{k: s[k] for k in V3 if k in s}, "gpu": _gpu(walk),
                                           "before_walk": before}
        if s["v3_on_coordesc"]["kernels"]:
            ptx_only = (metrics.get("v3_on_coordesc") or {}).get(w, {}).get("time_geomean")
            metrics.setdefault("v3_on_coordesc", {})[w] = {**s["v3_on_coordesc"], "ptx_only": ptx_only}


def walk_section(walk: dict | None, blocks: dict | None) -> list[str]:
    """Per workload: v3 before the walk (knob_blocks) and after it, with coordinate descent's configs
    admitted where bit-exact, how many walks moved and how far, and the walk from coordinate descent's
    config over its kernel."""
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
            f"1.0 where nothing won (GPU: {_gpu(walk)}).")
    head = ("| workload | kernels | v3 before the walk | v3 with the walk (faster) | with coordesc's configs "
            "(bit-exact) | walks moved (moves) | chosen from a walk | walk on coordesc over coordesc "
            "(faster/n) |")
    lines = ["", note, "", head, "|---|---|---|---|---|---|---|---|"]
    for family, s in summary.items():
        on = s["v3_on_coordesc"]
        lines.append(f"| {_workload(family)} | {s['measured']} | "
                     f"{_x((before.get(family) or {}).get('time_geomean'))} | {_x(s['time_geomean'])} "
                     f"({s['faster']}) | {_x(s['with_coordesc'])} | {s['moved']}/{s['walked']} "
                     f"({s['steps']}) | {s['chose_walk']} | {_x(on['time_geomean'])} "
                     f"({on['faster']}/{on['kernels']}) |")
    return lines

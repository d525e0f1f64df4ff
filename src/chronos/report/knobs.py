"""reports/knob_census.json and reports/knob_ptx.json (#28, stage knob_census and its knob_ptx section) as
metrics and as a section of reports/README.md."""

from __future__ import annotations

from chronos.report.anchor_runs import across_runs_lines, draw_of, tuner_of

FIELDS = ("kernels", "measured", "faster", "time_geomean", "exact_share")


NOT_APPLICABLE = ("every kernel is hand-written Triton: Inductor's tuners choose configs only for the "
                  "kernels Inductor generates")


def _not_applicable(s: dict) -> bool:
    """A stage knob_anchors summary whose every kernel is hand-written (no Inductor tuner applies)."""
    return not s.get("measured") and bool(s.get("kernels")) and s.get("not_applicable") == s["kernels"]


def _workload(family: str) -> str:
    return family.split("/", 1)[1] if family.startswith("captured/") else family


def knob_metrics(census: dict | None, joint: dict | None = None, blocks: dict | None = None,
                 anchors: dict | None = None) -> dict:
    """knobs.<workload>.{kernels,measured,faster,time_geomean,exact_share} and, per knob,
    knobs.<workload>.<knob>.{variant,exact,faster,exact_share}: the census of single compile-knob values;
    v3.<workload>.{kernels,measured,faster,time_geomean,exact_share,...}: the joint space against stock, from
    its latest step that measured the workload (knob_blocks: block sizes too, else knob_ptx);
    anchor.<workload>.{max_autotune,coordesc}.{time_geomean,kernels} and v3_on_coordesc.<workload>: Inductor's
    tuners beside stock, and v2 PTX on top of coordinate descent's kernels (stage knob_anchors)."""
    out: dict = {}
    for family, s in ((census or {}).get("summary") or {}).items():
        if s.get("measured"):
            out.setdefault("knobs", {})[_workload(family)] = {**{k: s[k] for k in FIELDS}, **s["knobs"]}
    for step, keys in ((joint, ("ptx_on_top", "knob_root")), (blocks, ("ptx_on_top", "block_root"))):
        for family, s in ((step or {}).get("summary") or {}).items():
            if s.get("measured"):  # a later step replaces an earlier one's numbers
                out.setdefault("v3", {})[_workload(family)] = {
                    **{k: s[k] for k in (*FIELDS, *keys)}, "gpu": _gpu(step),
                    **{k: s[k] for k in ("stock_kept", "selected_time_share", "measured_time_share",
                                         "triton_time_speedup") if s.get(k) is not None}}
    for family, s in ((anchors or {}).get("summary") or {}).items():
        if _not_applicable(s):
            w, why = _workload(family), NOT_APPLICABLE
            out.setdefault("anchor", {})[w] = {"not_applicable": why, **{
                m: {"kernels": 0, "time_geomean": None} for m in ("max_autotune", "coordesc")}}
            out.setdefault("v3_on_coordesc", {})[w] = {"kernels": 0, "time_geomean": None,
                                                       "not_applicable": why}
        if s.get("measured"):
            w = _workload(family)
            out.setdefault("anchor", {})[w] = {m: {k: s[m][k] for k in ("kernels", "time_geomean")}
                                               for m in ("max_autotune", "coordesc")}
            if "head_to_head" in s:
                out["anchor"][w]["per_kernel_head_to_head"] = dict(s["head_to_head"])
            # v2 PTX on coordesc's kernel alone; where the walk ran from coordesc's config, it replaces this
            out.setdefault("v3_on_coordesc", {})[w] = {**s["v3_on_coordesc"], "from": "ptx_on_top"}
    return out


def _x(v) -> str:
    return f"{v:.4f}×" if v else "—"


def _gpu(step: dict | None) -> str:
    """The GPU a stage's numbers were measured on: in replay, every GPU its parts name."""
    prov = (step or {}).get("provenance") or {}
    return " and ".join(g.replace("NVIDIA ", "") for g in prov.get("gpus") or [prov.get("gpu", "?")])


def _cell(step: dict | None, family: str) -> str:
    s = ((step or {}).get("summary") or {}).get(family) or {}
    return f"{_x(s.get('time_geomean'))} ({s['faster']}/{s['kernels']})" if s.get("measured") else "—"


def knob_section(census: dict | None, joint: dict | None = None, blocks: dict | None = None) -> list[str]:
    """Per workload: kernels measured, how many a single knob value made faster (confirmed beside stock
    alone), the geomean, per knob how many of its variants kept stock's bits, the joint step's geomean and
    the block step's (each step names the GPU it was timed on)."""
    summary = (census or {}).get("summary") or {}
    if not any(s.get("measured") for s in summary.values()):
        return []
    knobs = sorted({k for s in summary.values() for k in s.get("knobs", {})})
    names = ", ".join(f"`{k}`" for k in knobs)
    lines = ["## Compile knobs, block sizes and PTX actions on the captured kernels (the joint space v3)", "",
             (f"Every single value of {names} beside stock, recompiled from the kernel's TTIR, timed side by "
              f"side and verified bit-exactly against stock on the {_gpu(census)}; the fastest winner is "
              "judged again beside stock alone (stage knob_census). Bit-exact: the share of the variants "
              "that kept every bit. knobs + PTX: the knob winner (or stock), then the best single v2 PTX "
              "action on top, "
              f"beside stock in one comparison and confirmed alone (stage knob_ptx, {_gpu(joint)}). + block "
              "sizes: each Inductor kernel's XBLOCK/YBLOCK/R0_BLOCK one power of two up or down (num_warps "
              "kept or moved alike) beside the knob_ptx winner timed again, v2 PTX on top of a block "
              f"winner, confirmed alone (stage knob_blocks, {_gpu(blocks)}). Geomeans are per kernel over "
              "every kernel of the workload but those with float atomics, 1.0 where nothing won; in "
              "parentheses faster / kernels."),
             "", ("Time measured: the share of the workload's Triton GPU time (launches x chronos tune's "
                  "stock time) that the kernels the block step measured carry "
                  "(scripts/selection_coverage.py); Triton time: that whole time over itself with every "
                  "measured winner's speedup applied (the others at 1.0), what the winners would give the "
                  "workload's Triton kernels, not a step measurement."),
             "", "| workload | kernels | faster | geomean | bit-exact | "
             + " | ".join(f"{k} exact" for k in knobs)
             + " | knobs + PTX | + block sizes | time measured | Triton time |",
             "|---|---|---|---|---|" + "---|" * len(knobs) + "---|---|---|---|"]
    for family, s in summary.items():
        if not s.get("measured"):
            continue
        per = [f"{s['knobs'][k]['exact']}/{s['knobs'][k]['variant']}" if k in s["knobs"] else "—"
               for k in knobs]
        share = f"{s['exact_share']:.0%}" if s.get("exact_share") is not None else "—"
        b = ((blocks or {}).get("summary") or {}).get(family) or {}
        carried, triton = b.get("measured_time_share"), b.get("triton_time_speedup")
        steps = (f" | {_cell(joint, family)} | {_cell(blocks, family)} | "
                 f"{'—' if carried is None else f'{carried:.0%}'} | {_x(triton)} |")
        lines.append(f"| {_workload(family)} | {s['measured']} | {s['faster']} | {_x(s['time_geomean'])} | "
                     f"{share} | " + " | ".join(per) + steps)
    return lines


def _ci(m: dict, name: str) -> str:
    return f"{m[name]:.4f} ({m[f'{name}_ci95_low']:.4f}–{m[f'{name}_ci95_high']:.4f})"


def anchors_section(anchors: dict) -> list[str]:
    """Inductor's tuners beside Chronos v3 at the step (metrics' anchor.<workload>, from
    scripts/e2e_one_process.py --anchors): one row per workload, each ratio with its 95% interval."""
    rows = {w: a for w, a in sorted(anchors.items()) if "v3" in a}
    if not rows:
        return []
    note = ("Inductor's tuners beside Chronos v3, step time in one process (`scripts/e2e_one_process.py "
            "--anchors max_autotune coordesc`: stock, its second copy, Chronos v3 on stock, and the workload "
            "compiled again under max-autotune and under coordinate descent with max-autotune, all taking "
            "turns in a fresh order each round; median of per-round ratios, bootstrap 95% CI). Above 1: the "
            "first is slower. Bitwise: the tuner's outputs equal stock's bit for bit. Draw k: a run with "
            "`--anchor-draws N` compiled the tuner N times, each with caches of its own.")
    head = ("| workload | GPU, rounds | stock / v3 | A/A | stock / max-autotune | max-autotune / v3 | "
            "stock / coordesc | coordesc / v3 | bitwise (max-autotune, coordesc) |")
    lines = ["", note, "", head, "|---|---|---|---|---|---|---|---|---|"]
    for w, a in rows.items():
        lines.append(_anchors_row(w, a))
        if "earlier_run" in a:  # a tuner the latest run did not time: its own run's row, its own v3
            lines.append(_anchors_row(f"{w} (earlier run)", a["earlier_run"]))
    return lines + across_runs_lines(rows)


def _anchors_row(label: str, a: dict) -> str:
    """One run's row; a tuner drawn several times in the run (--anchor-draws) has each draw in its cells."""
    runs = sorted((k for k, v in a.items() if isinstance(v, dict) and "step_speedup" in v), key=draw_of)
    draws = {t: [a[k] for k in runs if tuner_of(k) == t] for t in ("max_autotune", "coordesc")}

    def cell(t: str, key: str) -> str:
        if not draws[t]:
            return "—"
        return "; ".join((f"draw {i}: " if len(draws[t]) > 1 else "") + _ci(v, key)
                         for i, v in enumerate(draws[t], 1))

    cells = [cell(t, k) for t in draws for k in ("step_speedup", "v3_over")]
    bitwise = ["/".join(str(v["bitwise"]) for v in draws[t]) or "—" for t in draws]
    gpu = a["gpu"].replace("NVIDIA ", "") + (", CUDA graphs" if a.get("timing") == "cuda_graphs" else "")
    return (f"| {label} | {gpu}, {a['rounds']} | {_ci(a, 'v3')} | {_ci(a, 'aa')} | " + " | ".join(cells)
            + f" | {', '.join(bitwise)} |")


HEAD_TO_HEAD = ("max_autotune", "coordesc", "chronos", "coordesc_ptx")


def kernel_anchors_section(anchors: dict | None) -> list[str]:
    """Inductor's tuners per kernel (stage knob_anchors): per workload, each tuner's geomean over stock on
    the kernels it was run on (1.0 where it kept stock's config); head to head where a tuner moved: each
    tuner and Chronos v3 in the same comparisons; v2 PTX on top of coordinate descent's kernel."""
    every = (anchors or {}).get("summary") or {}
    summary = {f: s for f, s in every.items() if s.get("measured")}
    if not summary:
        return []
    aside = [_workload(f) for f, s in every.items() if _not_applicable(s)]
    note = ("Inductor's tuners per kernel (stage knob_anchors): the config max-autotune and coordinate "
            "descent keep for each stock kernel, tuned by Inductor itself on the kernel's own inputs "
            "(scripts/make_anchor_variants.py: the kernels with the most GPU time among the stages' "
            "selection; templates left out), timed beside stock and Chronos v3's winner in one "
            "comparison (within search.knob_census.anchor_tolerance; Chronos strict). Geomeans of stock / "
            "contender: per tuner over the kernels tuned (1.0 where it kept stock's config; faster: its "
            "interval below 1); head to head over the kernels where a tuner moved (Chronos 1.0 where v3 "
            "has no winner; coordesc + PTX: coordinate descent's kernel with the v2 PTX confirmed on top, "
            "over stock); last column: v2 PTX on top of coordinate descent's kernel, over it alone "
            f"(GPU: {_gpu(anchors)}).")
    head = ("| workload | max-autotune (faster/tuned) | coordesc (faster/tuned) | head to head: kernels | "
            "max-autotune | coordesc | Chronos v3 | coordesc + PTX | PTX on coordesc (faster/n) |")
    lines = ["", note, "", head, "|---|---|---|---|---|---|---|---|---|"]
    for family, s in summary.items():
        tuners = [f"{_x(s[k]['time_geomean'])} ({s[k].get('faster', '?')}/{s[k]['kernels']})"
                  for k in ("max_autotune", "coordesc")]
        h = s.get("head_to_head") or {}
        on = s["v3_on_coordesc"]
        lines.append(f"| {_workload(family)} | " + " | ".join(tuners) + f" | {h.get('kernels', '—')} | "
                     + " | ".join(_x(h.get(k)) for k in HEAD_TO_HEAD)
                     + f" | {_x(on['time_geomean'])} ({on['faster']}/{on['kernels']}) |")
    if aside:
        lines += ["", f"Not applicable to {', '.join(aside)}: {NOT_APPLICABLE}."]
    return lines

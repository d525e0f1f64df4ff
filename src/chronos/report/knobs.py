"""reports/knob_census.json (#28, stage knob_census) as metrics and as a section of reports/README.md."""

from __future__ import annotations

FIELDS = ("kernels", "measured", "faster", "time_geomean", "exact_share")


def _workload(family: str) -> str:
    return family.split("/", 1)[1] if family.startswith("captured/") else family


def knob_metrics(census: dict | None) -> dict:
    """knobs.<workload>.{kernels,measured,faster,time_geomean,exact_share} and, per knob,
    knobs.<workload>.<knob>.{variant,exact,faster,exact_share}: the census of single compile-knob values
    (no PTX actions on top: that is the joint space v3)."""
    out = {}
    for family, s in ((census or {}).get("summary") or {}).items():
        if not s.get("measured"):
            continue
        out[_workload(family)] = {**{k: s[k] for k in FIELDS}, **s["knobs"]}
    return {"knobs": out} if out else {}


def _x(v) -> str:
    return f"{v:.4f}×" if v else "—"


def knob_section(census: dict | None) -> list[str]:
    """Per workload: kernels measured, how many a single knob value made faster (confirmed beside stock
    alone), the geomean, and per knob how many of its variants kept stock's bits."""
    summary = (census or {}).get("summary") or {}
    if not any(s.get("measured") for s in summary.values()):
        return []
    knobs = sorted({k for s in summary.values() for k in s.get("knobs", {})})
    names = ", ".join(f"`{k}`" for k in knobs)
    lines = ["## Compile knobs of the captured kernels (census, H200; action space v3's knobs alone)", "",
             (f"Every single value of {names} beside stock, recompiled from the kernel's TTIR, timed side by "
              "side and verified bit-exactly against stock; the fastest winner is judged again beside stock "
              "alone (stage knob_census). Bit-exact: the share of the variants that kept every bit."),
             "", "| workload | kernels | faster | geomean | bit-exact | "
             + " | ".join(f"{k} exact" for k in knobs) + " |",
             "|---|---|---|---|---|" + "---|" * len(knobs)]
    for family, s in summary.items():
        if not s.get("measured"):
            continue
        per = [f"{s['knobs'][k]['exact']}/{s['knobs'][k]['variant']}" if k in s["knobs"] else "—"
               for k in knobs]
        share = f"{s['exact_share']:.0%}" if s.get("exact_share") is not None else "—"
        lines.append(f"| {_workload(family)} | {s['measured']} | {s['faster']} | {_x(s['time_geomean'])} | "
                     f"{share} | " + " | ".join(per) + " |")
    return lines

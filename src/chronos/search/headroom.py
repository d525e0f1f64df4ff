"""Where real kernels have headroom: greedy (or seeded random) search in wall time over an action space on
the kernels of real workloads, every step side by side and bit-exact verified (chronos.search.timed). The
library of stages headroom, census and random_time (chronos.stages.headroom describes the method and the
report); each kernel's search is recorded in a part file, and replay searches again and must agree.
"""

from __future__ import annotations

import json
import time
from collections import Counter, defaultdict
from dataclasses import replace
from pathlib import Path

from chronos.actions import resolve_space
from chronos.config import RandomTimeConfig
from chronos.errors import ChronosError, one_line
from chronos.kernels.profile import by_gpu_time, measured_gpu_ms
from chronos.kernels.spec import load_module, read_ptx
from chronos.measure.backend import ReplayBackend
from chronos.measure.verdicts import FASTER, geomean
from chronos.ptx.atomics import float_atomics
from chronos.search.registry import run_strategy
from chronos.search.runs import kernels_of
from chronos.search.timed import TimedEvaluator


def selected(kernels: Path, family: str, per_family: int, select: str = "profile",
             once_per: str = "entry") -> list[tuple[Path, object]]:
    """(specs.json, spec) of `per_family` kernels of a family, chosen as `select` says
    (chronos.config.search.SELECT); without a profile, spread evenly over the specs (the suites list one
    family's sizes together). With `profile`, one launch per entry name (`once_per="entry"`); with
    `"ptx"`, after every entry's first, its other stock PTX (one name compiled for several shapes is several
    kernels, as flex_decode_long's decode template at four batch sizes): the entry selection is a prefix of
    it, so a cap it fills keeps the same kernels and no kernel measured under `entry` drops out. With
    `profile+measured_time`, that selection and then the `per_family` heaviest kernels the tune timed that it
    left out: the kernels that carry the step join, none measured before drops out."""
    found = [(sj, spec) for _, sj, spec in kernels_of(kernels, [family])]
    if select == "measured_time":
        return heaviest(found, measured_gpu_ms(kernels / family), per_family)
    chosen = by_profile(kernels, family, found, per_family, once_per)
    if select == "profile+measured_time":  # the profile's kernels stay; the heaviest the tune timed join them
        have = {s.kernel for _, s in chosen}
        weight = measured_gpu_ms(kernels / family)
        chosen += [f for f in heaviest(found, weight, per_family) if f[1].kernel not in have
                   and weight.get(f[1].kernel)]
    return chosen


def heaviest(found: list, weight: dict[str, float], count: int) -> list:
    """The `count` items of `found` whose kernels took the most measured GPU time (`weight`), heaviest
    first."""
    return sorted(found, key=lambda f: -weight.get(f[1].kernel, 0.0))[:count]


def by_profile(kernels: Path, family: str, found: list, per_family: int, once_per: str) -> list:
    """`select: profile`: one kernel per entry name (with `once_per="ptx"` then each name's other stock PTX),
    the profile's heaviest first where it has per-kernel times, else capture order (spread evenly without a
    profile)."""
    profile = kernels / family / "profile.json"
    if profile.is_file():
        order = by_gpu_time([s for _, s in found], json.loads(profile.read_text()))
        found = [(found[0][0], s) for s in order]
    else:
        found = found[:: max(1, len(found) // per_family)]
    once = first_of_each(found, lambda s: s.entry, set())
    if once_per == "ptx":
        once += first_of_each(found, lambda s: s.ptx, {s.ptx for _, s in once})
    return once[:per_family]


def first_of_each(found: list, key, seen: set) -> list:
    """The items of `found` whose key is not in `seen` yet, in order, each key once (`seen` grows)."""
    return [(sj, s) for sj, s in found if not (key(s) in seen or seen.add(key(s)))]


def bytes_moved(spec) -> int:
    """Bytes of the kernel's buffers: inputs read once, outputs written once, in-place ones both."""
    return sum(a.nbytes * (2 if a.role == "inout" else 1) for a in spec.args if a.kind == "buffer")


def kernel_row(family: str, spec, search: dict, space, peak_gb_s: float) -> dict:
    """One kernel's headroom: baseline time, roofline fraction, the set found, and per action family the
    best single action of step 0 (ratio to the baseline, verdict)."""
    base_ms = search["baseline"]["time_ms"]
    best = search["best"]
    by_family: dict[str, dict] = {}
    for c in search["trace"][0]["candidates"]:
        if "ratio" not in c or "action" not in c:  # random_time's candidates are sets
            continue
        fam = space.group_of.get(c["action"], c["action"])
        if fam not in by_family or c["ratio"] < by_family[fam]["ratio"]:
            by_family[fam] = {k: c[k] for k in ("action", "ratio", "ci", "verdict")}
    first = search["trace"][0]["chosen"]
    roofline = bytes_moved(spec) / (base_ms * 1e-3) / (peak_gb_s * 1e9) if base_ms else None
    return {
        "family": family,
        "kernel": spec.kernel,
        "baseline_ms": base_ms,
        "roofline_fraction": roofline,
        "best": {k: best.get(k) for k in ("actions", "ratio", "ci", "verdict")},
        "speedup": 1.0 / best["ratio"] if best["actions"] and best.get("ratio") else 1.0,
        "gain_family": space.group_of.get(first, first) if first != "stop" else None,
        "comparisons": search["comparisons"],
        "families": by_family,
    }


def summary(rows: list[dict]) -> dict:
    """Counts, the geomean speedup of the sets found, and per action family the kernels its best single
    action made faster (and the geomean of those ratios' inverses)."""
    done = [r for r in rows if "best" in r]
    fams: dict[str, list[float]] = defaultdict(list)
    for r in done:
        for fam, c in r["families"].items():
            if c["verdict"] == FASTER:
                fams[fam].append(1.0 / c["ratio"])
    return {
        "kernels": len(rows),
        "measured": len(done),
        "faster": sum(r["best"]["verdict"] == FASTER and bool(r["best"]["actions"]) for r in done),
        "time_geomean": geomean([r["speedup"] for r in done]),
        "gain_families": dict(sorted(Counter(r["gain_family"] or "none" for r in done).items())),
        "single_action_faster": {
            f: {"kernels": len(v), "speedup_geomean": geomean(v)} for f, v in sorted(fams.items())
        },
    }


def search_kernel(cfg, hcfg, backend, replay: bool, space, family, specs_json, spec, part: Path) -> dict:
    """Run (gpu: and record) or replay one kernel's search; the row the report takes, or an error row."""
    racy = float_atomics(read_ptx(specs_json, spec))
    if racy:  # as in tune: no variant of it can be verified bit-exactly (nor its baseline against itself)
        why = f"skipped: float atomics ({', '.join(racy)})"
        return {"family": family, "kernel": spec.kernel, "error": why}
    recorded = json.loads(part.read_text()) if part.is_file() else None
    if replay and recorded is None:
        return {"family": family, "kernel": spec.kernel, "error": "not_measured (run this stage on a GPU)"}
    try:
        module = load_module(specs_json, spec)
        ev = TimedEvaluator(spec, module, backend, hcfg.timing_for(cfg.timing), cfg.search.greedy.min_gain)
        if isinstance(hcfg, RandomTimeConfig):
            search = run_strategy("random_time", ev, hcfg, space=space).to_json()
        else:
            greedy = replace(cfg.search.greedy, max_steps=hcfg.max_steps or cfg.search.greedy.max_steps)
            search = run_strategy("greedy_time", ev, greedy, space=space).to_json()
    except ChronosError as e:
        return {"family": family, "kernel": spec.kernel, "error": one_line(e, 400)}
    if recorded is None:
        part.parent.mkdir(parents=True, exist_ok=True)
        part.write_text(json.dumps({**search, "provenance": backend.provenance()}, indent=1) + "\n")
    row = kernel_row(family, spec, search, space, hcfg.peak_gb_s)
    if recorded is not None:
        row["as_recorded"] = recorded["best"]["actions"] == search["best"]["actions"]
    return row


def search_families(cfg, hcfg, backend, kernels: Path, parts: Path, budget: float, label: str) -> list[dict]:
    """Every selected kernel of every family searched (gpu: recorded into `parts` until `budget` seconds
    have passed; replay: searched again from the store) -> one row each (or an error row)."""
    space, rows = resolve_space(hcfg.space), []
    gpu, t0 = not isinstance(backend, ReplayBackend), time.perf_counter()
    for family in hcfg.families:
        for specs_json, spec in selected(kernels, family, hcfg.per_family):
            part = parts / family / f"{spec.kernel}.json"
            if gpu and not part.is_file() and time.perf_counter() - t0 > budget:
                rows.append({"family": family, "kernel": spec.kernel, "error": "not_measured (budget)"})
                continue
            rows.append(search_kernel(cfg, hcfg, backend, not gpu, space, family, specs_json, spec, part))
            r = rows[-1]
            print(f"{label}: {family:16s} {spec.kernel[:60]:60s} "
                  f"{r.get('error') or '+'.join(r['best']['actions']) or '-'} {r.get('speedup', 0):.4f}",
                  flush=True)
    return rows


def section_report(cfg, hcfg, rows: list[dict], provenance: dict) -> dict:
    """The section's report: provenance, params, per family a summary, the kernels replay disagreed on."""
    params = {
        **{k: getattr(hcfg, k) for k in ("space", "per_family", "peak_gb_s")},
        **({"max_steps": hcfg.max_steps} if hcfg.max_steps else {}),
        **({"sets": hcfg.sets, "seed": hcfg.seed} if isinstance(hcfg, RandomTimeConfig) else {}),
        "families": list(hcfg.families),
        "timing": hcfg.timing_for(cfg.timing).to_json(),
    }
    return {
        "provenance": provenance,
        "params": params,
        "summary": {f: summary([r for r in rows if r["family"] == f]) for f in hcfg.families},
        "disagreements": [r["kernel"] for r in rows if r.get("as_recorded") is False],
        "kernels": rows,
    }

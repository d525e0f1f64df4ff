"""One stock PTX launched at several shapes shares its DB keys (#28): one config entry keyed by the kernel's
source, one PTX entry keyed by stock's PTX, so one decision holds at every shape. Where the shapes' confirmed
winners agree, the first shape's entry serves the others. Where they differ, strict mode may still deploy one
variant (a compile config, PTX actions, or a config with PTX actions on top) that every shape measured faster
than stock and bit-exact, side by side at that shape, in any stage's part: of several, the one whose least
gain is largest. Where none is, nothing deploys (a shape would run a variant that did not win there)."""

from __future__ import annotations

import json
from pathlib import Path

from chronos.measure.numerics import bit_exact
from chronos.measure.verdicts import FASTER
from chronos.tuning.winners import config_change, confirmed_winner, split_winner

NOT_SHARED = ("not one of several shapes of one stock PTX whose winners differ and where one variant won at "
              "every shape: nothing to judge again")
"""Stage knob_shapes' row of a kernel it has nothing to judge again for (chronos.tuning.shape_confirm)."""


def measured_rows(folders: list[Path]) -> dict[str, list[dict]]:
    """Per kernel its part of every stage folder that has one, in stage order (every measurement, not only
    the latest stage's winner)."""
    out: dict[str, list[dict]] = {}
    for folder in folders:
        for path in sorted(Path(folder).glob("*.json")):
            row = json.loads(path.read_text())
            out.setdefault(row.get("kernel", path.stem), []).append(row)
    return out


def _deployable(label: str) -> bool:
    """A variant one entry can deploy at every shape: not a knob maxnreg=N config (Inductor's autotuner
    never passes it to Triton; config_db deploys it as its PTX action only where it is a kernel's own
    winner)."""
    config = split_winner(label.split("+"))[0] if label else None
    return bool(label) and (config is None or "maxnreg" not in config_change(config))


BESIDE_STOCK = ("prior", "walk", "chronos")
"""A walk part's comparisons whose ratio is against stock and whose variant is Chronos's own: the earlier
winner and the walk's end where the walk chose (`choosing`), the chosen one again (`confirming`). Its steps'
rows are against the walk's incumbent, `on_coordesc` against coordinate descent's kernel, and coordinate
descent's variants are Inductor's, not a label a DB entry deploys."""


def variant_measurements(rows: list[dict]) -> dict[str, list[tuple[dict, dict]]]:
    """Variant label ("num_warps=2", "num_warps=2+st_cache_cs", "reorder_cp", "walk:XBLOCK=32,...") -> every
    (measurement, its part) of it beside stock in one kernel's parts (their `candidates` and `blocks`, a
    walk's comparisons BESIDE_STOCK)."""
    out: dict[str, list[tuple[dict, dict]]] = {}
    for row in rows:
        judged = [c for key in ("choosing", "confirming") for name, c in (row.get(key) or {}).items()
                  if name in BESIDE_STOCK and c]
        for c in [*row.get("candidates", []), *row.get("blocks", []), *judged]:
            label = c.get("action") or "+".join(c.get("actions") or [])
            if _deployable(label):
                out.setdefault(label, []).append((c, row))
    return out


def variant_everywhere(group: list[str],
                       measured: dict[str, list[dict]]) -> tuple[str, dict[str, tuple[dict, dict]]] | None:
    """For shapes `group` of one stock PTX: the variant that every measurement at every shape found faster
    than stock and bit-exact and kernel -> (its least gainful measurement there, its part); None where no
    variant is. Of several, one that stage knob_shapes judged again at every shape (judged_everywhere) comes
    first, so that a variant which held stays, not one whose measurements only chose it; then the one whose
    slowest shape is fastest; of those tied, the first label in sorted order (a DB rebuilt from the same
    parts is the same DB)."""
    per_shape = [variant_measurements(measured.get(k, [])) for k in group]
    fits: dict[str, dict[str, tuple[dict, dict]]] = {}
    for label in sorted(set.intersection(*(set(m) for m in per_shape))) if per_shape else ():
        seen = [m[label] for m in per_shape]
        if all(c.get("verdict") == FASTER and bit_exact(c) for shape in seen for c, _ in shape):
            fits[label] = {k: max(shape, key=lambda m: m[0]["ratio"]) for k, shape in zip(group, seen)}
    if not fits:
        return None
    return min(fits.items(), key=lambda item: (not judged_everywhere(group, measured, item[0]),
                                               max(c["ratio"] for c, _ in item[1].values())))


def judged_everywhere(group: list[str], measured: dict[str, list[dict]], label: str) -> bool:
    """Every shape of `group` holds a part of stage knob_shapes that judged `label` again."""
    return all(any(row.get("confirms") == label for row in measured.get(k, [])) for k in group)


def stand_in(kernel: str, label: str, chosen: dict[str, tuple[dict, dict]]) -> dict:
    """The part that deploys `label` for every shape in `chosen`: the shape whose gain is least stands for
    them (its ratio, interval and provenance), with every shape's measurements of it; `shapes`: kernel ->
    its own ratio and interval."""
    worst, part = max(chosen.values(), key=lambda m: m[0]["ratio"])
    return {"kernel": kernel, "provenance": part.get("provenance", {}),
            "best": {"actions": label.split("+"), "verdict": FASTER, "ratio": worst["ratio"],
                     "ci": worst["ci"]},
            "candidates": [{**c, "actions": label.split("+")} for c, _ in chosen.values()],
            "shapes": {k: {"variant": label, "ratio": c["ratio"], "ci": c["ci"]}
                       for k, (c, _) in chosen.items()}}


def shared_ptx(rows: list[tuple[Path, dict]], specs: dict,
               measured: dict[str, list[dict]] | None = None) -> tuple[dict, dict, dict]:
    """(kernel -> why none deploys, kernel -> the first shape whose entry serves it, first shape -> the
    stand-in part that deploys one variant for its shapes); `measured`: every stage's parts per kernel
    (measured_rows), the rows' own where None."""
    measured = measured if measured is not None else {row["kernel"]: [row] for _, row in rows}
    by_ptx: dict[str, list[tuple[str, str]]] = {}
    for _, row in rows:
        if (spec := specs.get(row["kernel"])) is not None:
            winner = confirmed_winner(row)[0]
            said = "+".join(filter(None, [winner[0], *winner[1]])) if winner else "nothing"
            by_ptx.setdefault(spec["ptx"], []).append((row["kernel"], said))
    disagree, served, stand_ins = {}, {}, {}
    for group in (g for g in by_ptx.values() if len(g) > 1):
        kernels = [k for k, _ in group]
        if len({w for _, w in group}) == 1:
            served.update(dict.fromkeys(kernels[1:], kernels[0]))
        elif found := variant_everywhere(kernels, measured):
            stand_ins[kernels[0]] = part = stand_in(kernels[0], *found)
            for k, shape in part["shapes"].items():  # stage knob_shapes judged it again at this shape
                shape["confirmed"] = judged_everywhere([k], measured, found[0])
            served.update(dict.fromkeys(kernels[1:], kernels[0]))
        else:
            said = "; ".join(f"{k}: {w}" for k, w in group)
            why = (f"one stock PTX at {len(group)} shapes whose winners differ ({said}), and no one variant "
                   "won at every shape: none deploys")
            disagree.update(dict.fromkeys(kernels, why))
    return disagree, served, stand_ins

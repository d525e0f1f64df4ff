"""What a knob stage's part says its winner is (#28): a compile-config label (a knob value, a block move, a
walk's whole config) parsed into the config change it makes, and whether the confirmed winner kept stock's
bits. Below chronos.tuning.config_db and chronos.tuning.shapes, which both read winners."""

from __future__ import annotations

import re

from chronos.measure.numerics import bit_exact
from chronos.measure.verdicts import FASTER

KNOB = re.compile(r"^(num_warps|num_stages|maxnreg)=(\d+)$")
CONSTEXPR = re.compile(r"^([A-Z][A-Z0-9_]*)=(\d+)$")
WALK = "walk:"
"""A walk's end (chronos.search.knob_walk): its whole config, every constexpr of it named."""
BLOCK = re.compile(r"^([XYZ]|R\d_)BLOCK=(\d+)$")
ROW = re.compile(r"^(BLOCK_(?:M|N1|M2))=(\d+)$")
"""A template's row block (chronos.triton.template_blocks): folded into the template's source and its
launch grid; deployed by chronos.triton.deploy_rows (a tuned constexpr the stock config does not set)."""


def config_change(label: str) -> dict | None:
    """"num_warps=8" / "XBLOCK=2048,num_warps=8" -> {"num_warps": 8, "kwargs": {"XBLOCK": 2048}}; a walk's
    "walk:XBLOCK=16,num_warps=1,num_stages=1" likewise (any constexpr of its config); None for a label that
    is not a compile config (a PTX action)."""
    walked = label.startswith(WALK)
    out: dict = {"kwargs": {}}
    for part in label.removeprefix(WALK).split(","):
        if m := KNOB.match(part):
            out[m.group(1)] = int(m.group(2))
        elif m := BLOCK.match(part) or ROW.match(part) or (walked and CONSTEXPR.match(part)):
            out["kwargs"][part.split("=")[0]] = int(m.group(2))
        else:
            return None
    return out


def split_winner(actions: list[str]) -> tuple[str | None, list[str]]:
    """(its compile-config label or None, its PTX actions): a config, where there is one, comes first."""
    if actions and config_change(actions[0]) is not None:
        return actions[0], list(actions[1:])
    return None, list(actions)


def confirmed_winner(row: dict) -> tuple[tuple[str | None, list[str]] | None, str]:
    """((its config label or None, its PTX actions), "") for a row whose confirmed winner kept stock's bits,
    else (None, why not)."""
    best = row.get("best") or {}
    if best.get("verdict") != FASTER or not best.get("actions"):
        return None, "no confirmed winner"
    if not winner_bit_exact(row):
        return None, f"{'+'.join(best['actions'])} was not bit-exact"
    return split_winner(best["actions"]), ""


def winner_bit_exact(row: dict) -> bool:
    """Every measurement of the row's winner kept stock's bits (a walk's row: where it was chosen and where
    it was confirmed)."""
    best = row["best"]
    label = "+".join(best["actions"])
    judged = [*(row.get("choosing") or {}).values(), *(row.get("confirming") or {}).values()]
    measured = [c for c in [*row.get("candidates", []), *row.get("blocks", []), *judged]
                if c.get("action") == label or c.get("actions") == best["actions"]]
    return bool(measured) and all(bit_exact(c) for c in measured)

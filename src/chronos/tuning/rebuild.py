"""A winner's variant rebuilt from its actions as the knob stages built it (#28): its config's root (a knob
or block variant, a walk's end as walk.json holds it; stock where it has none) with its PTX actions on top.
config_db writes the DB from it; stage knob_shapes measures it again."""

from __future__ import annotations

from pathlib import Path

from chronos.errors import ChronosError
from chronos.kernels.spec import read_ptx
from chronos.kernels.variant import Variant
from chronos.tuning.winners import KNOB, WALK, config_change, split_winner


def config_root(folder: Path, spec, label: str | None) -> Variant:
    """The variant a compile-config label makes (stock for None), with its own launch."""
    from chronos.search.knob_blocks import block_variants
    from chronos.search.knob_census import knob_variants

    if label is None:
        return Variant(spec, read_ptx(folder / "specs.json", spec), ())
    if label.startswith(WALK):
        return walk_end(folder, spec, label)
    made = knob_variants(folder, spec)[0] if KNOB.match(label) else block_variants(folder, spec)[0]
    found = next((v for v in made if v.actions == (label,)), None)
    if found is None:
        raise ChronosError(f"{spec.kernel}: the config {label} is not among its variants")
    return found


def variant_of(folder: Path, spec, actions: list[str], root: Variant | None = None) -> Variant:
    """The variant a winner's actions name, rebuilt as the stages built it: its config's root (config_root;
    `root`, where the caller has it) with its PTX actions on top (its launch kept)."""
    from chronos.ptx import emit, parse
    from chronos.search.space import realize

    label, ptx_actions = split_winner(list(actions))
    root = root or config_root(folder, spec, label)
    if not ptx_actions:
        return root
    module = parse(root.ptx)
    module.align_contract.update(spec.alignment)
    tuned = realize(module, ptx_actions, defer_ptxas=True)  # as the hook derives it (rederive.derive)
    if tuned is None:
        raise ChronosError(f"{spec.kernel}: {'+'.join(ptx_actions)} no longer applies to its root "
                           f"{label or 'stock'}")
    return Variant(spec, emit(tuned), (*root.actions, *ptx_actions), launch=root.launch)


def walk_end(folder: Path, spec, label: str) -> Variant:
    """A walk's end as the walk compiled it (the workload's walk.json)."""
    from chronos.search.knob_walk import Point
    from chronos.triton.walk_manifest import ManifestCompiler

    compiler = ManifestCompiler(folder)
    entry, change = compiler.entry(spec), config_change(label)
    if entry is None or change is None:
        raise ChronosError(f"{spec.kernel}: no walk root in {folder / 'walk.json'} for {label}")
    stock = entry["stock"]
    point = Point.of({"kwargs": {**stock["kwargs"], **change["kwargs"]},
                      "num_warps": change.get("num_warps", stock["num_warps"]),
                      "num_stages": change.get("num_stages", stock["num_stages"])})
    got = compiler.variants(spec, [point])[point.label]
    if not isinstance(got, Variant):
        raise ChronosError(f"{spec.kernel}: {label} has no compiled variant ({got['reason']})")
    return got

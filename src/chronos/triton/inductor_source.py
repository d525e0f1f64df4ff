"""An Inductor kernel recompiled from its generated Python module with another config (#28, action space v3:
block sizes): Inductor's own autotuner object (the JIT function, its configs, its grid type) is loaded from
the module, each of its configs compiled the way Inductor compiles it until one remakes the captured stock
PTX (that is the stock config), then each legal block move (chronos.triton.blocks), with its grid from
Inductor's grid expression for each launch's numels (checked first: for the stock config it must give the
captured grid). scripts/make_block_variants.py runs it over the captured workloads.

Needs torch (Inductor's runtime) and Triton; no GPU (the target is the module's). The versions decide the PTX:
the stock is only remade under the ones that captured it.
"""

from __future__ import annotations

import copy
import importlib.util
import tempfile
from pathlib import Path

from chronos.errors import one_line
from chronos.triton.blocks import block_moves
from chronos.triton.template_blocks import edited, grid_axis0, row_blocks, template_moves
from chronos.triton.tuned_db import ptx_identity_sha256


def error_text(e: Exception) -> str:
    return f"{type(e).__name__}: {one_line(e, 300)}"


def load_tuner(path: Path, name: str):
    spec = importlib.util.spec_from_file_location(f"chronos_blocks_{path.stem}", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return getattr(mod, name)


def compile_config(tuner, cfg):
    """Inductor's own compile of one config (CachingAutotuner._precompile_config without its launcher)."""
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    meta = tuner._create_compile_meta(cfg)
    src = ASTSource(tuner.fn, meta["signature"], meta["constants"], meta["configs"][0])
    props = tuner.device_props  # torch 2.11's DeviceProperties has warp_size, not warp_size_or_default
    target = GPUTarget(meta["device_type"], meta["cc"], getattr(props, "warp_size", None) or 32)
    k = triton.compile(src, target=target, options=tuner._create_compile_options(cfg, meta))
    return k.asm["ptx"], int(k.metadata.num_warps), int(k.metadata.shared), meta


def launch_scope(meta: dict, args: list[dict]) -> dict:
    """The launch's scalar arguments by parameter name (the kernel's parameters in order: its
    non-constexpr, non-constant arguments) and the integer constants."""
    params = [n for n, t in meta["signature"].items() if t != "constexpr" and n not in meta["constants"]]
    scope = {n: a["value"] for n, a in zip(params, args, strict=False) if a.get("kind") == "scalar"}
    scope.update({k: v for k, v in meta["constants"].items() if isinstance(v, int)})
    return scope


def grid_for(tuner, cfg, meta: dict, args: list[dict]) -> tuple[int, int, int]:
    """Inductor's grid for `cfg`, its numels read from the launch's scalar arguments."""
    from torch._inductor.runtime.triton_heuristics import GridExpr

    scope = launch_scope(meta, args)
    return tuple(int(g) for g in GridExpr.from_meta(tuner.inductor_meta, cfg).eval_slow(scope))


def with_config(cfg, kwargs: dict, num_warps: int, num_stages: int | None = None):
    """A copy of an Inductor config with other constexprs and num_warps (num_stages kept unless given)."""
    out = copy.copy(cfg)
    out.kwargs, out.num_warps = dict(kwargs), num_warps
    if num_stages is not None:
        out.num_stages = num_stages
    return out


def find_stock(paths: list[str], name: str, ident: str, recorded: dict | None = None):
    """(autotuner, stock config, its compile meta, module path) of the first module and config that remake
    the stock PTX, or (None, errors). `recorded` (the capture's {kwargs, num_warps, num_stages}: the config
    that ran) is tried first, then the autotuner's own configs."""
    errors = []
    for path in paths:
        try:
            t = load_tuner(Path(path), name)
            first = [with_config(t.configs[0], **recorded)] if recorded and t.configs else []
            for cfg in first + list(t.configs):
                ptx, _, _, meta = compile_config(t, cfg)
                if ptx_identity_sha256(ptx) == ident:
                    return (t, cfg, meta, path), errors
            # said too, else a kernel whose modules all compile to other PTX says nothing of what was tried
            errors.append(f"{Path(path).name}: {len(first) + len(t.configs)} configs compiled, "
                          "none to the stock PTX")
        except Exception as e:  # noqa: BLE001 - a module that does not load or compile is said, not fatal
            errors.append(f"{Path(path).name}: {error_text(e)}")
    return None, errors


def build_move(tuner, cfg, move: dict, ident: str, launches: dict, grid_ok: dict) -> dict:
    """One config move ({label, kwargs, num_warps[, num_stages]}) compiled: its PTX, launch numbers and a
    grid per launch whose stock grid checked."""
    moved = with_config(cfg, move["kwargs"], move["num_warps"], move.get("num_stages"))
    return _variant(dict(move), lambda: compile_config(tuner, moved), ident,
                    lambda meta: {k: list(grid_for(tuner, moved, meta, args))
                                  for k, (args, _) in launches.items() if grid_ok[k] is True})


def _variant(v: dict, compile_fn, ident: str, grids_of) -> dict:
    """The move `v` with what compiling it gave: an error, the same PTX as stock, or its PTX, launch numbers
    and grids (`grids_of(compile meta)`)."""
    try:
        ptx, warps, shared, meta = compile_fn()
    except Exception as e:  # noqa: BLE001 - a move Triton cannot compile is a result, said as it is
        return {**v, "error": error_text(e)}
    if ptx_identity_sha256(ptx) == ident:
        return {**v, "same_as_stock": True}
    return {**v, "ptx_text": ptx, "num_warps": warps, "shared": shared, "grids": grids_of(meta)}


def stock_grid_checks(tuner, cfg, meta: dict, launches: dict) -> dict:
    """Per launch: True where Inductor's grid for the stock config gives the captured grid, else why not
    (only those launches get a grid for a moved config)."""
    checks = {}
    for kernel, (args, grid) in launches.items():
        try:
            got = grid_for(tuner, cfg, meta, args)
        except Exception as e:  # noqa: BLE001 - a grid Inductor cannot evaluate is said for its launch
            got = error_text(e)
        checks[kernel] = got == tuple(grid) or f"stock config gives {got}, captured {grid}"
    return checks


def is_persistent(tuner, name: str) -> bool:
    """A persistent reduction (its R0_BLOCK covers the whole row: never moved)."""
    return "PERSISTENT" in str(getattr(tuner, "heuristic_type", "")).upper() or name.startswith("triton_per_")


def build_kernel(paths: list[str], name: str, ident: str, launches: dict,
                 recorded: dict | None = None, configs: dict | None = None) -> dict:
    """One kernel: its stock config (the first of the modules `paths` and its configs, `recorded` first, whose
    PTX has identity `ident`), then each block move's PTX and a grid per launch (`launches`: spec name ->
    (arguments as specs.json lists them, captured grid)); or {"error": ...}. With `configs` ({label:
    {kwargs, num_warps, num_stages}}: the configs another tuner chose, scripts/make_anchor_variants.py),
    those are compiled instead of the block moves."""
    found, errors = find_stock(paths, name, ident, recorded)
    if found is None:
        return {"error": "no config of its Inductor source remade the stock PTX", "tried": errors[:4]}
    tuner, cfg, meta, source = found
    out = {"source": source, "source_text": tuner.fn.src,
           "grid_checks": stock_grid_checks(tuner, cfg, meta, launches),
           "stock_config": {"kwargs": dict(cfg.kwargs), "num_warps": cfg.num_warps,
                            "num_stages": cfg.num_stages},
           "heuristic": str(getattr(tuner, "heuristic_type", ""))}
    persistent = is_persistent(tuner, name)
    if configs is None:
        moves = [{"label": m.label, "kwargs": m.kwargs, "num_warps": m.num_warps}
                 for m in block_moves(dict(cfg.kwargs), cfg.num_warps, tuner.fn.src, persistent)]
    else:
        moves = [{"label": label, **c} for label, c in configs.items()]
    out["variants"] = [build_move(tuner, cfg, m, ident, launches, out["grid_checks"]) for m in moves]
    if configs is None and (rows := template_moves(tuner.fn.src, cfg.num_warps)):
        out["template_grid_checks"], grids = template_grids(tuner.fn.src, meta, launches)
        out["variants"] += [build_template_move(Path(source), name, cfg, m, ident, grids) for m in rows]
    return out


def template_grids(src: str, meta: dict, launches: dict) -> tuple[dict, dict]:
    """Per launch: whether the template's grid rule gives the captured grid for the stock row blocks, and
    (where it does) a function from row blocks to that launch's grid."""
    checks, grids = {}, {}
    stock = row_blocks(src)
    for kernel, (args, grid) in launches.items():
        scope = launch_scope(meta, args)
        try:
            got = grid_axis0(src, stock, scope)
        except ValueError as e:
            checks[kernel] = error_text(e)
            continue
        checks[kernel] = got == grid[0] or f"stock row blocks give {got}, captured {grid[0]}"
        if checks[kernel] is True:
            grids[kernel] = lambda blocks, s=scope, g=tuple(grid): [grid_axis0(src, blocks, s), g[1], g[2]]
    return checks, grids


def build_template_move(module: Path, name: str, cfg, move: dict, ident: str, grids: dict) -> dict:
    """One row-block move of a template: its module recompiled with the edited constexprs (the stock config
    otherwise, num_warps as the move says): PTX, launch numbers and a grid per checked launch."""
    def compile_edited():
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / module.name
            path.write_text(edited(module.read_text(), move["blocks"]))
            return compile_config(load_tuner(path, name), with_config(cfg, cfg.kwargs, move["num_warps"]))

    v = {"label": move["label"], "blocks": move["blocks"], "num_warps": move["num_warps"]}
    return _variant(v, compile_edited, ident, lambda _: {k: f(move["blocks"]) for k, f in grids.items()})

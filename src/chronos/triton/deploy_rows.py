"""Deploy a template's tuned row blocks (#28, action space v3; chronos.triton.template_blocks): a row block
lives in the template's source (`BLOCK_M : tl.constexpr = 128`) and in its launch grid, not in its config,
so a tuned entry that sets one (BLOCK_M / BLOCK_N1 / BLOCK_M2 among its tuned constexprs, absent from its
stock ones) is deployed by compiling the template's module again with the row blocks edited, and by giving
Inductor's launcher the grid expression of the new row blocks in place of the grid the caller passes.

Inductor launches a template on a FixedGrid: the wrapper passes the grid as the launcher's last three
arguments (`_grid_0.._grid_2`) and the launcher evaluates `fixed_grid` (those names) over its arguments.
The first axis becomes the template's own rule over the same arguments (`-((ks0) // -64)`); the other two
stay the caller's. Anything else (another grid type, a module this cannot edit) is refused with why.
"""

from __future__ import annotations

import copy
import hashlib
import tempfile
from pathlib import Path

from chronos.triton.template_blocks import edited, grid_axis0_expr

ROW_KEYS = ("BLOCK_M", "BLOCK_N1", "BLOCK_M2")


def row_change(stock_kwargs: dict, tuned_kwargs: dict) -> dict[str, int]:
    """The row blocks a tuned entry sets ({} for an ordinary config entry)."""
    return {k: v for k, v in tuned_kwargs.items() if k in ROW_KEYS and k not in stock_kwargs}


def _module_path(fn) -> Path:
    code = getattr(getattr(fn, "fn", None), "__code__", None)
    if code is None or not Path(code.co_filename).is_file():
        raise ValueError(f"{getattr(fn, '__name__', '?')}: its module file is not on disk")
    return Path(code.co_filename)


def edited_module(fn, blocks: dict[str, int]) -> Path:
    """The template's module with its row blocks set, written once per content under the temp folder (the
    JIT reads a function's source from its file)."""
    stock = _module_path(fn)
    text = edited(stock.read_text(), blocks)
    digest = hashlib.sha256(text.encode()).hexdigest()[:16]
    path = Path(tempfile.gettempdir()) / "chronos-row-blocks" / digest / stock.name
    if not path.is_file():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return path


def row_block_tuner(autotuner, blocks: dict[str, int], tuned_cfg):
    """Inductor's autotuner of the edited module: its configs `[tuned_cfg]`, its launcher's first grid axis
    the template's rule for `blocks`. Raises ValueError where the template is not one this deploys."""
    from chronos.triton.inductor_source import load_tuner

    meta = autotuner.inductor_meta or {}
    fixed = list(meta.get("fixed_grid") or ())
    if meta.get("grid_type") != "FixedGrid" or len(fixed) != 3 or fixed[0] != "_grid_0":
        raise ValueError(f"{autotuner.fn.__name__}: not a FixedGrid template launch "
                         f"(grid_type {meta.get('grid_type')}, fixed_grid {fixed})")
    new = load_tuner(edited_module(autotuner.fn, blocks), autotuner.fn.__name__)
    new.inductor_meta = {**new.inductor_meta, "fixed_grid": [grid_axis0_expr(autotuner.fn.src, blocks),
                                                              *fixed[1:]]}
    cfg = copy.copy(tuned_cfg)
    cfg.kwargs = {k: v for k, v in tuned_cfg.kwargs.items() if k not in blocks}
    new.configs = [cfg]
    return new


"""The manifest of a walk's configs (walk.json, beside a captured workload; #28 item 4): each kernel's root
(the Inductor module and stock config that remade its committed stock PTX, scripts/make_walk_roots.py) and
every config a walk compiled from it. chronos.search.knob_walk's compiler in replay; on the GPU image
chronos.triton.walk_compile adds what it compiles.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path

from chronos.errors import ChronosError
from chronos.kernels.variant import Variant, recorded_variant
from chronos.search.knob_walk import PREFIX, Point
from chronos.triton.blocks import walk_moves

MANIFEST = "walk.json"


def _neighbours(point: Point, source: str, persistent: bool) -> list[Point]:
    """The configs one move from `point` (num_stages kept), for the kernel whose module is `source`."""
    moves = walk_moves(dict(point.kwargs), point.num_warps, source, persistent)
    return [Point(tuple(m.kwargs.items()), m.num_warps, point.num_stages) for m in moves]


class ManifestCompiler:
    """The configs a walk visits, as compiled and recorded in the family's walk.json (replay, and every
    walk's second pass); a config not in it is said `not_compiled`."""

    def __init__(self, folder: Path):
        self.folder = folder
        path = folder / MANIFEST
        try:
            self.manifest = json.loads(path.read_text()) if path.is_file() else {"kernels": {}}
            self.manifest["kernels"].items()
        except (ValueError, KeyError, TypeError, AttributeError) as e:
            why = f"{type(e).__name__}: {e}"
            raise ChronosError(f"{path}: not a walk manifest ({why}); make it again on a GPU image: "
                               "scripts/make_walk_roots.py, then stage knob_walk --compile") from None
        self._sources: dict[str, str] = {}

    def entry(self, spec) -> dict | None:
        """The kernel's walk root ({stock config, source, ...}); None where it has none (a template, a
        kernel whose Inductor module did not remake its stock PTX)."""
        e = self.manifest["kernels"].get(spec.ptx)
        return e if e and "stock" in e else None

    def source(self, entry: dict) -> str:
        """The kernel's Inductor module (its masks decide which block moves are legal)."""
        path = self.folder / entry["module"]
        if not path.is_file():  # walk.json names it, the file never came (2026-12-07: lost in packing)
            raise ChronosError(f"{path}: the walk root's module is missing, so its walk cannot be replayed "
                               "(rebuild it on a GPU image: drop its entry from walk.json, run "
                               "scripts/make_walk_roots.py, then stage knob_walk --compile)")
        return gzip.decompress(path.read_bytes()).decode()

    def neighbours(self, entry: dict, point: Point) -> list[Point]:
        """The configs one move from `point` for this kernel (its module's masks decide the legal ones)."""
        if entry["module"] not in self._sources:
            self._sources[entry["module"]] = self.source(entry)
        return _neighbours(point, self._sources[entry["module"]], entry["persistent"])

    def compile(self, spec, entry: dict, points: list[Point]) -> None:
        """Nothing to compile in replay: what the walk saw on the GPU is in the manifest."""

    def variants(self, spec, points: list[Point]) -> dict[str, Variant | dict]:
        """label -> the point's variant for this launch, or its reason row (same PTX as stock, a compile
        error, no grid for this launch, not compiled)."""
        entry = self.entry(spec)
        self.compile(spec, entry, [p for p in points if p.label not in entry["configs"]])
        out: dict[str, Variant | dict] = {}
        for p in points:
            c = entry["configs"].get(p.label)
            out[p.label] = ({"valid": False, "reason": "not_compiled"} if c is None
                            else recorded_variant(self.folder, spec, c, (PREFIX + p.label,)))
        return out

"""The walk over an Inductor kernel's config (#28 item 4): several moves, each one comparison against the
incumbent, strict from stock's config; PTX on top of its end; the ends beside the earlier winner and
coordinate descent's kernel, chosen and confirmed."""

from __future__ import annotations

import json

from chronos.kernels.spec import read_ptx
from chronos.kernels.variant import Launch, Variant
from chronos.search.knob_walk import PREFIX, Point, walk_kernel, walk_summary
from chronos.triton.walk_manifest import _neighbours

from .stub_backend import StubBackend, gpt2_kernel

SOURCE = "def k(xnumel, XBLOCK):\n    xmask = xindex < xnumel\n"
STOCK = {"kwargs": {"XBLOCK": 256}, "num_warps": 4, "num_stages": 1}


class FakeCompiler:
    """Every config compiles: stock's PTX on its own grid (one program per XBLOCK elements)."""

    def __init__(self, spec, stock_ptx):
        self.spec, self.ptx, self.compiled = spec, stock_ptx, []

    def entry(self, spec):
        return {"stock": STOCK, "persistent": False}

    def neighbours(self, entry, point):
        return _neighbours(point, SOURCE, False)

    def variants(self, spec, points):
        self.compiled += [p.label for p in points]
        def grid(p):
            return (65536 // dict(p.kwargs)["XBLOCK"], 1, 1)

        return {p.label: Variant(spec, self.ptx, (PREFIX + p.label,),
                                 launch=Launch((32 * p.num_warps, 1, 1), 0, grid(p)))
                for p in points}


def label(xblock: int, warps: int) -> str:
    return PREFIX + Point.of({"kwargs": {"XBLOCK": xblock}, "num_warps": warps, "num_stages": 1}).label


class Ratios(dict):
    """Stock-relative times by actions; PTX on top of anything at its root's time."""

    def get(self, key, default=None):
        return super().get(key.split("+")[0], default) if "+" in key else super().get(key, default)


def test_the_walk_moves_several_steps_while_a_neighbour_beats_the_incumbent(tmp_path):
    folder, spec, _, _ = gpt2_kernel(tmp_path)
    compiler = FakeCompiler(spec, read_ptx(folder / "specs.json", spec))
    backend = StubBackend(Ratios({label(512, 4): 0.9, label(1024, 4): 0.8, label(1024, 8): 0.85}))
    row = walk_kernel(spec, folder, None, compiler, backend, timing=None, min_gain=0.01, steps=4)
    walked = [t["chosen"] for t in row["walk"]]
    assert walked[:3] == [label(512, 4), label(1024, 4), "stop"] and row["walk"][-1]["ptx_on_top"]
    assert label(256, 4) not in compiler.compiled  # stock's config is never compiled again
    assert len(set(compiler.compiled)) == len(compiler.compiled)  # each config seen once
    assert row["chosen"]["chronos"] == "walk" and abs(row["speedup"] - 1 / 0.8) < 1e-12
    confirm = backend.seen[-1]
    assert confirm[0].actions == () and len(confirm) == 2  # the end beside stock alone
    s = walk_summary([{"family": "f", **row}])
    assert s["moved"] == 1 and s["steps"] == 2 and abs(s["time_geomean"] - 1.25) < 1e-12
    assert s["v3_on_coordesc"]["kernels"] == 0


def test_the_strict_walk_never_moves_to_a_variant_that_changed_bits(tmp_path):
    folder, spec, _, _ = gpt2_kernel(tmp_path)
    compiler = FakeCompiler(spec, read_ptx(folder / "specs.json", spec))

    class Tolerated(StubBackend):
        def compare(self, spec, variants, timing):
            cmp = super().compare(spec, variants, timing)
            for c in cmp.contenders:
                if c.actions and c.actions[0] == label(512, 4):
                    c.reason = "within_tolerance"
            return cmp

    backend = Tolerated(Ratios({label(512, 4): 0.5}))
    row = walk_kernel(spec, folder, None, compiler, backend, timing=None, min_gain=0.01, steps=4)
    assert row["walk"][0]["chosen"] == "stop" and row["speedup"] == 1.0
    assert row["best"]["verdict"] == "none"


def test_the_walk_from_coordinate_descent_is_judged_against_its_kernel(tmp_path):
    folder, spec, v, grid = gpt2_kernel(tmp_path)
    coordesc = {"ptx": v["ptx"], "num_warps": v["num_warps"], "shared": v["shared"], "kwargs": {"XBLOCK": 64},
                "num_stages": 1, "grids": {spec.kernel: grid}}
    (folder / "anchors.json").write_text(json.dumps({"kernels": {spec.ptx: {"coordesc": coordesc}}}))
    compiler = FakeCompiler(spec, read_ptx(folder / "specs.json", spec))
    walked_to = PREFIX + Point.of({**coordesc, "kwargs": {"XBLOCK": 32}}).label  # two steps from stock
    backend = StubBackend(Ratios({"anchor:coordesc": 0.9, walked_to: 0.72}))
    row = walk_kernel(spec, folder, None, compiler, backend, timing=None, min_gain=0.01, steps=1)
    assert row["coordesc_walk"][0]["chosen"] == walked_to
    assert abs(row["confirming"]["on_coordesc"]["ratio"] - 0.8) < 1e-12
    assert row["chosen"] == {"chronos": None, "with_coordesc": "coordesc_walk"}
    assert row["speedup"] == 1.0 and abs(row["with_coordesc"] - 1 / 0.72) < 1e-12
    s = walk_summary([row])
    assert abs(s["v3_on_coordesc"]["time_geomean"] - 1.25) < 1e-12 and s["v3_on_coordesc"]["faster"] == 1


def test_a_part_recorded_before_its_kernel_had_a_walk_root_replays_without_one():
    """make_walk_roots added the root later (`rooted`): the part, which walked nothing, replays so; a root
    older than the part, one with no date, or a run that is not a replay keeps it."""
    from chronos.search.knob_walk import root_as_recorded

    entry = {"stock": {}, "rooted": "2026-12-06T23:02:56+00:00"}
    assert root_as_recorded(entry, "2026-12-06T06:50:00.390438Z") is None
    assert root_as_recorded(entry, "2026-12-07T00:00:00Z") is entry
    assert root_as_recorded(entry, None) is entry and root_as_recorded({"stock": {}}, "2026-12-06T06:50Z")
    assert root_as_recorded(None, "2026-12-06T06:50:00Z") is None

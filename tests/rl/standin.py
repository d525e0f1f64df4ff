"""A deterministic stand-in measurement backend for the RL tests (no GPU, no store).

Its costs are MADE UP from the action set alone: they only give the learners a landscape with a clearly
best choice, and are never reported anywhere.
"""

from chronos.kernels.gemm_tile import gemm_tile_ptx, gemm_tile_spec
from chronos.measure.store import Record
from chronos.ptx import parse

# Made-up multiplicative effect of each action on the cycles; unlisted actions leave them unchanged.
EFFECT = {"vec_ld": 0.5, "vec_st": 0.9, "cache_cs": 1.05, "maxnreg_32": 1.3, "reorder_cp": 1.02}
POISONED = {"reorder_sl"}  # any set containing it is a "wrong_output" variant


class StandInBackend:
    def __init__(self, base: float = 1000.0):
        self.base = base
        self.calls = 0
        self.measured: list[tuple[str, ...]] = []

    def close(self) -> None:
        pass

    def measure(self, spec, variants, *, baseline_ptx=None):
        self.calls += 1
        out = []
        for v in variants:
            self.measured.append(tuple(v.actions))
            cost = self.base
            for a in v.actions:
                cost *= EFFECT.get(a, 1.0)
            bad = bool(POISONED & set(v.actions))
            out.append(Record(kernel=spec.kernel, ptx_sha256=v.ptx_sha256, cubin_sha256=v.ptx_sha256,
                              gpu="stand-in", driver="-", ptxas="-", config_hash="-",
                              actions=tuple(v.actions),
                              valid=not bad, reason="wrong_output" if bad else "", cycles_median=cost,
                              cycles_iqr=0.0))
        return out


def kernels(*shapes):
    """name -> (spec, root module) for gemm_tile shapes."""
    out = {}
    for m, n, k in shapes or ((2, 2, 2),):
        spec = gemm_tile_spec(m, n, k)
        out[spec.kernel] = (spec, parse(gemm_tile_ptx(m, n, k)))
    return out

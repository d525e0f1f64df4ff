"""The optimize path for one kernel: the policy's decodings (greedy and beam) and any fixed sets, each
verified bit-exactly and measured, the fastest that clears the noise returned; and the policy's inference
alone (`inference`), which needs no GPU.

    result = optimize_kernel(spec, module, backend, policy, cfg)   # cfg: chronos.config.Config
    result.ptx, result.to_json()

One entry, two evaluators (chronos.search.base): a kernel of the seed's 1-thread gemm_tile family is judged
in %clock64 cycles (`cycles`), every other kernel side by side in wall time (`timed`), which is also the
only path that takes `extra` sets. Each result keeps the JSON shape its reports have always had.
"""

from __future__ import annotations

from chronos.kernels.spec import KernelSpec, judged_in_cycles
from chronos.optimize.cycles import OptimizeResult, optimize
from chronos.optimize.timed import TimeOptimizeResult, optimize_time


def optimize_kernel(spec: KernelSpec, module, backend, policy, cfg, *,
                    extra: tuple | list = ()) -> OptimizeResult | TimeOptimizeResult:
    """The optimize path on one kernel in the objective its family is judged in, with params.yaml's
    predict and search settings (`cfg`: chronos.config.Config)."""
    kw = {"max_steps": cfg.predict.max_steps, "min_gain": cfg.search.greedy.min_gain,
          "beam": cfg.predict.beam}
    if judged_in_cycles(spec):
        if extra:
            raise ValueError(f"{spec.kernel}: extra sets are measured in wall time only")
        return optimize(spec, module, backend, policy, **kw)
    return optimize_time(spec, module, backend, policy, timing=cfg.timing, extra=list(extra), **kw)

#!/usr/bin/env python3
"""Runs workload.py on a CPU through Triton's interpreter (TRITON_INTERPRET=1): a smoke test of its plumbing.

Every device='cuda' is redirected to the CPU by a TorchFunctionMode; torch.cuda.get_device_capability (called
when attorch is imported), synchronize and empty_cache are stubbed; the autotuner runs each config once and
does no timing. Use toy sizes, e.g.

    python experiments/attorch/cpu_interpret.py --tokens 64 --hidden 128 --vocab 1000   # ~2.5 min

fp16 is not meaningful here: a CPU-only torch disables torch.autocast('cuda'), which attorch relies on.
"""

import os
import runpy
import sys
from pathlib import Path

os.environ["TRITON_INTERPRET"] = "1"

import torch  # after TRITON_INTERPRET is set
from torch.overrides import TorchFunctionMode
from triton.runtime import autotuner


class CpuMode(TorchFunctionMode):
    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = dict(kwargs or {})
        if "cuda" in str(kwargs.get("device", "")):
            kwargs["device"] = "cpu"
        return func(*args, **kwargs)


def run_once(kernel_call, quantiles=None, **_):
    kernel_call()
    return [1.0, 1.0, 1.0] if quantiles else 1.0


def on_cpu() -> CpuMode:
    """Stubs what needs a GPU and returns the mode that sends device='cuda' to the CPU (enter it to run).
    Also used by tests/test_workloads_script.py for scripts/workloads.py's attorch_lm."""
    torch.cuda.get_device_capability = lambda *a, **k: (9, 0)
    torch.cuda.synchronize = lambda *a, **k: None
    torch.cuda.empty_cache = lambda *a, **k: None
    autotuner.Autotuner.do_bench = property(lambda self: run_once)
    return CpuMode()


def main() -> None:
    sys.argv = ["workload.py", *sys.argv[1:]]
    with on_cpu():
        runpy.run_path(str(Path(__file__).with_name("workload.py")), run_name="__main__")


if __name__ == "__main__":
    main()

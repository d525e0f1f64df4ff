"""Inductor's own tuners run on one captured kernel (#28 item 5: the per-kernel anchors).

Under max-autotune or coordinate descent a whole workload compiles into other kernels (other fusions, GEMM
templates, other names), so a kernel of the tuner's run is rarely the stock kernel with another config, and a
per-kernel comparison has nothing to pair. What is comparable is the tuner's choice *for the stock kernel*:
Inductor decides a pointwise or reduction kernel's config at launch, from the `inductor_meta` its generated
module passes to `triton_heuristics` (which configs to try: `max_autotune`; whether to walk from the best of
them: `coordinate_descent_tuning`). So the stock module is copied with the meta the tuner's run would have
written, loaded, and launched once on the kernel's own inputs: Inductor's autotuner benchmarks its configs
with its own benchmarker, walks, and keeps one; that config is the anchor, compiled from the stock module
beside stock (chronos.triton.inductor_source.build_kernel).

Templates (`triton_tem_*`: attention, GEMM) are left out: their config is chosen by select_algorithm when the
graph compiles, not by the launch-time autotuner; the step-level anchors cover them
(scripts/e2e_one_process.py --anchors). `tuner_module` is CPU-only; `tune` needs a GPU.
"""

from __future__ import annotations

import re
import tempfile
from pathlib import Path

MODES: dict[str, dict[str, object]] = {
    "max_autotune": {"max_autotune": True},
    "coordesc": {"max_autotune": True, "coordinate_descent_tuning": True,
                 "coordinate_descent_search_radius": 1, "coordinate_descent_check_all_directions": False},
}
"""Each tuner's keys of `inductor_meta`, as torch's codegen writes them with TORCHINDUCTOR_MAX_AUTOTUNE=1
(and TORCHINDUCTOR_COORDINATE_DESCENT_TUNING=1) and default settings otherwise."""

NO_CACHE = {"autotune_local_cache": False, "autotune_remote_cache": None, "force_disable_caches": True}
"""A choice is made afresh here, not read from an earlier run's autotune cache."""

_META = re.compile(r"inductor_meta=\{")
_VALUE = r"(?:True|False|None|-?\d+)"


class AnchorError(ValueError):
    """The module cannot be set up as the tuner's run would have generated it."""


def is_template(name: str) -> bool:
    return name.startswith("triton_tem_")


def tuner_module(text: str, mode: str) -> str:
    """The stock module's source with its kernel's inductor_meta as `mode`'s run writes it (every other line
    unchanged, so the kernel body is the stock one)."""
    if mode not in MODES:
        raise AnchorError(f"unknown tuner {mode!r} (known: {', '.join(MODES)})")
    found = list(_META.finditer(text))
    if len(found) != 1:
        raise AnchorError(f"expected one `inductor_meta={{` in the module, found {len(found)}")
    for key, value in {**MODES[mode], **NO_CACHE}.items():
        pattern = re.compile(rf"""(['"]){key}\1:\s*{_VALUE}""")
        if pattern.search(text):
            text = pattern.sub(lambda m, k=key, v=value: f"{m.group(1)}{k}{m.group(1)}: {v!r}", text, count=1)
        else:
            at = _META.search(text).end()
            text = f"{text[:at]}'{key}': {value!r}, {text[at:]}"
    return text


def tune(module: Path, name: str, mode: str, args: list) -> dict:
    """Inductor's choice of config for kernel `name` of `module` under `mode`: the module set up as that
    run writes it, its autotuner launched once on `args` (the positional arguments Inductor passes: tensors
    and scalars on the current CUDA device). {kwargs, num_warps, num_stages, configs}."""
    import torch

    from chronos.triton.inductor_source import load_tuner

    with tempfile.TemporaryDirectory(prefix="chronos-anchor-") as tmp:
        path = Path(tmp) / f"{module.stem}_{mode}.py"
        path.write_text(tuner_module(module.read_text(), mode))
        tuner = load_tuner(path, name)
        tried = len(tuner.configs)  # before the run: torch 2.11 drops the list once it has chosen
        tuner.run(*python_args(tuner, args), stream=torch.cuda.current_stream().cuda_stream)
        torch.cuda.synchronize()
        if len(tuner.launchers) != 1:
            raise AnchorError(f"{name}: the autotuner holds {len(tuner.launchers)} launchers after its run")
        cfg = tuner.launchers[0].config
        return {"kwargs": dict(cfg.kwargs), "num_warps": int(cfg.num_warps),
                "num_stages": int(cfg.num_stages), "configs": tried}


def python_args(tuner, args: list) -> list:
    """The positional arguments Inductor passes this autotuner, from the PTX kernel's (`args`, in spec
    order): every parameter of its signature but the configs' own (XBLOCK, R0_BLOCK, ...), in order; one
    that is a constant (absent from the PTX) takes its value; Triton's own trailing scratch pointers (nulls
    in the spec) are left to the launcher."""
    meta = tuner.triton_meta
    constants = meta.get("constants", {})
    tuned = set().union(*(c.kwargs for c in tuner.configs))
    params = [n for n in meta["signature"] if n not in tuned]
    n_ptx = sum(1 for n in params if n not in constants)
    if len(args) < n_ptx or any(a is not None for a in args[n_ptx:]):
        raise AnchorError(f"{tuner.fn.__name__}: the spec's {len(args)} arguments do not map onto the "
                          f"kernel's {n_ptx} parameters ({', '.join(params)}) and trailing nulls")
    ptx = iter(args[:n_ptx])
    return [constants[n] if n in constants else next(ptx) for n in params]


def torch_args(spec, seed: int = 0) -> list:
    """The kernel's positional arguments for a launch, as torch objects on the GPU: its input draw 0
    (chronos.measure.inputs: the captured data where present), zeroed outputs, scalars, None for a null."""
    import numpy as np
    import torch

    from chronos.measure.inputs import NP_DTYPES, draw_inputs, scalar_value

    drawn = draw_inputs(spec, seed, 0)
    out = []
    for a in spec.args:
        if a.kind == "buffer":
            host = drawn.get(a.name)
            if host is None:
                host = np.zeros(a.elements, dtype=NP_DTYPES[a.dtype])
            t = torch.from_numpy(np.ascontiguousarray(host))
            out.append((t.view(torch.bfloat16) if a.dtype == "bf16" else t).cuda())
        elif a.kind == "scalar":
            out.append(scalar_value(a))
        else:
            out.append(None)
    return out

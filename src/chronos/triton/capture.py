"""The in-process half of `chronos capture`: record every Triton kernel launch signature of a workload.

`start(out)` (or CHRONOS_CAPTURE=out in the environment, read by the bootstrap `sitecustomize` that
`chronos capture` puts on PYTHONPATH) wraps the two places a Triton kernel is launched from Python:

- `torch._inductor.runtime.triton_heuristics.CachingAutotuner.run` — torch.compile's kernels, which bypass
  Triton's own launcher and `launch_enter_hook` (PTX_NOTES); the grid comes from Inductor itself
  (`_interpret_args_grid`) and in-place arguments from its `mutated_arg_names`;
- `triton.runtime.jit.JITFunction.run` — every `kernel[grid](...)` of plain Triton code.

The modules are patched when they are imported (a meta-path finder), so the user's script needs no change.
The first launch of each distinct signature (kernel, grid, argument dtypes/shapes/strides, scalar values)
writes one JSON record, and — up to a per-tensor and a total byte cap — the tensors' contents before the
launch, so tuning verifies on real data. PTX and Triton metadata are not read here: `chronos capture` points
TRITON_CACHE_DIR at a fresh folder, which every process (Inductor's compile workers included) fills, and
joins the records with it afterwards (chronos.capture). Recording never breaks the workload: an error is
written to `errors-<pid>.log` and the launch goes on.
"""

from __future__ import annotations

import atexit
import hashlib
import importlib.abc
import importlib.util
import json
import math
import os
import sys
import threading
import traceback
from pathlib import Path

from chronos.triton.capture_tensors import changed, is_tensor, span_view, tensor_desc, value_stats

ENV_DIR = "CHRONOS_CAPTURE"
ENV_TENSOR_CAP = "CHRONOS_CAPTURE_TENSOR_BYTES"
ENV_TOTAL_CAP = "CHRONOS_CAPTURE_TOTAL_BYTES"
TENSOR_CAP = 64 << 20
TOTAL_CAP = 2 << 30

class Recorder:
    """Writes launch records under `out/launches`, captured tensors under `out/inputs`, counts at exit."""

    def __init__(self, out: Path, tensor_cap: int = TENSOR_CAP, total_cap: int = TOTAL_CAP):
        self.out = Path(out)
        self.tensor_cap, self.total_cap = tensor_cap, total_cap
        self.saved_bytes = 0
        self.counts: dict[str, int] = {}
        self.lock = threading.Lock()
        for sub in ("launches", "inputs", "counts"):
            (self.out / sub).mkdir(parents=True, exist_ok=True)

    # ---------------------------------------------------------------- one launch
    def signature(self, kernel_id: str, grid, args: list) -> str:
        parts = [kernel_id, repr(tuple(grid) if grid is not None else None)]
        for a in args:
            if is_tensor(a):
                parts.append(f"T{a.dtype}{tuple(a.shape)}{tuple(a.stride())}{a.data_ptr() % 16 == 0}")
            else:
                parts.append(f"S{type(a).__name__}{a!r}")
        return hashlib.sha256("|".join(parts).encode()).hexdigest()[:16]

    def seen(self, sig: str) -> bool:
        with self.lock:
            first = sig not in self.counts
            self.counts[sig] = self.counts.get(sig, 0) + 1
        return not first

    def describe(self, sig: str, names: list[str], args: list, *, save: bool) -> list[dict]:
        """Per argument: what it is (dtype, shape, strides, span) and, for tensors, value statistics and,
        within the caps, the contents of the span it covers (before the launch)."""
        out = []
        for i, (name, a) in enumerate(zip(names, args)):
            if is_tensor(a):
                d = tensor_desc(a)
                if save and d["dtype"] is not None and not _capturing():
                    d.update(value_stats(a, d))
                    d["data"] = self._save(sig, i, a, d)
                out.append({"name": name, **d})
            elif a is None:
                out.append({"name": name, "kind": "none"})
            elif isinstance(a, (bool, int, float)):
                out.append(
                    {
                        "name": name,
                        "kind": "scalar",
                        "value": a if math.isfinite(float(a)) else repr(a),
                        "pytype": type(a).__name__,
                    }
                )
            else:
                out.append({"name": name, "kind": "other", "type": type(a).__name__})
        return out

    def _save(self, sig: str, i: int, t, d: dict) -> str | None:
        import numpy as np

        nbytes = d["elements"] * t.element_size()
        with self.lock:
            if nbytes > self.tensor_cap or self.saved_bytes + nbytes > self.total_cap:
                return None
            self.saved_bytes += nbytes
        span = span_view(t, d["elements"])
        host = span.detach().cpu()
        if host.dtype.is_floating_point and host.element_size() == 2:
            host = host.view(__import__("torch").int16)
        elif str(host.dtype) == "torch.bool":
            host = host.view(__import__("torch").uint8)
        rel = f"inputs/{sig}/{i}.npy"
        (self.out / rel).parent.mkdir(parents=True, exist_ok=True)
        arr = host.numpy()
        if d["dtype"] in ("f16", "bf16"):
            arr = arr.view(np.float16 if d["dtype"] == "f16" else np.uint16)
        np.save(self.out / rel, arr)
        return rel

    def write(self, sig: str, record: dict) -> None:
        record = {"signature": sig, "pid": os.getpid(), "ptxas": triton_ptxas(), **record}
        path = self.out / "launches" / f"{sig}.json"
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(json.dumps(record, indent=1, default=str) + "\n")
        os.replace(tmp, path)

    def flush_counts(self) -> None:
        with self.lock:
            counts = dict(self.counts)
        if counts:
            (self.out / "counts" / f"{os.getpid()}.json").write_text(
                json.dumps(counts, sort_keys=True) + "\n"
            )

    def error(self, where: str) -> None:
        with open(self.out / f"errors-{os.getpid()}.log", "a") as f:
            f.write(f"== {where}\n{traceback.format_exc()}\n")


def _capturing() -> bool:
    """Inside a CUDA-graph capture nothing may synchronise: record the signature only."""
    import torch

    return bool(torch.cuda.is_available() and torch.cuda.is_current_stream_capturing())


# ------------------------------------------------------------------ the two launch paths
def _inductor_run(orig):
    def run(self, *args, stream, **kwargs):
        rec = _STATE["recorder"]
        if rec is None or kwargs.get("benchmark_run"):
            return orig(self, *args, stream=stream, **kwargs)
        try:
            sig = rec.signature(f"inductor:{_inductor_identity(self)}", None, list(args))
            fresh = not rec.seen(sig)
            names = _inductor_names(self, len(args))
            pre = rec.describe(sig, names, list(args), save=True) if fresh else None
        except Exception:  # noqa: BLE001 - recording must never break the workload
            rec.error(f"inductor {getattr(self.fn, '__name__', '?')}")
            fresh = False
        result = orig(self, *args, stream=stream, **kwargs)
        if fresh:
            try:
                _record_inductor(rec, self, sig, args, pre)
            except Exception:  # noqa: BLE001
                rec.error(f"inductor {getattr(self.fn, '__name__', '?')}")
        return result

    run.__chronos_capture__ = True
    return run


def _inductor_identity(autotuner) -> str:
    """The kernel an Inductor autotuner launches, the same in every process: its name and a hash of its
    source (Triton's compile hash is not: it folds in whichever ptxas the process met first). Without a
    source, the object's id (a name then differs from one capture to the next)."""
    src = getattr(autotuner.fn, "src", None)
    if not isinstance(src, str):
        return f"id{id(autotuner)}"
    return f"{autotuner.fn.__name__}:{hashlib.sha256(src.encode()).hexdigest()[:16]}"


def _inductor_names(autotuner, n: int) -> list[str]:
    """Names of the positional arguments Inductor passes (its signature minus declared constexprs)."""
    sig = list(autotuner.triton_meta.get("signature", {}))
    typed = autotuner.triton_meta.get("signature", {})
    names = [k for k in sig if typed[k] != "constexpr"]
    names += list(autotuner.inductor_meta.get("extra_launcher_args", ()))
    return names[:n] + [f"arg{i}" for i in range(len(names), n)]


def _record_inductor(rec: Recorder, autotuner, sig: str, args, pre: list[dict]) -> None:
    if len(autotuner.launchers) != 1:
        return
    launcher = autotuner.launchers[0]
    call_args, grid = autotuner._interpret_args_grid(args, launcher.config)
    pre = pre[: len(call_args)]
    mutated = set(autotuner.mutated_arg_names)
    for a in pre:
        if a["kind"] == "tensor":
            a["mutated"] = a["name"] in mutated or a["name"].startswith(("in_out_ptr", "out_ptr"))
            a["write_only"] = a["name"].startswith("out_ptr") and a["name"] not in mutated
    cfg = launcher.config
    rec.write(
        sig,
        {
            "source": "inductor",
            "cache_key": getattr(launcher, "cache_hash", None),
            "hash": None,
            "function": autotuner.fn.__name__,
            "grid": [int(g) for g in grid],
            "num_warps": cfg.num_warps,
            "num_stages": cfg.num_stages,
            "constexprs": dict(cfg.kwargs),
            "constants": _plain(autotuner.triton_meta.get("constants", {})),
            "inductor_kernel": autotuner.inductor_meta.get("kernel_name"),
            "source_hash": autotuner.inductor_meta.get("backend_hash"),
            "args": pre,
        },
    )


def _jit_run(orig):
    def run(self, *args, grid, warmup, **kwargs):
        rec = _STATE["recorder"]
        if rec is None or warmup:
            return orig(self, *args, grid=grid, warmup=warmup, **kwargs)
        try:
            bound = self.signature.bind(*args, **kwargs)
            bound.apply_defaults()
            values = dict(bound.arguments)
            g = grid(values) if callable(grid) else grid
            g = [int(x) for x in (tuple(g) + (1, 1))[:3]]
            constexpr = {p.name for p in self.params if p.is_constexpr}
            names = [n for n in self.arg_names if n not in constexpr]
            vals = [values[n] for n in names]
            sig = rec.signature(f"jit:{self.fn.__module__}.{self.fn.__qualname__}:{sorted(kwargs)}", g,
                                vals + [values[n] for n in sorted(constexpr)])
            fresh = not rec.seen(sig)
            pre = rec.describe(sig, names, vals, save=True) if fresh else None
            before = {
                i: span_view(v, pre[i]["elements"]).detach().to("cpu", copy=True)
                for i, v in enumerate(vals)
                if fresh and is_tensor(v) and pre[i].get("data") and not _capturing()
            }
        except Exception:  # noqa: BLE001
            rec.error(f"jit {getattr(self, '__name__', '?')}")
            fresh = False
        kernel = orig(self, *args, grid=grid, warmup=warmup, **kwargs)
        if fresh:
            try:
                for i, a in enumerate(pre):
                    # Which arguments a plain Triton kernel writes is not declared anywhere, and a rewrite of
                    # the same values is invisible: every tensor is inout (restored before each run,
                    # compared after it); `changed` is what this launch showed.
                    if a["kind"] == "tensor":
                        a["mutated"], a["write_only"] = True, False
                        a["changed"] = changed(before[i], vals[i]) if i in before else None
                meta = kernel.metadata
                rec.write(sig, {"source": "jit", "cache_key": None, "hash": kernel.hash,
                                "function": self.fn.__name__, "grid": g, "num_warps": meta.num_warps,
                                "num_stages": meta.num_stages, "constants": {},
                                "constexprs": _plain({n: values[n] for n in constexpr}),
                                "source_hash": self.cache_key, "args": pre})
            except Exception:  # noqa: BLE001
                rec.error(f"jit {getattr(self, '__name__', '?')}")
        return kernel

    run.__chronos_capture__ = True
    return run


def triton_ptxas() -> dict | None:
    """The ptxas Triton assembles with in this process now: {"path", "version"}. Not always Triton's own:
    Inductor points TRITON_PTXAS_PATH at torch's bundled ptxas before it compiles (torch/bin/ptxas in
    CUDA builds), and that ptxas also decides the PTX ISA version Triton emits."""
    try:
        import torch
        from triton.backends.nvidia.compiler import get_ptxas

        major, minor = torch.cuda.get_device_capability() if torch.cuda.is_available() else (9, 0)
        path = get_ptxas(10 * major + minor).path
    except Exception:  # noqa: BLE001 - no Triton NVIDIA backend here: nothing to record
        return None
    from chronos.toolchain import ptxas_version  # cached per path

    return {"path": path, "version": ptxas_version(path)}


def _plain(d: dict) -> dict:
    return {
        str(k): (v if isinstance(v, (bool, int, float, str)) or v is None else repr(v)) for k, v in d.items()
    }


def _patch_inductor(mod) -> None:
    cls = mod.CachingAutotuner
    if not getattr(cls.run, "__chronos_capture__", False):
        cls.run = _inductor_run(cls.run)


def _patch_jit(mod) -> None:
    cls = mod.JITFunction
    if not getattr(cls.run, "__chronos_capture__", False):
        cls.run = _jit_run(cls.run)


PATCHES = {"torch._inductor.runtime.triton_heuristics": _patch_inductor, "triton.runtime.jit": _patch_jit}


class _PatchOnImport(importlib.abc.MetaPathFinder):
    """Applies PATCHES to their modules right after the modules execute, whoever imports them."""

    def find_spec(self, name, path, target=None):
        if name not in PATCHES:
            return None
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(name, path, target)
            if spec is not None and spec.loader is not None:
                spec.loader = _PatchingLoader(spec.loader, PATCHES[name])
                return spec
        return None


class _PatchingLoader(importlib.abc.Loader):
    def __init__(self, loader, patch):
        self.loader, self.patch = loader, patch

    def create_module(self, spec):
        return self.loader.create_module(spec)

    def exec_module(self, module):
        self.loader.exec_module(module)
        rec = _STATE["recorder"]
        try:
            self.patch(module)
        except Exception:  # noqa: BLE001 - an unexpected torch/Triton version: record, never break
            if rec is not None:
                rec.error(f"patch {module.__name__}")


_STATE: dict = {"recorder": None, "finder": None}


def start(out: str | Path, tensor_cap: int = TENSOR_CAP, total_cap: int = TOTAL_CAP) -> Recorder:
    """Record launches into `out` from now on (modules imported later are patched when they load)."""
    rec = Recorder(Path(out), tensor_cap, total_cap)
    _STATE["recorder"] = rec
    if _STATE["finder"] is None:
        _STATE["finder"] = _PatchOnImport()
        sys.meta_path.insert(0, _STATE["finder"])
        atexit.register(lambda: _STATE["recorder"] is not None and _STATE["recorder"].flush_counts())
    for name, patch in PATCHES.items():
        if name in sys.modules:
            patch(sys.modules[name])
    return rec


def stop() -> None:
    rec = _STATE["recorder"]
    if rec is not None:
        rec.flush_counts()
    _STATE["recorder"] = None


def start_from_env() -> Recorder | None:
    """What the bootstrap sitecustomize calls in every Python process `chronos capture` starts."""
    out = os.environ.get(ENV_DIR)
    if not out or importlib.util.find_spec("torch") is None and importlib.util.find_spec("triton") is None:
        return None
    return start(
        out, int(os.environ.get(ENV_TENSOR_CAP, TENSOR_CAP)), int(os.environ.get(ENV_TOTAL_CAP, TOTAL_CAP))
    )

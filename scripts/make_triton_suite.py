"""Generate the Triton evaluation suite (data/kernels/triton/): 33 PTX files, specs.json, provenance.

On the H200 image (Triton 3.6, torch, pycuda wheels on PYTHONPATH, src/ on PYTHONPATH):
    PYTHONUNBUFFERED=1 python3 scripts/make_triton_suite.py --out data/kernels/triton
For every case: launch through the Triton JIT on seeded inputs, check against a float64 torch reference,
save the PTX and a KernelSpec built from the PTX entry's parameter list and the JIT's specialisation; then
launch the saved PTX from the spec alone through pycuda (driver JIT, primary context shared with torch) on
fresh inputs drawn as the spec says, and require its outputs to equal Triton's on the same inputs bit for bit.
Without a GPU: ``--dry-run`` compiles every case offline for sm_90a and builds its spec.
"""

from __future__ import annotations

import argparse
import datetime
import json
import platform
import subprocess
import sys
from pathlib import Path

from chronos.kernels.spec import KernelSpec, write_specs
from chronos.kernels.triton_suite import CASES, Buf, Case, kernel_fn
from chronos.kernels.triton_suite.build import bind, compile_offline, jit_specialisation, make_spec

MAX_STATIC_SHARED = 48 * 1024


def jit_view(ck, fn) -> tuple[dict[str, str], set[str]]:
    """The JIT's signature and 16-divisible argument names for this compiled kernel."""
    sig = dict(ck.src.signature)
    div16 = {fn.arg_names[key[0]] for key, attrs in ck.src.attrs.items()
             if ["tt.divisibility", 16] in [list(a) for a in attrs]}
    return sig, div16


def kept_case_args(case: Case, sig: dict[str, str]):
    binding = bind(case, list(sig))
    return [binding[n] for n, t in sig.items() if t != "constexpr"]


def triton_launch(case: Case, fn, tensors: dict):
    args = [tensors[a.name] if isinstance(a, Buf) else a.value for a in case.args]
    return fn[case.grid](*args, num_warps=case.num_warps, num_stages=case.num_stages, **case.const)


def spec_launch(spec: KernelSpec, image: bytes, data: dict):
    """Launch `image` (PTX or cubin) from the spec alone; `data` maps spec arg name -> flat input tensor.
    Returns spec arg name -> output tensor (fresh, poisoned before the launch)."""
    import numpy as np
    import pycuda.driver as drv
    import torch

    from chronos.kernels.triton_suite.reference import poisoned

    mod = drv.module_from_buffer(image)
    f = mod.get_function(spec.entry)
    if spec.shared_bytes > MAX_STATIC_SHARED:
        f.set_attribute(drv.function_attribute.MAX_DYNAMIC_SHARED_SIZE_BYTES, spec.shared_bytes)
    args, outs, keep = [], {}, []
    for a in spec.args:
        if a.kind == "null":
            args.append(np.uintp(0))
        elif a.kind == "scalar":
            args.append(np.float32(a.value) if a.dtype == "f32" else np.int32(a.value))
        else:
            t = poisoned(a.dtype, a.elements)
            if a.role == "input":
                t.copy_(data[a.name])
            else:
                outs[a.name] = t
            keep.append(t)
            args.append(np.uintp(t.data_ptr()))
    torch.cuda.synchronize()
    f(*args, block=tuple(spec.block), grid=tuple(spec.grid), shared=spec.shared_bytes)
    drv.Context.synchronize()
    return outs


def bits_equal(a, b) -> bool:
    import torch

    return a.shape == b.shape and torch.equal(a.contiguous().view(torch.uint8),
                                              b.contiguous().view(torch.uint8))


def run_case(case: Case, seed: int, out_dir: Path) -> tuple[KernelSpec, dict]:
    import torch
    import triton.testing

    from chronos.kernels.triton_suite.reference import draw, expected, place, tolerance

    fn = kernel_fn(case.kernel)
    rec: dict = {"tags": list(case.tags), "grid": list(case.grid), "num_warps": case.num_warps,
                 "num_stages": case.num_stages, "constexprs": case.const}
    gen = torch.Generator(device="cuda").manual_seed(seed)
    # Draw 1: compile through the JIT and check against the reference.
    tensors = {a.name: place(a, draw(a.dtype, a.elements, a.init, gen) if a.role == "input" else None)
               for a in case.args if isinstance(a, Buf)}
    ck = triton_launch(case, fn, tensors)
    torch.cuda.synchronize()
    errs, ok = {}, True
    for name, ref in expected(case, tensors).items():
        got = tensors[name].double()
        atol, rtol = tolerance(case, next(a for a in case.args if a.name == name))
        errs[name] = float((got - ref).abs().max())
        ok &= bool(torch.allclose(got, ref, atol=atol, rtol=rtol)) and not bool(got.isnan().any())
    sig, div16 = jit_view(ck, fn)
    md = ck.metadata
    assert md.global_scratch_size == 0 and md.profile_scratch_size == 0, "hidden scratch would be used"
    rec["offline_specialisation_matches_jit"] = (sig, div16) == jit_specialisation(case, list(fn.arg_names))
    ptx = ck.asm["ptx"]
    (out_dir / f"{case.name}.ptx").write_text(ptx)
    spec = make_spec(case, ptx, sig, div16, md.shared)
    # Draw 2, as the spec says: Triton (case layout, offsets included) vs the spec launch (fresh buffers).
    kept = kept_case_args(case, sig)
    data = {s.name: draw(s.dtype, s.elements, s.init, gen) for s in spec.args if s.kind == "buffer"
            and s.role == "input"}
    by_case = {c.name: s.name for s, c in zip(spec.args, kept, strict=False)}
    tensors = {a.name: place(a, data.get(by_case[a.name])) for a in case.args if isinstance(a, Buf)}
    triton_launch(case, fn, tensors)
    torch.cuda.synchronize()
    ref_out = {by_case[n]: tensors[n].reshape(-1) for n in expected(case, tensors)}
    for name, ref in expected(case, tensors).items():
        errs[name] = max(errs[name], float((tensors[name].double() - ref).abs().max()))
    exact = {}
    for label, image in (("ptx_jit", ptx.encode()), ("cubin", ck.asm["cubin"])):
        got = spec_launch(spec, image, data)
        exact[label] = all(bits_equal(got[k], v) and not bool(got[k].isnan().any())
                           for k, v in ref_out.items())
    nan_free = not any(bool(v.isnan().any()) for v in ref_out.values() if v.is_floating_point())
    ms = triton.testing.do_bench(lambda: triton_launch(case, fn, tensors), return_mode="median")
    rec.update(n_regs=ck.n_regs, n_spills=ck.n_spills, shared=md.shared, block=list(spec.block),
               check={"ok": ok, "max_abs_err": errs}, nan_free=nan_free,
               spec_launch_bit_exact=exact["ptx_jit"], cubin_launch_bit_exact=exact["cubin"],
               alignment=sorted(spec.alignment), median_us=round(ms * 1000, 3),
               passed=ok and nan_free and exact["ptx_jit"])
    return spec, rec


def provenance() -> dict:
    import pycuda
    import torch
    import triton

    smi = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version", "--format=csv,noheader"],
                         capture_output=True, text=True, check=False)
    ptxas = Path(triton.__file__).parent / "backends/nvidia/bin/ptxas"
    ver = subprocess.run([str(ptxas), "--version"], capture_output=True, text=True, check=False).stdout
    return {"gpu": torch.cuda.get_device_name(), "nvidia_smi": smi.stdout.strip(),
            "driver": smi.stdout.strip().split(",")[-1].strip() if smi.returncode == 0 else None,
            "triton": triton.__version__, "torch": torch.__version__, "torch_cuda": torch.version.cuda,
            "pycuda": pycuda.VERSION_TEXT,
            "triton_ptxas": next((ln for ln in ver.splitlines() if "release" in ln), ver.strip()),
            "python": platform.python_version(),
            "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
            "command": "PYTHONUNBUFFERED=1 python3 " + " ".join(sys.argv)}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=Path("data/kernels/triton"))
    ap.add_argument("--dry-run", action="store_true", help="offline sm_90a compile + specs only (no GPU)")
    ap.add_argument("--only", nargs="*", help="subset of case names")
    args = ap.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    cases = [c for c in CASES if not args.only or c.name in args.only]
    specs, recs, failed = [], {}, []
    if not args.dry_run:
        import pycuda.driver as drv
        import torch

        torch.cuda.init()
        drv.init()
        ctx = drv.Device(torch.cuda.current_device()).retain_primary_context()
        ctx.push()  # share torch's context, so torch's pointers are valid in pycuda launches
    for i, case in enumerate(cases):
        try:
            if args.dry_run:
                ck, sig, div16 = compile_offline(case)
                (args.out / f"{case.name}.ptx").write_text(ck.asm["ptx"])
                spec, rec = make_spec(case, ck.asm["ptx"], sig, div16, ck.metadata.shared), {"passed": True}
            else:
                spec, rec = run_case(case, 1000 + i, args.out)
            specs.append(spec)
        except Exception as exc:  # noqa: BLE001 -- one broken case must not hide the others
            rec = {"passed": False, "error": f"{type(exc).__name__}: {exc}"}
        if not rec["passed"]:
            failed.append(case.name)
        recs[case.name] = rec
        print(case.name, json.dumps(rec), flush=True)
    write_specs(args.out / "specs.json", specs)
    if not args.dry_run:
        ctx.pop()
        prov = {"provenance": provenance(), "n_cases": len(cases), "n_passed": len(cases) - len(failed),
                "cases": recs}
        (args.out / "suite_provenance.json").write_text(json.dumps(prov, indent=1) + "\n")
    print("failed:", failed or "none")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

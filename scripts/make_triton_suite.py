"""Generate a tier of the Triton evaluation suite: PTX files, specs.json, provenance.

Tiers (`--tier`): `small` (default; data/kernels/triton/, family "triton": the 33 cases of
chronos.kernels.triton_suite.CASES), `llm` (data/kernels/triton_llm/, family "triton_llm": the same 33
kernels at Llama-3-8B sizes, cases_llm.CASES_LLM) and `probes` (data/kernels/probes/, family "probes": the
bf16 GEMM of cases_llm.PROBES and the hand-written copy kernel of chronos.measure.probes, the roofline's two
peaks).

On the H200 image (Triton 3.6, torch, pycuda wheels on PYTHONPATH, src/ on PYTHONPATH):
    PYTHONUNBUFFERED=1 python3 scripts/make_triton_suite.py [--tier llm|probes]
For every case: launch through the Triton JIT on seeded inputs, check against a float64 torch reference
(GEMMs of 2*4096^3 flops and more: on 256 sampled rows of C; `check.reference` in the provenance says
which), save the PTX and a KernelSpec built from the PTX entry's parameter list and the JIT's
specialisation; then launch the saved PTX from the spec alone through pycuda (driver JIT, primary context
shared with torch) on fresh inputs drawn as the spec says, and require its outputs to equal Triton's on the
same inputs bit for bit. The copy probe is launched from its spec the same way and must copy bit for bit.
Without a GPU: ``--dry-run`` compiles every case offline for sm_90a (needs triton) and builds its spec; the
copy probe is only assembled with ptxas.
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
from chronos.kernels.triton_suite.cases_llm import CASES_LLM, PROBES

MAX_STATIC_SHARED = 48 * 1024
# tier -> (cases, default output folder, spec family = that folder's name under data/kernels)
TIERS = {"small": (CASES, Path("data/kernels/triton"), "triton"),
         "llm": (CASES_LLM, Path("data/kernels/triton_llm"), "triton_llm"),
         "probes": (PROBES, Path("data/kernels/probes"), "probes")}


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
    from chronos.measure.inputs import scalar_value

    mod = drv.module_from_buffer(image)
    f = mod.get_function(spec.entry)
    if spec.shared_bytes > MAX_STATIC_SHARED:
        f.set_attribute(drv.function_attribute.MAX_DYNAMIC_SHARED_SIZE_BYTES, spec.shared_bytes)
    args, outs, keep = [], {}, []
    for a in spec.args:
        if a.kind == "null":
            args.append(np.uintp(0))
        elif a.kind == "scalar":
            args.append(scalar_value(a))  # f32 -> float32, i32 -> int32, u64 -> uint64 ...
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


def compare(case: Case, tensors: dict, errs: dict) -> bool:
    """Check the case's outputs in `tensors` against the reference (`reference.checked`): record each output's
    max abs error in `errs` (the max over calls) and say whether all are within tolerance and NaN-free."""
    import torch

    from chronos.kernels.triton_suite.reference import checked, tolerance

    ok = True
    for name, (got, ref) in checked(case, tensors).items():
        atol, rtol = tolerance(case, next(a for a in case.args if a.name == name))
        errs[name] = max(errs.get(name, 0.0), float((got - ref).abs().max()))
        ok &= bool(torch.allclose(got, ref, atol=atol, rtol=rtol)) and not bool(got.isnan().any())
    return ok


def run_case(case: Case, seed: int, out_dir: Path, family: str) -> tuple[KernelSpec, dict]:
    import torch
    import triton.testing

    from chronos.kernels.triton_suite.reference import check_method, draw, place

    fn = kernel_fn(case.kernel)
    rec: dict = {"tags": list(case.tags), "grid": list(case.grid), "num_warps": case.num_warps,
                 "num_stages": case.num_stages, "constexprs": case.const}
    gen = torch.Generator(device="cuda").manual_seed(seed)
    # Draw 1: compile through the JIT and check against the reference.
    tensors = {a.name: place(a, draw(a.dtype, a.elements, a.init, gen) if a.role == "input" else None)
               for a in case.args if isinstance(a, Buf)}
    ck = triton_launch(case, fn, tensors)
    torch.cuda.synchronize()
    errs: dict = {}
    ok = compare(case, tensors, errs)
    sig, div16 = jit_view(ck, fn)
    md = ck.metadata
    assert md.global_scratch_size == 0 and md.profile_scratch_size == 0, "hidden scratch would be used"
    rec["offline_specialisation_matches_jit"] = (sig, div16) == jit_specialisation(case, list(fn.arg_names))
    ptx = ck.asm["ptx"]
    (out_dir / f"{case.name}.ptx").write_text(ptx)
    spec = make_spec(case, ptx, sig, div16, md.shared, family)
    # Draw 2, as the spec says: Triton (case layout, offsets included) vs the spec launch (fresh buffers).
    kept = kept_case_args(case, sig)
    data = {s.name: draw(s.dtype, s.elements, s.init, gen) for s in spec.args if s.kind == "buffer"
            and s.role == "input"}
    by_case = {c.name: s.name for s, c in zip(spec.args, kept, strict=False)}
    tensors = {a.name: place(a, data.get(by_case[a.name])) for a in case.args if isinstance(a, Buf)}
    triton_launch(case, fn, tensors)
    torch.cuda.synchronize()
    outputs = [a.name for a in case.args if isinstance(a, Buf) and a.role == "output"]
    ref_out = {by_case[n]: tensors[n].reshape(-1) for n in outputs}
    compare(case, tensors, errs)
    exact = {}
    for label, image in (("ptx_jit", ptx.encode()), ("cubin", ck.asm["cubin"])):
        got = spec_launch(spec, image, data)
        exact[label] = all(bits_equal(got[k], v) and not bool(got[k].isnan().any())
                           for k, v in ref_out.items())
    nan_free = not any(bool(v.isnan().any()) for v in ref_out.values() if v.is_floating_point())
    ms = triton.testing.do_bench(lambda: triton_launch(case, fn, tensors), return_mode="median")
    rec.update(n_regs=ck.n_regs, n_spills=ck.n_spills, shared=md.shared, block=list(spec.block),
               check={"ok": ok, "max_abs_err": errs, "reference": check_method(case)}, nan_free=nan_free,
               spec_launch_bit_exact=exact["ptx_jit"], cubin_launch_bit_exact=exact["cubin"],
               alignment=sorted(spec.alignment), median_us=round(ms * 1000, 3),
               passed=ok and nan_free and exact["ptx_jit"])
    return spec, rec


def run_copy_probe(spec: KernelSpec, ptx: str, seed: int) -> dict:
    """Launch the copy probe from its spec (poisoned dst), require dst == src bit for bit, and time it."""
    import numpy as np
    import pycuda.driver as drv
    import torch
    import triton.testing

    from chronos.kernels.triton_suite.reference import draw
    from chronos.measure.inputs import scalar_value
    from chronos.measure.probes import min_bytes

    gen = torch.Generator(device="cuda").manual_seed(seed)
    src = spec.args[0]
    data = {src.name: draw(src.dtype, src.elements, src.init, gen)}
    got = spec_launch(spec, ptx.encode(), data)
    exact = bits_equal(got[spec.args[1].name], data[src.name])
    mod = drv.module_from_buffer(ptx.encode())
    f = mod.get_function(spec.entry)
    dst = torch.empty_like(data[src.name])
    args = (np.uintp(data[src.name].data_ptr()), np.uintp(dst.data_ptr()), scalar_value(spec.args[2]))
    ms = triton.testing.do_bench(lambda: f(*args, block=tuple(spec.block), grid=tuple(spec.grid)),
                                 return_mode="median")
    return {"grid": list(spec.grid), "block": list(spec.block), "bytes_moved": min_bytes(spec),
            "bit_exact": exact, "median_us": round(ms * 1000, 3),
            "GBps": round(min_bytes(spec) / (ms / 1e3) / 1e9, 1), "passed": exact}


def copy_probe(out_dir: Path, dry_run: bool, seed: int) -> tuple[KernelSpec, dict]:
    """The bandwidth probe of the probes tier: its PTX file, spec and record (ptxas-checked when dry)."""
    from chronos.measure.probes import COPY_PTX, copy_probe_spec
    from chronos.toolchain import assemble

    spec = copy_probe_spec()
    (out_dir / spec.ptx).write_text(COPY_PTX)
    if dry_run:
        regs = {arch: assemble(COPY_PTX, arch, name=spec.entry).entries[spec.entry].registers
                for arch in ("sm_89", "sm_90a")}
        return spec, {"passed": True, "registers": regs}
    return spec, run_copy_probe(spec, COPY_PTX, seed)


def roofline_peaks(specs: list[KernelSpec], recs: dict) -> dict | None:
    """The probes tier's peaks (bytes/s, flop/s) from the two probes' do_bench medians."""
    from chronos.measure.probes import flops, min_bytes, peaks_from_probes

    copy = next((s for s in specs if s.entry == "chronos_copy_probe"), None)
    gemm = next((s for s in specs if s.entry == "matmul_kernel"), None)
    if copy is None or gemm is None or not (recs[copy.kernel]["passed"] and recs[gemm.kernel]["passed"]):
        return None
    peaks = peaks_from_probes(recs[copy.kernel]["median_us"] / 1e3, min_bytes(copy),
                              recs[gemm.kernel]["median_us"] / 1e3, flops(gemm))
    # Same timer as every case's median_us, so fractions computed from this file compare like with like. A
    # sustained bf16 GEMM slows as the GPU heats (593-694 TFLOP/s seen on one H200): measure the probes in the
    # same session as the kernels they normalise.
    return {**peaks, "timer": "triton.testing.do_bench median (25 ms warm-up, 100 ms of launches, L2 flush)"}


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
    ap.add_argument("--tier", choices=sorted(TIERS), default="small", help="which cases (default: small)")
    ap.add_argument("--out", type=Path, help="output folder (default: the tier's folder under data/kernels)")
    ap.add_argument("--dry-run", action="store_true", help="offline sm_90a compile + specs only (no GPU)")
    ap.add_argument("--only", nargs="*", help="subset of case names")
    args = ap.parse_args()
    all_cases, default_out, family = TIERS[args.tier]
    args.out = args.out or default_out
    args.out.mkdir(parents=True, exist_ok=True)
    cases = [c for c in all_cases if not args.only or c.name in args.only]
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
                spec = make_spec(case, ck.asm["ptx"], sig, div16, ck.metadata.shared, family)
                rec = {"passed": True}
            else:
                spec, rec = run_case(case, 1000 + i, args.out, family)
            specs.append(spec)
        except Exception as exc:  # noqa: BLE001 -- one broken case must not hide the others
            rec = {"passed": False, "error": f"{type(exc).__name__}: {exc}"}
        finish(case.name, rec, recs, failed, args.dry_run)
    if args.tier == "probes":
        try:
            spec, rec = copy_probe(args.out, args.dry_run, 2000)
            specs.append(spec)
        except Exception as exc:  # noqa: BLE001
            spec, rec = None, {"passed": False, "error": f"{type(exc).__name__}: {exc}"}
        finish(spec.kernel if spec else "probe_copy", rec, recs, failed, args.dry_run)
    write_specs(args.out / "specs.json", specs)
    if not args.dry_run:
        ctx.pop()
        prov = {"provenance": {**provenance(), "tier": args.tier, "family": family}, "n_cases": len(recs),
                "n_passed": len(recs) - len(failed), "cases": recs}
        if args.tier == "probes":
            prov["roofline_peaks"] = roofline_peaks(specs, recs)
        (args.out / "suite_provenance.json").write_text(json.dumps(prov, indent=1) + "\n")
    print("failed:", failed or "none")
    return 1 if failed else 0


def finish(name: str, rec: dict, recs: dict, failed: list, dry_run: bool) -> None:
    """Record one case, print its line, and hand its GPU memory back (the LLM tier's cases hold gigabytes)."""
    if not rec["passed"]:
        failed.append(name)
    recs[name] = rec
    print(name, json.dumps(rec), flush=True)
    if not dry_run:
        import torch

        torch.cuda.empty_cache()


if __name__ == "__main__":
    sys.exit(main())

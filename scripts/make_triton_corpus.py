"""Build the Triton PTX test corpus (tests/corpus/triton/) from real, checked kernels.

On a GPU machine (H200, Triton 3.6):
    PYTHONUNBUFFERED=1 python3 scripts/make_triton_corpus.py --out /tmp/tc
JIT-compiles and runs every kernel below, checks it against torch, saves
``triton_<name>.sm_90a.ptx`` and compiles sm_89 PTX offline (``triton.compile`` with a
GPUTarget, no sm_89 device needed) as ``triton_<name>.sm_89.ptx``; provenance and
per-kernel metadata go to ``triton_corpus.json``.
Without a GPU (only triton installed): ``--dry-run`` compiles both targets offline, which
catches API and signature mistakes before spending device time.
"""

from __future__ import annotations

import argparse
import datetime
import json
import platform
import re
import subprocess
import sys
from pathlib import Path

import triton
import triton.language as tl
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource


@triton.jit
def silu_mul_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    # Fused SwiGLU gate: out = silu(x) * y.
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    y = tl.load(y_ptr + offs, mask=mask, other=0.0)
    tl.store(out_ptr + offs, x * tl.sigmoid(x) * y, mask=mask)


@triton.jit
def softmax_kernel(x_ptr, y_ptr, stride, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * stride + cols, mask=mask, other=-float("inf"))
    e = tl.exp(x - tl.max(x, axis=0))
    tl.store(y_ptr + row * stride + cols, e / tl.sum(e, axis=0), mask=mask)


@triton.jit
def layernorm_kernel(x_ptr, w_ptr, b_ptr, y_ptr, stride, n_cols, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * stride + cols, mask=mask, other=0.0)
    mean = tl.sum(x, axis=0) / n_cols
    d = tl.where(mask, x - mean, 0.0)
    rstd = 1.0 / tl.sqrt(tl.sum(d * d, axis=0) / n_cols + eps)
    w = tl.load(w_ptr + cols, mask=mask, other=0.0)
    b = tl.load(b_ptr + cols, mask=mask, other=0.0)
    tl.store(y_ptr + row * stride + cols, d * rstd * w + b, mask=mask)


@triton.jit
def matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    # Pointer-based fp16 GEMM, row-major A (MxK), B (KxN), C (MxN), fp32 accumulation.
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    rm = pid_m * BM + tl.arange(0, BM)
    rn = pid_n * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    a_ptrs = a_ptr + rm[:, None] * K + rk[None, :]
    b_ptrs = b_ptr + rk[:, None] * N + rn[None, :]
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(tl.cdiv(K, BK)):
        kmask = rk < K - k * BK
        a = tl.load(a_ptrs, mask=kmask[None, :], other=0.0)
        b = tl.load(b_ptrs, mask=kmask[:, None], other=0.0)
        acc = tl.dot(a, b, acc)
        a_ptrs += BK
        b_ptrs += BK * N
    cmask = (rm[:, None] < M) & (rn[None, :] < N)
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], acc.to(tl.float16), mask=cmask)


@triton.jit
def matmul_tma_kernel(a_ptr, b_ptr, c_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    # Same GEMM through tensor descriptors: on sm_90 this lowers to TMA + mbarrier.
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    a_desc = tl.make_tensor_descriptor(a_ptr, shape=[M, K], strides=[K, 1], block_shape=[BM, BK])
    b_desc = tl.make_tensor_descriptor(b_ptr, shape=[K, N], strides=[N, 1], block_shape=[BK, BN])
    c_desc = tl.make_tensor_descriptor(c_ptr, shape=[M, N], strides=[N, 1], block_shape=[BM, BN])
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(tl.cdiv(K, BK)):
        a = a_desc.load([pid_m * BM, k * BK])
        b = b_desc.load([k * BK, pid_n * BN])
        acc = tl.dot(a, b, acc)
    c_desc.store([pid_m * BM, pid_n * BN], acc.to(tl.float16))


# Corpus entries. For offline compiles `sig` gives Triton types, `div16` the argument indices
# that the JIT would specialise as 16-divisible (aligned pointers, ints % 16 == 0), `const`
# the constexprs. `sm89` says whether to emit sm_89 PTX.
N_EW = 1 << 20
M_MM = N_MM = K_MM = 512
MM_BLOCKS = {"BM": 128, "BN": 128, "BK": 64}


def _entry(fn, sig, div16, const, grid, problem, sm89=True):
    return {
        "fn": fn,
        "sig": sig,
        "div16": div16,
        "const": const,
        "grid": grid,
        "problem": problem,
        "sm89": sm89,
        "num_warps": 4,
        "num_stages": 3,
    }


F32x3_I32 = ["*fp32", "*fp32", "*fp32", "i32"]
F16x3_I32x3 = ["*fp16", "*fp16", "*fp16", "i32", "i32", "i32"]
ALL6 = [0, 1, 2, 3, 4, 5]
SPECS = {
    "elementwise": _entry(
        silu_mul_kernel,
        F32x3_I32,
        [0, 1, 2, 3],
        {"BLOCK": 1024},
        [N_EW // 1024, 1, 1],
        "x, y, out: f32[1048576]; n=1048576",
    ),
    # Pointers offset by one element and an odd length: no 16-byte divisibility, so Triton
    # must emit scalar (unvectorised) loads and stores.
    "elementwise_nodiv": _entry(
        silu_mul_kernel,
        F32x3_I32,
        [],
        {"BLOCK": 1024},
        [N_EW // 1024, 1, 1],
        "x, y, out: f32[1048573] at base+4 bytes; n=1048573",
    ),
    "softmax": _entry(
        softmax_kernel,
        ["*fp32", "*fp32", "i32", "i32"],
        [0, 1, 2, 3],
        {"BLOCK": 1024},
        [1024, 1, 1],
        "x, y: f32[1024, 1024]; stride=1024, n_cols=1024",
    ),
    "layernorm": _entry(
        layernorm_kernel,
        ["*fp32", "*fp32", "*fp32", "*fp32", "i32", "i32", "fp32"],
        ALL6,
        {"BLOCK": 1024},
        [512, 1, 1],
        "x, y: f32[512, 768]; w, b: f32[768]; eps=1e-5",
    ),
    "matmul": _entry(
        matmul_kernel,
        F16x3_I32x3,
        ALL6,
        MM_BLOCKS,
        [M_MM // 128, N_MM // 128, 1],
        "A f16[512,512] @ B f16[512,512] -> C f16",
    ),
    # No sm_89 twin: TMA (cp.async.bulk.tensor) is Hopper-only.
    "matmul_tma": _entry(
        matmul_tma_kernel,
        F16x3_I32x3,
        ALL6,
        MM_BLOCKS,
        [M_MM // 128, N_MM // 128, 1],
        "A f16[512,512] @ B f16[512,512] -> C f16 (tensor descriptors)",
        sm89=False,
    ),
}


def compile_offline(spec: dict, arch: int):
    """triton.compile for `arch` without a device of that arch (Triton 3.6 API)."""
    fn = spec["fn"]
    names = fn.arg_names
    signature = {names[i]: t for i, t in enumerate(spec["sig"])}
    signature.update({c: "constexpr" for c in spec["const"]})
    attrs = {(i,): [["tt.divisibility", 16]] for i in spec["div16"]}
    src = ASTSource(fn=fn, signature=signature, constexprs=dict(spec["const"]), attrs=attrs)
    opts = {"num_warps": spec["num_warps"], "num_stages": spec["num_stages"]}
    return triton.compile(src, target=GPUTarget("cuda", arch, 32), options=opts)


def run_on_gpu(name: str, spec: dict):
    """Launch `name` on the current GPU, check it against torch; return (compiled, check)."""
    import torch

    dev = "cuda"
    g = torch.Generator(device=dev).manual_seed(0)
    const, grid, fn = spec["const"], tuple(spec["grid"]), spec["fn"]
    launch = {"num_warps": spec["num_warps"], "num_stages": spec["num_stages"], **const}
    tol = {"atol": 1e-4, "rtol": 1e-4}
    if name.startswith("elementwise"):
        off = 1 if name.endswith("nodiv") else 0  # misalign the pointers by 4 bytes
        n = N_EW - 3 if off else N_EW
        x, y, o = (torch.randn(N_EW + 16, device=dev, generator=g)[off : off + n] for _ in range(3))
        ck = fn[grid](x, y, o, n, **launch)
        ref = torch.nn.functional.silu(x) * y
    elif name == "softmax":
        x = torch.randn(1024, 1024, device=dev, generator=g)
        o = torch.empty_like(x)
        ck = fn[grid](x, o, x.stride(0), x.shape[1], **launch)
        ref = torch.softmax(x, dim=1)
    elif name == "layernorm":
        x = torch.randn(512, 768, device=dev, generator=g)
        w, b = (torch.randn(768, device=dev, generator=g) for _ in range(2))
        o = torch.empty_like(x)
        ck = fn[grid](x, w, b, o, x.stride(0), x.shape[1], 1e-5, **launch)
        ref = torch.nn.functional.layer_norm(x, (768,), w, b, 1e-5)
    else:
        if name == "matmul_tma":
            # Tensor descriptors need a global scratch buffer for the TMA descriptors.
            triton.set_allocator(lambda size, align, stream: torch.empty(size, device=dev, dtype=torch.int8))
        a = torch.randn(M_MM, K_MM, device=dev, generator=g).half()
        b = torch.randn(K_MM, N_MM, device=dev, generator=g).half()
        o = torch.empty(M_MM, N_MM, device=dev, dtype=torch.float16)
        ck = fn[grid](a, b, o, M_MM, N_MM, K_MM, **launch)
        ref = (a.float() @ b.float()).half()
        tol = {"atol": 5e-2, "rtol": 1e-2}
    torch.cuda.synchronize()
    err = (o.float() - ref.float()).abs().max().item()
    ok = bool(torch.allclose(o.float(), ref.float(), **tol))
    return ck, {"ok": ok, "max_abs_err": err, **tol}


def provenance(dry_run: bool) -> dict:
    info = {
        "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "command": " ".join([Path(sys.executable).name, *sys.argv]),
        "python": platform.python_version(),
        "triton": triton.__version__,
    }
    if dry_run:
        return info
    import torch

    smi = subprocess.run(
        ["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
        capture_output=True,
        text=True,
        check=False,
    )
    info.update(
        torch=torch.__version__,
        gpu=torch.cuda.get_device_name(),
        driver=smi.stdout.strip().splitlines()[0] if smi.returncode == 0 else None,
    )
    return info


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--dry-run", action="store_true", help="compile offline only; no GPU/torch")
    ap.add_argument("--only", nargs="*", help="subset of kernel names")
    args = ap.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    record = {"provenance": provenance(args.dry_run), "kernels": {}}
    failed = []
    for name, spec in SPECS.items():
        if args.only and name not in args.only:
            continue
        entry = {
            "entry": spec["fn"].__name__,
            "problem": spec["problem"],
            "num_warps": spec["num_warps"],
            "num_stages": spec["num_stages"],
            "grid": spec["grid"],
            "constexprs": spec["const"],
            "files": {},
        }
        try:
            if args.dry_run:
                ck = compile_offline(spec, 90)
            else:
                ck, entry["check"] = run_on_gpu(name, spec)
                entry.update(n_regs=ck.n_regs, n_spills=ck.n_spills)
                # Shows that the offline specialisation (used for sm_89) mirrors the JIT's.
                entry["offline_sm90_matches_jit"] = compile_offline(spec, 90).asm["ptx"] == ck.asm["ptx"]
                if not entry["check"]["ok"]:
                    failed.append(name)
            entry["shared"] = ck.metadata.shared
            ptx = ck.asm["ptx"]
            arch = re.search(r"^\.target\s+(\w+)", ptx, re.MULTILINE).group(1)  # sm_90a on an H200
            fname = f"triton_{name}.{arch}.ptx"
            (args.out / fname).write_text(ptx)
            entry["files"][arch] = fname
            if spec["sm89"]:
                ck89 = compile_offline(spec, 89)
                fname = f"triton_{name}.sm_89.ptx"
                (args.out / fname).write_text(ck89.asm["ptx"])
                entry["files"]["sm_89"] = fname
                entry["shared_sm_89"] = ck89.metadata.shared
        except Exception as exc:  # noqa: BLE001 -- keep going: one broken kernel must not cost the others
            failed.append(name)
            entry["error"] = f"{type(exc).__name__}: {exc}"
        print(name, json.dumps({k: v for k, v in entry.items() if k != "constexprs"}))
        record["kernels"][name] = entry
    (args.out / "triton_corpus.json").write_text(json.dumps(record, indent=1) + "\n")
    print("failed:", failed or "none")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

"""A workload that launches Triton kernels in every way user code does (run under `chronos capture` by the
GPU test in test_capture_styles.py, and by hand on a GPU: `python tests/triton/launch_styles.py`).

Each style is a distinct kernel name, so the capture's specs say which styles were reached.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl


@triton.jit
def scale_opts(x, out, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(out + offs, tl.load(x + offs, mask=m) * 2.0, mask=m)


@triton.autotune(configs=[triton.Config({"BLOCK": 256}, num_warps=4),
                          triton.Config({"BLOCK": 1024}, num_warps=8)], key=["n"], reset_to_zero=["acc"])
@triton.jit
def rowsum_autotuned(x, acc, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.atomic_add(acc + offs % 8, tl.load(x + offs, mask=m, other=0.0), mask=m)


@triton.heuristics({"BLOCK": lambda a: triton.next_power_of_2(min(a["n"], 1024))})
@triton.jit
def shift_heuristic(x, out, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(out + offs, tl.load(x + offs, mask=m) + 1.0, mask=m)


@triton.jit
def square_fwd(x, out, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    v = tl.load(x + offs, mask=m)
    tl.store(out + offs, v * v, mask=m)


@triton.jit
def square_bwd(x, g, dx, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(dx + offs, 2.0 * tl.load(x + offs, mask=m) * tl.load(g + offs, mask=m), mask=m)


class Square(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        out = torch.empty_like(x)
        n = x.numel()
        square_fwd[(triton.cdiv(n, 512),)](x, out, n, BLOCK=512, num_warps=2)
        ctx.save_for_backward(x)
        return out

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        dx = torch.empty_like(x)
        n = x.numel()
        square_bwd[(triton.cdiv(n, 512),)](x, g.contiguous(), dx, n, BLOCK=512, num_stages=1)
        return dx


@triton.jit
def negate_op_kernel(x, out, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(out + offs, -tl.load(x + offs, mask=m), mask=m)


@torch.library.custom_op("chronos_styles::negate", mutates_args=())
def negate(x: torch.Tensor) -> torch.Tensor:
    out = torch.empty_like(x)
    n = x.numel()
    negate_op_kernel[(triton.cdiv(n, 256),)](x, out, n, BLOCK=256, num_warps=4, maxnreg=128)
    return out


@negate.register_fake
def _(x):
    return torch.empty_like(x)


@triton.jit
def axpy_aliased(x, bias, out, pre, n, HAS_BIAS: tl.constexpr, SAVE_PRE: tl.constexpr, BLOCK: tl.constexpr):
    """attorch's linear launch: an absent bias is passed as the input, an unkept pre-activation as the
    output (one tensor, two parameters)."""
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    v = tl.load(x + offs, mask=m) * 3.0
    if HAS_BIAS:
        v += tl.load(bias + offs, mask=m)
    if SAVE_PRE:
        tl.store(pre + offs, v, mask=m)
    tl.store(out + offs, v, mask=m)


@triton.jit
def with_empty_arg(x, blocks, out, n, HAS_BLOCKS: tl.constexpr, BLOCK: tl.constexpr):
    """FlexAttention's block mask without full blocks: an empty tensor the kernel never reads."""
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    v = tl.load(x + offs, mask=m)
    if HAS_BLOCKS:
        v += tl.load(blocks + offs % 4)
    tl.store(out + offs, v - 1.0, mask=m)


def _inductor_templates() -> None:
    """Inductor's Triton templates: an mm (max-autotune, Triton backend) and FlexAttention."""
    from torch._inductor import config
    from torch.nn.attention.flex_attention import create_block_mask, flex_attention

    with config.patch(max_autotune_gemm_backends="TRITON"):
        a = torch.randn(512, 512, device="cuda", dtype=torch.float16)
        torch.compile(lambda p, q: p @ q, mode="max-autotune-no-cudagraphs")(a, a)
    q = torch.randn(1, 2, 256, 64, device="cuda", dtype=torch.float16)
    mask = create_block_mask(lambda b, h, qi, ki: qi >= ki, 1, 1, 256, 256, device="cuda")
    torch.compile(flex_attention)(q, q, q, block_mask=mask)


def main() -> None:
    n = 1 << 16
    x = torch.randn(n, device="cuda")
    out = torch.empty_like(x)
    for nw in (1, 8):  # launch options in the launch, as hand-written code passes them
        scale_opts[(triton.cdiv(n, 1024),)](x, out, n, BLOCK=1024, num_warps=nw, num_stages=2)
    acc = torch.zeros(8, device="cuda")
    for _ in range(2):
        rowsum_autotuned[lambda meta: (triton.cdiv(n, meta["BLOCK"]),)](x, acc, n)
    shift_heuristic[(triton.cdiv(n, 1024),)](x, out, n)
    xs = x.clone().requires_grad_()
    Square.apply(xs).sum().backward()
    negate(x)
    grid = (triton.cdiv(n, 1024),)
    axpy_aliased[grid](x, x, out, out, n, HAS_BIAS=False, SAVE_PRE=False, BLOCK=1024)
    with_empty_arg[grid](x, torch.empty(0, device="cuda"), out, n, HAS_BLOCKS=False, BLOCK=1024)
    _inductor_templates()
    torch.compile(lambda a: (a.sin() * 2).sum(dim=-1))(x.view(256, 256))  # Inductor: pointwise + reduction
    torch.cuda.synchronize()
    print("launch styles: done")


if __name__ == "__main__":
    main()

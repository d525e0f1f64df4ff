# A hand-written Triton kernel with what a library's kernels carry: a stride (launched as 1, so Triton
# specialises it away), an optional pointer (launched as None) and a block constexpr; for the tests of
# chronos.triton.jit_source.
import triton
import triton.language as tl


@triton.jit
def scaled_add_kernel(x_pointer, y_pointer, bias_pointer, out_pointer, size, x_stride, scale,
                      HAS_BIAS: tl.constexpr, BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(axis=0)
    offset = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offset < size
    x = tl.load(x_pointer + offset * x_stride, mask=mask)
    y = tl.load(y_pointer + offset, mask=mask)
    out = x * scale + y
    if HAS_BIAS:
        out += tl.load(bias_pointer + offset, mask=mask)
    tl.store(out_pointer + offset, out, mask=mask)

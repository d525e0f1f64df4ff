# A template module laid out as Inductor generates one (torch 2.11: its runtime's template decorator over a
# JIT function, a FixedGrid launch, a row block folded into the source and declared again in a helper, as
# FlexAttention's are), written for the tests of chronos.triton.deploy_rows.
import triton
import triton.language as tl
from torch._inductor.runtime import triton_heuristics
from torch._inductor.runtime.hints import DeviceProperties

H200 = DeviceProperties(type="cuda", index=0, multi_processor_count=132, cc=90, major=9,
                        regs_per_multiprocessor=65536, max_threads_per_multi_processor=2048, warp_size=32)


@triton_heuristics.template(
    num_stages=3,
    num_warps=8,
    triton_meta={"signature": {"arg_Q": "*fp32", "out_ptr0": "*fp32", "ks0": "i32"},
                 "device": H200, "constants": {}, "enable_fp_fusion": True,
                 "configs": [{(0,): [["tt.divisibility", 16]], (1,): [["tt.divisibility", 16]]}]},
    inductor_meta={"kernel_name": "triton_tem_fused_rows_0", "grid_type": "FixedGrid",
                   "fixed_grid": ["_grid_0", "_grid_1", "_grid_2"],
                   "extra_launcher_args": ["_grid_0", "_grid_1", "_grid_2"]},
)
@triton.jit
def triton_tem_fused_rows_0(arg_Q, out_ptr0, ks0):
    BLOCK_M : tl.constexpr = 128
    Q_LEN = ks0
    q_start = tl.program_id(0)
    offs_m = q_start * BLOCK_M + tl.arange(0, BLOCK_M)
    double_rows(arg_Q, out_ptr0, offs_m, Q_LEN)


@triton.jit
def double_rows(arg_Q, out_ptr0, offs_m, Q_LEN):
    BLOCK_M : tl.constexpr = 128  # noqa: F841 - declared again, unused, as Inductor's helpers do
    mask = offs_m < Q_LEN
    tl.store(out_ptr0 + offs_m, 2.0 * tl.load(arg_Q + offs_m, mask), mask)

# A kernel module laid out as Inductor generates one (torch 2.11: its runtime's decorator over a JIT
# function, the metadata as literals), written for the tests of chronos.triton.inductor_source.
import triton
import triton.language as tl
from torch._inductor.runtime import triton_heuristics
from torch._inductor.runtime.hints import DeviceProperties

H200 = DeviceProperties(type="cuda", index=0, multi_processor_count=132, cc=90, major=9,
                        regs_per_multiprocessor=65536, max_threads_per_multi_processor=2048, warp_size=32)


@triton_heuristics.pointwise(
    size_hints={"x": 65536},
    filename=__file__,
    triton_meta={"signature": {"in_ptr0": "*fp32", "out_ptr0": "*fp32", "xnumel": "i32",
                               "XBLOCK": "constexpr"},
                 "device": H200, "constants": {}, "enable_fp_fusion": True,
                 "configs": [{(0,): [["tt.divisibility", 16]], (1,): [["tt.divisibility", 16]],
                              (2,): [["tt.divisibility", 16]]}]},
    inductor_meta={"grid_type": "Grid1D", "autotune_hints": set(), "kernel_name": "triton_poi_fused_mul_0",
                   "mutated_arg_names": [], "no_x_dim": False, "num_load": 1, "num_store": 1,
                   "num_reduction": 0, "assert_indirect_indexing": True, "autotune_pointwise": True,
                   "max_autotune": False, "max_autotune_pointwise": False, "spill_threshold": 16},
    min_elem_per_thread=0,
)
@triton.jit
def triton_poi_fused_mul_0(in_ptr0, out_ptr0, xnumel, XBLOCK: tl.constexpr):
    xoffset = tl.program_id(0) * XBLOCK
    xindex = xoffset + tl.arange(0, XBLOCK)[:]
    xmask = xindex < xnumel
    x0 = xindex
    tmp0 = tl.load(in_ptr0 + (x0), xmask)
    tmp1 = 2.0
    tmp2 = tmp0 * tmp1
    tl.store(out_ptr0 + (x0), tmp2, xmask)

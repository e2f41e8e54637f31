"""Every modelling assumption of the core, in one place.

The guides publish formulas (FLOPs, bytes, intensity, tiles, waves) and hardware figures
(SMs, clocks, bandwidth), but a predicted *time* needs a few numbers no guide prints. Each is
named here, with what it stands for and how it was chosen, so a reader can see exactly where
the model stops being NVIDIA's arithmetic and starts being our estimate. Change one here and
every widget, notebook and command follows.
"""

from __future__ import annotations

__all__ = [
    "CACHE_STATES",
    "CUDA_GRAPH_LAUNCH_S",
    "DEFAULT_CACHE",
    "DEFAULT_CONTEXT",
    "HOST_LAUNCH_OVERHEAD_S",
    "L2_USABLE_FRACTION",
    "LATENCY_SPLIT_K_DEPTH",
    "LATENCY_TILE",
    "MIN_KERNEL_TIME_S",
    "MISALIGNED_EFFICIENCY",
    "OVERLAP_EXPONENT",
    "QUANT_BLOCKS_PER_SM",
    "QUANT_BLOCK_WAVE_S",
    "QUANT_KERNEL_FIXED_SHARE",
    "QUANT_SCHEMES",
    "SIMT_TILE_REUSE_R0",
    "SPLIT_K_ACCUMULATOR_BYTES",
    "SPLIT_K_FACTORS",
    "THIN_OUTPUT_MAX",
    "THIN_OUTPUT_PAD",
    "THIN_TILE",
    "TILE_REUSE_R0",
    "TIMING_CONTEXTS",
    "TIMING_CONTEXT_DESCRIPTIONS",
]

# The calibrated constants (achievable fractions of peak and bandwidth, the fixed cost per
# kernel, misalignment penalties per architecture) are data, not code: see
# data/achievable.csv and core/calibration.py. What stays here are the choices of form.

# The default fixed cost of one kernel (launch, ramp-up of the first wave, drain of the
# last), added to its work. The memory-limited-layers guide sees durations stop shrinking
# for small tensors (3.1 and 4): below about bandwidth x this time a kernel cannot saturate
# bandwidth, and it is reported 'latency'-limited. The per-architecture values the model
# uses are in data/achievable.csv (kernel_overhead_us); this is their default.
MIN_KERNEL_TIME_S = 5e-6

# Timing context: a GEMM's time depends on how it is timed, not only on the GPU. The model
# says which of three contexts every predicted time is for, and each has its own fixed cost
# per kernel (data/achievable.csv; core.calibration.Achievable.fixed_cost_s):
# - 'kernel': one kernel timed on the device alone (CUPTI / Nsight kernel duration, or CUDA
#   events recorded on a stream that is already busy): the kernel's work plus its device-side
#   fixed cost (kernel_overhead_us: block scheduling and ramp-up of the first wave, drain of
#   the last). XLA's matmul table is timed so (median CUPTI kernel time).
# - 'back-to-back': the per-kernel time of kernels queued one after another on a stream or
#   replayed in a CUDA graph: the next kernel's launch and ramp-up overlap the previous one's
#   drain, so the fixed cost is smaller (back_to_back_overhead_us). aiconfigurator's tables
#   (CUDA-graph replays / kernel count) and DeepBench (400 calls / wall clock) are timed so.
# - 'eager': one framework call timed from the host (CUDA events around an eager PyTorch
#   call on an idle GPU, or a host clock with a synchronize): the host's launch overhead
#   (launch_overhead_us: framework dispatch, library heuristics, the driver's launch) comes
#   before the kernel starts, and is added to the kernel's time. NeuSight is timed so.
# An eager time is never shorter than the kernel time, and the kernel time never shorter
# than the back-to-back one (tests/core/test_gemm_context.py).
TIMING_CONTEXTS = ("kernel", "back-to-back", "eager")
TIMING_CONTEXT_DESCRIPTIONS = {
    "kernel": "an isolated kernel timed on the device (CUPTI kernel time)",
    "back-to-back": "back-to-back kernels (a stream or a CUDA graph), time per kernel",
    "eager": "an eager call timed from the host (CUDA events around one call, launch included)",
}
# The kit's own timer (live/timing.py) overwrites an L2-sized buffer before each timed call,
# then records the start event, the GEMM and the end event: the flush kernel keeps the GPU
# busy while the host launches the GEMM, so the launch is hidden and the events bracket the
# kernel on the device. That is the 'kernel' context, and the default.
DEFAULT_CONTEXT = "kernel"

# Cache state of the operands when the GEMM starts. 'cold': they come from DRAM (the kit's
# timer flushes L2 before every timed call, and a GEMM inside a large model rarely finds its
# operands in L2). 'warm': the same operands were used just before (a benchmark that repeats
# one call on the same tensors, as every published table the kit ships does), so a working
# set that fits in L2 is read from L2 (core.gemm, the L2 term).
CACHE_STATES = ("cold", "warm")
DEFAULT_CACHE = "cold"

# The L2 term: with a warm cache, a GEMM whose whole working set (A, B and C, the bytes the
# model counts) fits in L2 reads and writes it at the L2 bandwidth (data/gpus.csv,
# l2_bandwidth_gb_per_s) instead of the DRAM bandwidth, at the same achievable fraction.
# Not all of L2 holds a working set: lines are hashed over slices, and on GA100 and GH100 the
# L2 is two partitions whose far half is slower to reach (A100 and H100 whitepapers). The
# usable share, one constant for every GPU, was chosen by benchmarks/fit_calibration.py
# from 0, 0.125, 0.25, 0.375, 0.5, 0.75 and 1 on the shipped traces: 0.125 (0 and 0.25 fit
# slightly worse), so only a working set far smaller than L2 stays resident between calls
# (a benchmark's other buffers and the next copy's weights share the cache).
L2_USABLE_FRACTION = 0.125

# An FP8 linear layer as frameworks run it quantises its bf16 activation first, in kernels of
# its own; the recipe sets how (scheme: kernels, passes over the bf16 input, elements per
# FP32 scale). Per-tensor dynamic scaling needs the tensor's absolute maximum before any
# element can be scaled: one kernel reduces, a second reads again and writes FP8 (vLLM
# scaled_fp8_quant: a segmented max reduction, then the scaling kernel). Per-row
# (per-token) scaling does both in one pass per row (vLLM
# dynamic_per_token_scaled_fp8_quant), and block scaling (1 x 128 groups along K, as the
# DeepSeek-V3 technical report's activation recipe) likewise, with one scale per group.
# Each kernel pays a share of the context's fixed cost (QUANT_KERNEL_FIXED_SHARE: an
# elementwise kernel has no tile pipeline to fill or drain, so it costs less than a GEMM's
# fixed cost; fitted by benchmarks/fit_calibration.py to aiconfigurator's FP8 rows, whose
# smallest layer took 4.6-4.7 us against 2.4-2.5 us in bf16, from 0, 0.1, 0.2, 0.3, 0.5 and 1,
# together with the block waves below), and the bytes move at the achievable bandwidth.
QUANT_KERNEL_FIXED_SHARE = 0.2
# The row-wise quantisation kernels launch one thread block per row of the activation (vLLM's
# scaled_fp8_quant and its max reduction: a grid of one 1024-thread block per token), and an
# SM holds 2048 threads, so M rows run in ceil(M / (2 x SMs)) waves of blocks, each as long as
# one block's reduce-and-scale, whatever K is. aiconfigurator's FP8 layers show it: at N = K =
# 32 the H100's time grows by about 7.4 ns per row of M (122 us at M = 16384) where bf16 stays
# at 2.5-3.3 us. QUANT_BLOCK_WAVE_S, the time of one wave of such blocks in one kernel, was
# fitted to those rows by benchmarks/fit_calibration.py: 1.0 us, from 0.2 to 1.5 us (block
# scaling is charged the same).
QUANT_BLOCKS_PER_SM = 2
QUANT_BLOCK_WAVE_S = 1.0e-6
QUANT_SCHEMES: dict[str, tuple[int, int, int]] = {
    "none": (0, 0, 0),
    "per-tensor": (2, 2, 0),  # 0: one scale for the whole tensor
    "per-row": (1, 1, -1),  # -1: one scale per row of K elements
    "block": (1, 1, 128),
}

# Math and data movement overlap inside a kernel, but not perfectly: the first tiles' loads
# come before any math and the last tiles' stores after it. The model combines the two
# times as (math^p + memory^p)^(1/p): p = infinity would be perfect overlap (the plain
# roofline's max), p = 1 none at all. Near the ridge, where the two are equal, real GEMMs
# run markedly slower than max() says (H100 bf16 4096 x 4096 x 256: 21.6 us measured,
# 9-11 us each for math and memory at the achievable rates). p = 3 was the least-error
# choice of 1.5, 2, 3, 4 and infinity over the shipped traces (benchmarks/fit_calibration.py),
# and is one constant for every GPU. At the ridge it makes a kernel 26 % slower than max().
OVERLAP_EXPONENT = 3.0

# With cuBLAS >= 11.0 a Tensor Core GEMM whose M, N or K is not a multiple of 16 bytes still
# runs on Tensor Cores but with narrower loads. 0.5 is read approximately off the slides'
# cuBLAS 11.0 K sweep (M = N = 1024, V100, FP16), where K not divisible by 8 takes about
# twice as long as K divisible by 8. It is the default; the penalty differs by architecture
# (data/achievable.csv, misaligned_efficiency: Hopper loses less).
MISALIGNED_EFFICIENCY = 0.5
# An M or N smaller than the 16-byte multiple (N = 1 for a batch-1 linear layer) is not
# counted as misaligned: libraries run such matrix-vector shapes with kernels of their own,
# and the model leaves their cost to tile quantization and memory traffic.

# Thin outputs: when M or N is at most THIN_OUTPUT_MAX elements (a batch-1 or small-batch
# linear layer, a matrix-vector product), libraries run matrix-vector style kernels that
# stream the large operand instead of tiling the output with 64-wide tiles. The model offers
# such a kernel beside the tiles: it pads the thin dimension to THIN_OUTPUT_PAD (the
# narrowest MMA / vector width), covers the long dimension in THIN_TILE rows, spreads its
# work over every SM (no wave tail: these kernels split K to balance), and does not pay the
# tile-shape penalty (its speed is set by streaming, not by operand reuse). Without it the
# smallest tile plus split-K made math set the time of FP32 thin GEMMs, up to 2.2x too slow
# against DeepBench's V100 measurements.
THIN_OUTPUT_MAX = 32
THIN_OUTPUT_PAD = 8
THIN_TILE = 128

# Larger tiles run more efficiently (slides, "Optimality"). A tm x tn tile does tm*tn FMAs
# per step of K on tm + tn loaded elements: its operand reuse is r = tm*tn / (tm + tn). The
# model lets a tile compute a fraction r / (r + R0) of the time, relative to 256x128. R0 = 16
# puts 128x128 at ~95 % and 64x64 at ~79 % of a 256x128 tile's rate.
TILE_REUSE_R0 = 16.0
# SIMT (CUDA-core) kernels feed every FFMA from registers, so a small tile starves them far
# more than it starves a Tensor Core kernel: the same form with a larger R0. Chosen so the
# model picks cuBLAS's tiles as often as it can (core.tiles.SIMT_TILE_SHAPES; tile agreement
# reported by benchmarks/model_error.py), from 16, 32, 64, 128 and 256.
SIMT_TILE_REUSE_R0 = 64.0

# "Enough parallelism" (step 3 of the guide's "How to find a problem?") is judged with the
# smallest common tile and split-K: a GEMM offers ceil(M/64) x ceil(N/64) x batch x
# max(1, K // 256) independent thread blocks; fewer than the SM count leaves SMs idle
# whatever the library does, and the limiter is 'latency'.
LATENCY_TILE = 64
LATENCY_SPLIT_K_DEPTH = 256

# Split-K: when the output has too few tiles to fill the GPU, libraries split K into S
# slices (each at least LATENCY_SPLIT_K_DEPTH deep), run S x more thread blocks, and sum the
# partial products, which are written and read back in FP32.
SPLIT_K_FACTORS = (2, 4, 8, 16, 32, 64)
SPLIT_K_ACCUMULATOR_BYTES = 4
# cuBLAS sums the slices in a second kernel (splitKreduce_kernel: NeuSight's profiles of
# split-K calls show it beside the GEMM), which pays a kernel's fixed cost of its own; so does
# a thin-output kernel that must split K to occupy every SM. aiconfigurator's H100 tables
# show it: 17 x 32 x 5120 in bf16 took 6.1 us back to back, twice a one-kernel GEMM's 3.0 us.

# -- timing context: the host's side of a kernel ------------------------------------------
# A predicted time is one of three things (core.workload.TIMINGS): the kernels' own
# durations as CUPTI reports them ('kernel': work plus the device-side fixed cost of
# data/achievable.csv, kernel_overhead_us); a chain of kernels captured in a CUDA graph
# ('back-to-back', as a CUDA graph replays them: one launch for the whole chain); or eager launches
# from Python ('eager': the host issues one kernel at a time and the GPU waits whenever a
# kernel finishes before the host has issued the next). The host's cost per kernel is a
# different constant from the device's fixed cost: a CUDA graph removes it, not the other.
#
# HOST_LAUNCH_OVERHEAD_S: host time from one eager framework call to its kernel's launch
# (PyTorch's dispatcher, a library's heuristics, the CUDA driver's launch call): the
# interval at which eager code can issue kernels, and what a CUDA graph removes (NVIDIA
# developer blog, "Getting Started with CUDA Graphs", 2019). One constant with one meaning,
# used by the GEMM model's 'eager' context, the launch-bound lesson (core.fusion) and eager
# training steps (core.workload): it is the 'launch_overhead_us' of data/achievable.csv,
# fitted to eager PyTorch calls timed with CUDA events on five hosts (NeuSight's A100 PCIe
# 40GB and 80GB, H100, L4 and T4 hosts: 14.5 to 30.5 us); its default row, the median of the
# five, 20.5 us, is the value here (tests/core/test_workload.py checks the two agree). Where
# a GPU's own host was fitted, core.calibration.achievable gives that host's value.
HOST_LAUNCH_OVERHEAD_S = 20.5e-6
# CUDA_GRAPH_LAUNCH_S: host time to launch a whole captured graph (one cudaGraphLaunch),
# paid once per graph: a driver call with no framework dispatch or library heuristics
# before it, so less than an eager call's HOST_LAUNCH_OVERHEAD_S; 10 us is the kit's round
# assumption, not a fit. One constant for that one cost: core.workload's 'back-to-back'
# steps, core.serving's CUDA-graph decode steps and core.fusion's graph time (which keeps
# it below an eager launch the caller gives for another host) all use it.
CUDA_GRAPH_LAUNCH_S = 10e-6

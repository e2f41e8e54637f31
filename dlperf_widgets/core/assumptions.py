"""Every modelling assumption of the core, in one place.

The guides publish formulas (FLOPs, bytes, intensity, tiles, waves) and hardware figures
(SMs, clocks, bandwidth), but a predicted *time* needs a few numbers no guide prints. Each is
named here, with what it stands for and how it was chosen, so a reader can see exactly where
the model stops being NVIDIA's arithmetic and starts being our estimate. Change one here and
every widget, notebook and command follows.
"""

from __future__ import annotations

__all__ = [
    "CUDA_GRAPH_LAUNCH_S",
    "HOST_LAUNCH_OVERHEAD_S",
    "LATENCY_SPLIT_K_DEPTH",
    "LATENCY_TILE",
    "MIN_KERNEL_TIME_S",
    "MISALIGNED_EFFICIENCY",
    "OVERLAP_EXPONENT",
    "SPLIT_K_ACCUMULATOR_BYTES",
    "SPLIT_K_FACTORS",
    "THIN_OUTPUT_MAX",
    "THIN_OUTPUT_PAD",
    "THIN_TILE",
    "TILE_REUSE_R0",
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

# -- timing context: the host's side of a kernel ------------------------------------------
# A predicted time is one of three things (core.workload.TIMINGS): the kernels' own
# durations as CUPTI reports them ('kernel': work plus the device-side fixed cost of
# data/achievable.csv, kernel_overhead_us); a chain of kernels captured in a CUDA graph
# ('back-to-back', as a CUDA graph replays them: one launch for the whole chain); or eager launches
# from Python ('eager': the host issues one kernel at a time and the GPU waits whenever a
# kernel finishes before the host has issued the next). The host's cost per kernel is a
# different constant from the device's fixed cost: a CUDA graph removes it, not the other.
#
# HOST_LAUNCH_OVERHEAD_S: host time to issue one kernel from PyTorch eager code: the CUDA
# runtime's launch call costs microseconds of CPU time per kernel (NVIDIA developer blog,
# "Getting Started with CUDA Graphs", 2019, which removes it by capturing the chain), and
# PyTorch's dispatcher adds its own per-op cost before it. 10 us for the two together is
# the kit's round assumption, not a fit: it sets only the 'eager' context.
HOST_LAUNCH_OVERHEAD_S = 10e-6
# CUDA_GRAPH_LAUNCH_S: host time to launch a whole captured graph (one cudaGraphLaunch):
# paid once per graph, so it is taken as one kernel launch's cost.
CUDA_GRAPH_LAUNCH_S = 10e-6

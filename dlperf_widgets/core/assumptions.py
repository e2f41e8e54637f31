"""Every modelling assumption of the core, in one place.

The guides publish formulas (FLOPs, bytes, intensity, tiles, waves) and hardware figures
(SMs, clocks, bandwidth), but a predicted *time* needs a few numbers no guide prints. Each is
named here, with what it stands for and how it was chosen, so a reader can see exactly where
the model stops being NVIDIA's arithmetic and starts being our estimate. Change one here and
every widget, notebook and command follows.
"""

from __future__ import annotations

__all__ = [
    "LATENCY_SPLIT_K_DEPTH",
    "LATENCY_TILE",
    "MIN_KERNEL_TIME_S",
    "MISALIGNED_EFFICIENCY",
    "SPLIT_K_ACCUMULATOR_BYTES",
    "SPLIT_K_FACTORS",
    "TILE_REUSE_R0",
]

# Shortest time any kernel takes: launch and ramp-up. Below it a kernel cannot saturate
# bandwidth or math (the memory-limited-layers guide sees durations stop shrinking for small
# tensors, 3.1 and 4); such an operation is reported 'latency'-limited. Chosen at the order
# of a kernel launch; equivalently bandwidth saturates from bandwidth x 5 us bytes on
# (about 4.5 MB on V100, 10 MB on A100-80GB).
MIN_KERNEL_TIME_S = 5e-6

# With cuBLAS >= 11.0 a Tensor Core GEMM whose M, N or K is not a multiple of 16 bytes still
# runs on Tensor Cores but with narrower loads. 0.5 is read approximately off the slides'
# cuBLAS 11.0 K sweep (M = N = 1024, V100, FP16), where K not divisible by 8 takes about
# twice as long as K divisible by 8.
MISALIGNED_EFFICIENCY = 0.5
# An M or N smaller than the 16-byte multiple (N = 1 for a batch-1 linear layer) is not
# counted as misaligned: libraries run such matrix-vector shapes with kernels of their own,
# and the model leaves their cost to tile quantization and memory traffic.

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

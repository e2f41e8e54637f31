"""Guards live/tensorcores.py: kernel names from cuBLAS, cuDNN, CUTLASS and PyTorch are
classified as Tensor Core, CUDA-core or non-matrix kernels; on the CPU the report lists the
operators that ran and says Tensor Cores do not apply."""

from __future__ import annotations

import pytest

from dlperf_widgets.live.tensorcores import classify_kernel, tensor_core_report

# Kernel names as they appear in profiles on each architecture.
TENSOR_CORE_KERNELS = [
    "volta_h884gemm_64x64_ldg8_nn",  # Volta, fp16 (8x8x4 MMA)
    "volta_fp16_s884cudnn_fp16_256x128_ldg8_splitK_relu_f2f_exp_small_nhwc2nchw_tn_v1",
    "turing_fp16_s1688gemm_fp16_128x128_ldg8_f2f_nn",  # Turing (16x8x8)
    "ampere_fp16_s16816gemm_fp16_128x128_ldg8_f2f_stages_32x5_nn",  # Ampere (16x8x16)
    "ampere_bf16_s16816gemm_bf16_256x128_ldg8_f2f_stages_64x3_tn",
    "sm80_xmma_gemm_f16f16_f16f32_f32_nn_n_tilesize128x128x32_stage4_warpsize2x2x1_tensor16x8x16_kernel",
    "sm80_xmma_fprop_implicit_gemm_tf32f32_tf32f32_f32_nhwckrsc_nhwc_tilesize128x128x16",
    "void cutlass::Kernel<cutlass_80_tensorop_f16_s16816gemm_relu_f16_256x128_32x3_nn_align8>(Params)",
    "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1_execute_segment_k_off_kernel__5x_cublas",
    "nvjet_hsh_128x256_64x4_2x1_v_bz_coopA_NNT",  # cuBLAS on Hopper
    "void pytorch_flash::flash_fwd_kernel<Flash_fwd_kernel_traits<128, 128, 32, 4, false, false, cutlass::bfloat16_t>>",
]
CUDA_CORE_KERNELS = [
    "volta_sgemm_128x64_nn",
    "ampere_sgemm_128x64_nn",
    "cutlass_80_simt_sgemm_128x64_8x5_nn_align1",
    "void gemv2T_kernel_val<int, int, float, float, float, float, 128, 16, 4, 4, false, false>",
    "implicit_convolve_sgemm",
    "volta_scudnn_128x64_relu_interior_nn_v1",
]
OTHER_KERNELS = [
    "void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>, at::detail::Array<char*, 1> >",
    "void nchwToNhwcKernel<__half, __half, float, true, false>(int, int, int, int, __half const*, __half*, float, float)",
    "void at::native::(anonymous namespace)::cunn_SoftMaxForward<4, float, float, float>",
    "void cudnn::bn_fw_tr_1C11_kernel_NCHW<float, float, int, 512, true, 1>",
]


@pytest.mark.parametrize("name", TENSOR_CORE_KERNELS)
def test_tensor_core_kernels(name):
    """Names with HMMA shapes, xmma, tensorop, warp-group MMA, nvjet or flash: Tensor Cores."""
    verdict, reason = classify_kernel(name)
    assert verdict == "tensor_core", reason


@pytest.mark.parametrize("name", CUDA_CORE_KERNELS)
def test_cuda_core_matrix_kernels(name):
    """sgemm without an MMA shape, simt, gemv and scudnn are matrix kernels on CUDA cores."""
    assert classify_kernel(name)[0] == "cuda_core"


@pytest.mark.parametrize("name", OTHER_KERNELS)
def test_non_matrix_kernels(name):
    """Element-wise, layout, softmax and batch-norm kernels are not matrix kernels."""
    verdict, reason = classify_kernel(name)
    assert verdict == "other" and "Tensor Cores do not apply" in reason


def test_strict_fp32_xmma_is_not_claimed():
    """An xmma kernel on plain fp32 data (no TF32) is not claimed either way."""
    name = "sm80_xmma_fprop_implicit_gemm_f32f32_f32f32_f32_nchwkcrs_nchw_tilesize128x128x8"
    assert classify_kernel(name)[0] == "unknown"


def test_cpu_report_lists_operators():
    """On the CPU the profiler sees aten::mm for a matmul; the answer is 'does not apply'."""
    pytest.importorskip("torch")
    r = tensor_core_report(m=32, n=32, k=32, dtype="fp32", device="cpu", iterations=2, warmup=1)
    names = {kern.name for kern in r.kernels}
    assert "aten::mm" in names
    mm = next(kern for kern in r.kernels if kern.name == "aten::mm")
    assert mm.calls == 2 and mm.verdict == "cpu"
    assert r.uses_tensor_cores is None and r.device == "cpu"
    assert "Tensor Cores are a GPU unit" in r.message
    assert "does not apply" in str(r)


def test_cpu_report_of_a_callable():
    """Any callable can be profiled; a ReLU shows aten::relu."""
    torch = pytest.importorskip("torch")
    x = torch.randn(64)
    r = tensor_core_report(
        lambda: torch.relu(x), device="cpu", iterations=3, warmup=0, label="relu"
    )
    assert r.label == "relu" and any(k.name == "aten::relu" and k.calls == 3 for k in r.kernels)


@pytest.mark.gpu
def test_gpu_fp16_gemm_uses_tensor_cores():
    """On a Volta-or-newer GPU a 2048^3 fp16 matmul launches a Tensor Core kernel."""
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available() or torch.cuda.get_device_capability()[0] < 7:
        pytest.skip("needs a CUDA GPU with Tensor Cores")
    r = tensor_core_report(m=2048, n=2048, k=2048, dtype="fp16", device="cuda")
    assert r.uses_tensor_cores is True, [k.name for k in r.kernels]

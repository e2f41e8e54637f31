#!/usr/bin/env python3
"""Turn published GEMM measurements into the kit's recorded-trace files.

    python tools/make_published_traces.py [CALIBRATION_CSV ...]

reads the calibration tables (default: ``gemm_measurements.csv`` and
``gemm_measurements_2.csv`` in ``../shared/calibration/`` beside the repository: one
measured GEMM per row with its source) and writes one trace file per source and GPU into
``dlperf_widgets/live/data/``, in the format of ``dlperf_widgets.live.traces`` with the full
provenance in ``#!`` lines. The measurements are copied as published; the shape is the one
the benchmark ran (DeepBench padded some fp16 shapes to multiples of 8: the published shape
is kept in ``params``). Every row names its timing context and cache state.

The second table is itself a uniform sample of its sources; to keep the package small the
larger groups are sampled again, uniformly, with a fixed seed (:data:`SAMPLE_SEED`), to at
most :data:`MAX_ROWS` rows per trace and dtype. Each trace's provenance says how many rows
it keeps of how many.
"""

from __future__ import annotations

import csv
import re
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from dlperf_widgets.core.dtypes import dtype as _dtype  # noqa: E402
from dlperf_widgets.core.gemm import gemm_bytes, gemm_flops, ideal_time_s  # noqa: E402
from dlperf_widgets.core.gpus import gpu as _gpu  # noqa: E402
from dlperf_widgets.live.traces import write_trace  # noqa: E402

CALIBRATION = next(
    (p / "shared" / "calibration" for p in ROOT.parents if (p / "shared" / "calibration").is_dir()),
    ROOT.parent / "shared" / "calibration",
)
DEFAULT_INPUTS = (CALIBRATION / "gemm_measurements.csv", CALIBRATION / "gemm_measurements_2.csv")
SAMPLE_SEED = 20261125
MAX_ROWS = 1500

_NEUSIGHT_PROVENANCE = {
    "kind": "published measurement (not recorded by this kit)",
    "repository": "sitar-lab/NeuSight",
    "commit": "6945927d",
    "file": "scripts/asplos/data/dataset/test/{bmm,linear}.csv and "
    "scripts/asplos/data/dataset/train/collect/{bmm,linear}/p2.1.0/<device>.csv",
    "licence": "MIT",
    "paper": "Lee, Phanishayee, Mahajan, Forecasting GPU Performance for Deep Learning "
    "Training and Inference, ASPLOS 2025",
    "torch": "2.1.0+cu121",
    "timer": "CUDA events around one eager PyTorch call; mean of the 5 fastest of 25 calls on "
    "the same tensors (host launch included)",
    "context": "eager",
    "cache": "warm",
    "library": "cuBLAS / CUTLASS SIMT FP32 kernels (TF32 off); params give the kernel cuBLAS "
    "chose, its grid and any other kernel of the call",
    "operations": "torch.bmm(A[B,M,N], B[B,N,K]) as batch B of M x K x N (suite bmm); "
    "nn.Linear(N -> K, bias=True) on x[B,M,N] as one (B*M) x K x N GEMM (suite linear)",
    "unknown": "clocks, power limits, drivers and hosts are not recorded (likely cloud instances)",
}
_AIC_PROVENANCE = {
    "kind": "published measurement (not recorded by this kit)",
    "repository": "ai-dynamo/aiconfigurator",
    "commit": "095f58a5",
    "licence": "Apache-2.0",
    "timer": "six copies of a vLLM 0.24.0 RowParallelLinear run back to back in one CUDA "
    "graph; CUDA events over six replays; time / 36 (collector/helper.py)",
    "context": "back-to-back",
    "library": "bf16: torch.nn.functional.linear (cuBLAS); fp8: W8A8, per-tensor weight "
    "scale, dynamic per-tensor activation scale, CUTLASS scaled_mm, bf16 output: each call "
    "first quantises the bf16 activation in separate kernels (params quantize=per-tensor)",
    "unknown": "clocks, driver, CUDA and cuBLAS versions and power limits are not recorded; "
    "the bf16 weights are uninitialised memory and the fp8 weights the constant 0.01, which "
    "draw less power than trained weights; cache is warm where the six copies' working set "
    "fits in the 50 MiB L2, else cold",
}

# One entry per published source: the trace it becomes, its suite name, and what is known
# (and not known) about how it was measured. Facts from the sources' own files.
SOURCES = {
    "openxla/xla": {
        "trace": "xla_h100-sxm",
        "suite": "xla_table",
        "repeats": 10,
        "provenance": {
            "kind": "published measurement (not recorded by this kit)",
            "gpu": "H100-SXM",
            "device_name": "NVIDIA H100 (XLA device key sm_90)",
            "repository": "openxla/xla",
            "commit": "e97611c4",
            "file": "xla/service/gpu/model/matmul_interpolator_data.h",
            "licence": "Apache-2.0",
            "timer": "median CUPTI kernel time over 10 runs (xla/tools/matmul_perf_table_gen.cc): "
            "kernel time only, no launch gap",
            "library": "XLA's GEMM emitter (cuBLAS / cuBLASLt or Triton, as XLA chose)",
            "unknown": "the H100 variant is not stated (bf16 rates above 756 TFLOP/s rule out "
            "PCIe, so SXM is assumed); driver, CUDA and clocks are not stated; a GEMM XLA "
            "splits into several kernels may be under-timed (the table's FP8 rows are left "
            "out for that reason: some exceed the dense FP8 peak)",
            "dtypes": "bf16 (bf16 x bf16 -> bf16); tf32 (f32 x f32 -> f32 at XLA's default "
            "precision, which runs TF32 Tensor Cores)",
        },
    },
    "baidu-research/DeepBench": {
        "trace": "deepbench_v100",
        "suite": "deepbench_train",
        "repeats": 400,
        "provenance": {
            "kind": "published measurement (not recorded by this kit)",
            "gpu": "V100-SXM2-16GB",
            "device_name": "Tesla V100-SXM2 in a DGX-1 (16 or 32 GB not stated)",
            "repository": "baidu-research/DeepBench",
            "commit": "da81ba7",
            "file": "results/train/DeepBench_NV_V100.xlsx (sheets 'Results FP32' and "
            "'FP16 ip, Mixed math')",
            "licence": "Apache-2.0",
            "cuda": "10.1.243",
            "timer": "cublasGemmEx, 400 back-to-back calls, wall clock / 400 (launch "
            "overhead included), truncated to whole microseconds",
            "library": "cuBLAS (CUDA 10.1): SIMT FP32 for fp32, Tensor Cores for fp16 inputs "
            "with mixed math",
            "unknown": "driver and clocks; beta != 0 (C is read as well as written); times "
            "are truncated to whole microseconds, so the shortest rows carry up to 1 us of "
            "rounding; fp16 shapes were padded to multiples of 8 by the benchmark (the shape "
            "that ran is in m, n, k; the published one in params)",
        },
    },
}


_NEUSIGHT_GPUS = {
    "A100-PCIe-80GB": "NVIDIA A100 80GB PCIe",
    "A100-SXM4-40GB": "NVIDIA A100-PCIE-40GB",  # filed so in the table; it is a PCIe card
    "H100-SXM": "NVIDIA H100 80GB HBM3",
    "L4": "NVIDIA L4",
    "T4": "Tesla T4",
}
_KIT_GPU = {"A100-SXM4-40GB": "A100-PCIe-40GB"}  # the NeuSight card, now in the database
for _table_gpu, _device in _NEUSIGHT_GPUS.items():
    _name = _KIT_GPU.get(_table_gpu, _table_gpu)
    SOURCES[f"sitar-lab/NeuSight/{_table_gpu}"] = {
        "trace": f"neusight_{_name.lower()}",
        "suite": None,
        "repeats": 25,
        "provenance": {**_NEUSIGHT_PROVENANCE, "gpu": _name, "device_name": _device},
    }
for _table_gpu, _dir in (("H100-SXM", "h100_sxm"), ("H200", "h200_sxm")):
    SOURCES[f"ai-dynamo/aiconfigurator/{_table_gpu}"] = {
        "trace": f"aiconfigurator_{_table_gpu.lower()}",
        "suite": "vllm_linear",
        "repeats": 36,
        "provenance": {
            **_AIC_PROVENANCE,
            "gpu": _table_gpu,
            "device_name": "NVIDIA H100 80GB HBM3" if _table_gpu == "H100-SXM" else "NVIDIA H200",
            "file": f"aic-core/src/aiconfigurator_core/systems/data/{_dir}/gemm/vllm/0.24.0/"
            "gemm_perf.parquet",
        },
    }
# How the first table's sources were timed (the second table's are in their provenance).
SOURCES["openxla/xla"]["provenance"] |= {"context": "kernel", "cache": "warm"}
SOURCES["baidu-research/DeepBench"]["provenance"] |= {"context": "back-to-back", "cache": "warm"}


def _source_key(source: str, gpu_name: str) -> str:
    key = source.split("@", 1)[0]
    return key if key in SOURCES else f"{key}/{gpu_name}"


def _neusight_params(note: str) -> list[str]:
    """The kernel cuBLAS chose, its grid, and the other kernels of the call, from a note."""
    out = []
    kernel = re.search(r"kernel (\S+) grid=\((\d+),(\d+),(\d+)\)", note)
    if kernel:
        out += [f"kernel={kernel.group(1)}", "grid=" + "x".join(kernel.group(2, 3, 4))]
    more = re.search(r"more kernel\(s\) in the call: ([^;(]+)", note)
    if more:
        out.append("also=" + more.group(1).strip().split("<")[0])
    return out


def _sample(members: list[dict[str, str]]) -> list[dict[str, str]]:
    """At most MAX_ROWS rows per dtype, drawn uniformly with a fixed seed, in table order."""
    rng = np.random.default_rng(SAMPLE_SEED)
    kept = []
    for dt in sorted({r["dtype"] for r in members}):
        idx = [i for i, r in enumerate(members) if r["dtype"] == dt]
        if len(idx) > MAX_ROWS:
            idx = sorted(rng.choice(idx, size=MAX_ROWS, replace=False).tolist())
        kept += idx
    return [members[i] for i in sorted(kept)]


def build(input_csvs: list[Path], out_dir: Path) -> list[Path]:
    rows = []
    for input_csv in input_csvs:
        with input_csv.open(newline="", encoding="utf-8") as fh:
            rows += list(csv.DictReader(fh))
    groups: dict[str, list[dict[str, str]]] = {}
    for r in rows:
        groups.setdefault(_source_key(r["source"], r["gpu"]), []).append(r)
    written = []
    for key, members in groups.items():
        spec = SOURCES[key]
        g = _gpu(spec["provenance"]["gpu"])
        total = len(members)
        if key.startswith(("sitar-lab", "ai-dynamo")):
            members = _sample(members)
        out = []
        for r in members:
            m, n, k, batch = (int(r[c]) for c in ("m", "n", "k", "batch"))
            params = [f"published_shape={m}x{n}x{k}"] if "ran_as=" in r["note"] else []
            ran = re.search(r"ran_as=(\d+)x(\d+)x(\d+)", r["note"])
            if ran:
                m, n, k = (int(x) for x in ran.groups())
            layout = re.findall(r"\b([ab]_t=[NT])", r["note"])
            params += layout
            suite = spec["suite"]
            cache = spec["provenance"].get("cache", "")
            if key.startswith("sitar-lab"):
                suite = "bmm" if "torch.bmm" in r["note"] else "linear"
                params += _neusight_params(r["note"])
            elif key.startswith("ai-dynamo"):
                cache = "warm" if "l2_fit=yes" in r["note"] else "cold"
                if r["dtype"].startswith("fp8"):
                    params.append("quantize=per-tensor")
            beta = 1.0 if "beta!=0" in r["note"] else 0.0
            d = _dtype(r["dtype"])
            flops = float(gemm_flops(m, n, k, batch))
            nbytes = float(gemm_bytes(m, n, k, d.bytes_per_element, batch, beta))
            t = float(r["measured_time_s"])
            roof = float(ideal_time_s(flops, nbytes, g, d))
            out.append(
                {
                    "suite": suite,
                    "op": "gemm",
                    "phase": "forward",
                    "dtype": d.name,
                    "m": m,
                    "n": n,
                    "k": k,
                    "batch": batch,
                    "params": ";".join(params),
                    "repeats": spec["repeats"],
                    "measured_time_s": t,
                    "flops": flops,
                    "bytes": nbytes,
                    "measured_flops_per_s": flops / t,
                    "roofline_time_s": roof,
                    "beta": beta,
                    "context": spec["provenance"]["context"],
                    "cache": cache,
                }
            )
        path = out_dir / f"{spec['trace']}.csv"
        sampling = (
            {
                "sampling": f"{len(out)} of the {total} rows of the kit's calibration table "
                f"(itself a uniform sample of the source tables), drawn uniformly per dtype "
                f"with numpy default_rng({SAMPLE_SEED}), at most {MAX_ROWS} per dtype"
            }
            if len(out) < total
            else {}
        )
        write_trace(path, {**spec["provenance"], "rows": str(len(out)), **sampling}, out)
        written.append(path)
    return written


def main(argv: list[str]) -> int:
    srcs = [Path(a) for a in argv] if argv else list(DEFAULT_INPUTS)
    for src in srcs:
        if not src.is_file():
            print(f"no calibration table at {src}", file=sys.stderr)
            return 2
    for path in build(srcs, ROOT / "dlperf_widgets" / "live" / "data"):
        print(f"wrote {path.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

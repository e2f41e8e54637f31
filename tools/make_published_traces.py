#!/usr/bin/env python3
"""Turn published GEMM measurements into the kit's recorded-trace files.

    python tools/make_published_traces.py [CALIBRATION_CSV]

reads the calibration table (default: ``../shared/calibration/gemm_measurements.csv`` beside
the repository: one measured GEMM per row with its source) and writes one trace file per
source and GPU into ``dlperf_widgets/live/data/``, in the format of
``dlperf_widgets.live.traces`` with the full provenance in ``#!`` lines. The measurements
are copied as published; the shape is the one the benchmark ran (DeepBench padded some
fp16 shapes to multiples of 8: the published shape is kept in ``params``).
"""

from __future__ import annotations

import csv
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from dlperf_widgets.core.dtypes import dtype as _dtype  # noqa: E402
from dlperf_widgets.core.gemm import gemm_bytes, gemm_flops, ideal_time_s  # noqa: E402
from dlperf_widgets.core.gpus import gpu as _gpu  # noqa: E402
from dlperf_widgets.live.traces import write_trace  # noqa: E402

DEFAULT_INPUT = ROOT.parent / "shared" / "calibration" / "gemm_measurements.csv"

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


def _source_key(source: str) -> str:
    return source.split("@", 1)[0]


def build(input_csv: Path, out_dir: Path) -> list[Path]:
    with input_csv.open(newline="", encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    groups: dict[str, list[dict[str, str]]] = {}
    for r in rows:
        groups.setdefault(_source_key(r["source"]), []).append(r)
    written = []
    for key, members in groups.items():
        spec = SOURCES[key]
        g = _gpu(spec["provenance"]["gpu"])
        out = []
        for r in members:
            m, n, k, batch = (int(r[c]) for c in ("m", "n", "k", "batch"))
            params = [f"published_shape={m}x{n}x{k}"] if "ran_as=" in r["note"] else []
            ran = re.search(r"ran_as=(\d+)x(\d+)x(\d+)", r["note"])
            if ran:
                m, n, k = (int(x) for x in ran.groups())
            layout = re.findall(r"\b([ab]_t=[NT])", r["note"])
            params += layout
            beta = 1.0 if "beta!=0" in r["note"] else 0.0
            d = _dtype(r["dtype"])
            flops = float(gemm_flops(m, n, k, batch))
            nbytes = float(gemm_bytes(m, n, k, d.bytes_per_element, batch, beta))
            t = float(r["measured_time_s"])
            roof = float(ideal_time_s(flops, nbytes, g, d))
            out.append(
                {
                    "suite": spec["suite"],
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
                }
            )
        path = out_dir / f"{spec['trace']}.csv"
        write_trace(path, {**spec["provenance"], "rows": str(len(out))}, out)
        written.append(path)
    return written


def main(argv: list[str]) -> int:
    src = Path(argv[0]) if argv else DEFAULT_INPUT
    if not src.is_file():
        print(f"no calibration table at {src}", file=sys.stderr)
        return 2
    for path in build(src, ROOT / "dlperf_widgets" / "live" / "data"):
        print(f"wrote {path.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

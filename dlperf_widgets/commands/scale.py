"""Low precision and training at scale: ``dlperf fp8``, ``blockformat``, ``mfu``,
``pipeline``, ``collective`` and ``step``."""

from __future__ import annotations

import argparse

from ..core.mfu import RECOMPUTE, mfu
from ..core.scaleout import (
    COLLECTIVES,
    SCHEDULES,
    collective,
    interconnect_names,
    pipeline_schedule,
    step_time,
)
from ..core.scaling import (
    BLOCK_FORMATS,
    FP8_FORMATS,
    SCALE_FORMATS,
    block_format,
    block_outlier_study,
    fp8_quantize,
)
from . import Command, float_arg, int_arg
from .memory import params_arg


def _floats(name: str):  # type: ignore[no-untyped-def]
    parse = float_arg(name)

    def many(text: str) -> list[float]:
        return [parse(t) for t in text.split(",") if t.strip()]

    many.__name__ = name
    return many


# -- fp8 ------------------------------------------------------------------------------------
def _fp8_configure(p: argparse.ArgumentParser) -> None:
    p.add_argument("values", nargs="+", type=float_arg("values"), help="the tensor's values")
    p.add_argument("--format", default="fp8_e4m3", help=f"{' | '.join(FP8_FORMATS)} (fp8_e4m3)")
    p.add_argument("--recipe", default="current", help="current | delayed (current)")
    p.add_argument(
        "--history", type=_floats("history"), default=None, help="earlier amaxes: 1.5,2.0"
    )
    p.add_argument("--margin", type=int_arg("margin"), default=0, help="binades of margin (0)")


def _fp8_run(a: argparse.Namespace) -> object:
    return fp8_quantize(
        a.values, a.format, recipe=a.recipe, amax_history=a.history, margin=a.margin
    )


# -- blockformat ----------------------------------------------------------------------------
def _block_configure(p: argparse.ArgumentParser) -> None:
    p.add_argument("name", help=f"{' | '.join(BLOCK_FORMATS)}")
    p.add_argument(
        "--block-size", type=int_arg("block_size"), default=None, help="what-if block size"
    )
    p.add_argument("--scale-format", default=None, help=f"what-if: {' | '.join(SCALE_FORMATS)}")
    p.add_argument(
        "--outlier",
        type=float_arg("outlier_binades"),
        default=None,
        help="quantize normal values with one outlier this many binades up",
    )


def _block_run(a: argparse.Namespace) -> object:
    if a.outlier is None:
        return block_format(a.name, block_size=a.block_size, scale_format=a.scale_format)
    return block_outlier_study(
        a.name, block_size=a.block_size, scale_format=a.scale_format, outlier_binades=a.outlier
    )


# -- mfu ------------------------------------------------------------------------------------
def _mfu_configure(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "tokens_per_s", type=float_arg("tokens_per_s"), help="training tokens per second"
    )
    p.add_argument("--params", type=params_arg, required=True, help="parameters: 7e9, 7B")
    p.add_argument("--layers", type=int_arg("layers"), default=0, help="layers (attention term)")
    p.add_argument("--hidden", type=int_arg("hidden"), default=0, help="hidden size")
    p.add_argument("--seq-len", type=int_arg("seq-len"), default=0, help="sequence length")
    p.add_argument("--gpus", type=int_arg("gpus"), default=1, help="GPUs in the run (1)")
    p.add_argument("--gpu", default="H100", help="GPU name (H100)")
    p.add_argument("--dtype", default="bf16", help="dtype of the peak (bf16)")
    p.add_argument("--recompute", default="none", help=f"{' | '.join(RECOMPUTE)} (none)")
    p.add_argument("--peak", type=float_arg("peak"), default=None, help="peak FLOP/s per device")


def _mfu_run(a: argparse.Namespace) -> object:
    return mfu(
        a.tokens_per_s,
        a.params,
        layers=a.layers,
        hidden=a.hidden,
        seq_len=a.seq_len,
        gpus=a.gpus,
        gpu=a.gpu,
        dtype=a.dtype,
        recompute=a.recompute,
        peak_flops_per_s=a.peak,
    )


# -- pipeline -------------------------------------------------------------------------------
def _pipe_configure(p: argparse.ArgumentParser) -> None:
    p.add_argument("stages", type=int_arg("stages"), help="pipeline stages p")
    p.add_argument("micro_batches", type=int_arg("micro_batches"), help="micro-batches m")
    p.add_argument("--schedule", default="1f1b", help=f"{' | '.join(SCHEDULES)} (1f1b)")
    p.add_argument(
        "--chunks",
        type=int_arg("chunks"),
        default=2,
        help="layer chunks per stage (interleaved: 2)",
    )


def _pipe_run(a: argparse.Namespace) -> object:
    return pipeline_schedule(a.stages, a.micro_batches, a.schedule, chunks=a.chunks)


# -- collective -----------------------------------------------------------------------------
def _coll_configure(p: argparse.ArgumentParser) -> None:
    p.add_argument("size_bytes", type=float_arg("size_bytes"), help="message size in bytes")
    p.add_argument("ranks", type=int_arg("ranks"), help="GPUs in the ring")
    p.add_argument("--link", default="NVLink4", help=f"{' | '.join(interconnect_names())}")
    p.add_argument("--kind", default="all-reduce", help=f"{' | '.join(COLLECTIVES)}")
    p.add_argument(
        "--gpus-per-node",
        type=int_arg("gpus_per_node"),
        default=None,
        help="GPUs per server when --link is a network link (8)",
    )
    p.add_argument(
        "--nics-per-node",
        type=int_arg("nics_per_node"),
        default=None,
        help="NICs per server on a network link (one per GPU; 1: one flat ring through one NIC)",
    )


def _coll_run(a: argparse.Namespace) -> object:
    return collective(a.size_bytes, a.ranks, link=a.link, kind=a.kind,
                      gpus_per_node=a.gpus_per_node, nics_per_node=a.nics_per_node)  # fmt: skip


# -- step -----------------------------------------------------------------------------------
def _step_configure(p: argparse.ArgumentParser) -> None:
    for name, default, what in (
        ("layers", 32, "layers"),
        ("hidden", 4096, "hidden size"),
        ("heads", 32, "attention heads"),
        ("seq-len", 4096, "sequence length"),
        ("vocab", 32000, "vocabulary"),
        ("global-batch", 512, "sequences per step"),
        ("micro-batch", 1, "sequences per micro-batch"),
        ("gpus", 64, "GPUs"),
        ("tensor-parallel", 1, "tensor-parallel GPUs"),
        ("pipeline-parallel", 1, "pipeline stages"),
        ("chunks", 1, "layer chunks per GPU (interleaved)"),
        ("zero", 1, "ZeRO stage (3: FSDP traffic)"),
    ):
        p.add_argument(f"--{name}", type=int_arg(name), default=default, help=f"{what} ({default})")
    p.add_argument("--schedule", default="1f1b", help=f"{' | '.join(SCHEDULES)} (1f1b)")
    p.add_argument("--no-overlap", action="store_true", help="do not overlap gradient traffic")
    p.add_argument("--gpu", default="H100", help="GPU name (H100)")
    p.add_argument("--dtype", default="bf16", help="GEMM dtype (bf16)")
    p.add_argument("--model", default=None, help="a model name instead of the shape (GQA, SwiGLU)")
    p.add_argument("--attention", default="flash2", help="eager | flash1 | flash2 | sdpa (flash2)")
    p.add_argument("--recompute", default="none", help="none | selective | full (none)")
    p.add_argument("--kernels", action="store_true", help="show which kernels take the step's time")
    p.add_argument(
        "--nics-per-node",
        type=int_arg("nics_per_node"),
        default=None,
        help="network ports per 8-GPU server (one per GPU; 1: one port per server)",
    )


def _step_run(a: argparse.Namespace) -> object:
    result = step_time(
        layers=a.layers,
        hidden=a.hidden,
        heads=a.heads,
        seq_len=a.seq_len,
        vocab=a.vocab,
        global_batch=a.global_batch,
        micro_batch=a.micro_batch,
        gpus=a.gpus,
        tensor_parallel=a.tensor_parallel,
        pipeline_parallel=a.pipeline_parallel,
        chunks=a.chunks,
        zero=a.zero,
        schedule=a.schedule,
        overlap=not a.no_overlap,
        gpu=a.gpu,
        dtype=a.dtype,
        model=a.model,
        attention=a.attention,
        recompute=a.recompute,
        nics_per_node=a.nics_per_node,
    )
    if a.kernels and result.priced is not None:
        return result.priced.breakdown()
    return result


COMMANDS = [
    Command(
        "fp8",
        "cast values to FP8 with a per-tensor scale: saturation and underflow",
        _fp8_configure,
        _fp8_run,
        order=61,
    ),
    Command(
        "blockformat",
        "block size, scale format, bits per element and range of MXFP8/6/4, NVFP4; "
        "--outlier: its error with one outlier",
        _block_configure,
        _block_run,
        order=62,
    ),
    Command(
        "mfu",
        "model and hardware FLOPs utilization of a training run",
        _mfu_configure,
        _mfu_run,
        order=75,
    ),
    Command(
        "pipeline",
        "GPipe, 1F1B or interleaved pipeline schedule: bubble and activations held",
        _pipe_configure,
        _pipe_run,
        order=76,
    ),
    Command(
        "collective",
        "bytes and time of a ring all-reduce / all-gather on a GPU link",
        _coll_configure,
        _coll_run,
        order=77,
    ),
    Command(
        "step",
        "time and MFU of one training step of a transformer on N GPUs",
        _step_configure,
        _step_run,
        order=78,
    ),
]

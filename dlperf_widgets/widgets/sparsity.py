"""SparsityExplorer: a weight matrix pruned to 2:4 and the predicted speed-up."""

from __future__ import annotations

import html
from typing import Any

import numpy as np

from ..core.gpus import Gpu
from ..core.results import format_quantity
from ..core.sparsity import PruneResult, SparseGemmResult, prune_2_4, sparse_gemm
from ..plots.breakdown import plot_pruned, update_pruned
from ._base import Explorer, gpu_dropdown, parse_int, widgets

__all__ = ["SparsityExplorer"]

# The demonstration matrix: small enough to see every group of 4.
WEIGHT_SHAPE = (8, 16)


class SparsityExplorer(Explorer):
    """2:4 structured sparsity: a random weight matrix pruned by magnitude (2 of every 4
    kept), and the speed-up the core predicts for a GEMM of the chosen size, alone and
    for a whole run where the GEMM is a given share of the runtime (NVIDIA slides "NN
    Performance optimization", "Ampere sparsity": 2x math, up to ~30 % end to end).

    ``.result`` is the :class:`~dlperf_widgets.core.sparsity.SparseGemmResult`;
    ``.pruned`` the :class:`~dlperf_widgets.core.sparsity.PruneResult` drawn.
    """

    result: SparseGemmResult

    def __init__(
        self,
        m: int = 4096,
        n: int = 4096,
        k: int = 4096,
        *,
        dtype: str = "fp16",
        gpu: str | Gpu = "A100",
        runtime_fraction: float = 0.6,
        seed: int = 0,
    ) -> None:
        super().__init__()
        m, n, k = parse_int("M", m), parse_int("N", n), parse_int("K", k)
        seed = parse_int("weights seed", seed, minimum=0, maximum=99)
        gpu_dd, self._custom_gpus = gpu_dropdown(gpu)
        g = self._gpu(gpu_dd.value)
        first = sparse_gemm(m, n, k, dtype=dtype, gpu=g, runtime_fraction=runtime_fraction)
        # Offer only what 2:4 sparsity runs on: GPUs with sparse Tensor Cores (Ampere on)
        # and, per GPU, the dtypes with a sparse rate; the others would always error.
        gpu_dd.options = [
            name for name in gpu_dd.options if _sparse_dtypes(self._gpu(name)) or name == g.name
        ]
        gpu_dd.value = g.name
        self.pruned: PruneResult = prune_2_4(self._weights(seed))

        def slider(name: str, value: int) -> Any:
            return widgets.IntSlider(
                value=value,
                min=1,
                max=max(32768, value),
                description=name,
                layout=widgets.Layout(width="340px"),
            )

        controls = {
            "m": slider("M", m),
            "n": slider("N", n),
            "k": slider("K", k),
            "dtype": widgets.Dropdown(
                options=_sparse_dtypes(g), value=first.dtype, description="dtype"
            ),
            "gpu": gpu_dd,
            "runtime_fraction": widgets.FloatSlider(
                value=runtime_fraction,
                min=0.0,
                max=1.0,
                step=0.05,
                description="GEMM share",
                layout=widgets.Layout(width="340px"),
            ),
            "seed": widgets.IntSlider(value=seed, min=0, max=99, description="weights seed"),
        }
        self._artists: Any = None
        self._setup(
            controls, rows=[["m", "n", "k"], ["dtype", "gpu"], ["runtime_fraction", "seed"]]
        )

    def _dtype_options(self, g: Gpu) -> list[str]:
        return _sparse_dtypes(g)

    @staticmethod
    def _weights(seed: int) -> np.ndarray:
        return np.random.default_rng(seed).normal(size=WEIGHT_SHAPE)

    def _compute(self) -> SparseGemmResult:
        c = self.controls
        return sparse_gemm(
            parse_int("M", c["m"].value),
            parse_int("N", c["n"].value),
            parse_int("K", c["k"].value),
            dtype=c["dtype"].value,
            gpu=self._gpu(c["gpu"].value),
            runtime_fraction=c["runtime_fraction"].value,
        )

    def _render(self, result: SparseGemmResult, changed: set[str]) -> None:
        self.output.value = (
            f"<div class='dlperf-summary'>GEMM {html.escape(format_quantity(result.dense_time_s, 's'))}"
            f" -> {html.escape(format_quantity(result.sparse_time_s, 's'))} "
            f"(<b class='dlperf-speedup'>{result.gemm_speedup:.2f}x</b>, {result.limiter}-bound); "
            f"whole run <b class='dlperf-e2e'>{result.end_to_end_speedup:.2f}x</b></div>"
            + result._repr_html_()
        )
        view = self.view
        if self._artists is None:
            self._artists = plot_pruned(self.pruned, view.ax)
            view.set_dynamic([self._artists.image, self._artists.title])
            view.redraw(full=True)
            return
        if "seed" in changed:
            self.pruned = prune_2_4(self._weights(self.controls["seed"].value))
            update_pruned(self._artists, self.pruned)
            view.redraw(full=False)


def _sparse_dtypes(g: Gpu) -> list[str]:
    """The dtypes ``g`` runs with a 2:4 sparse Tensor Core rate."""
    sparse = {p.dtype for p in g.peaks if p.sparse_flops_per_s}
    return [d for d in g.dtypes() if d in sparse]

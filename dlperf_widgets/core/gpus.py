"""The GPU database: hardware figures from data files, peaks derived from first principles.

Peak FLOP/s = SMs x clock x FMA per clock per SM x 2 (NVIDIA slides "NN Performance
optimization", "Multiply-add operations per clock": an FMA is two operations). The FMA rates
live in ``data/architectures.csv``, the products in ``data/gpus.csv``, and the few published
peaks that do not follow the product in ``data/peak_overrides.csv``, each with its reason.
"""

from __future__ import annotations

import csv
import functools
import html
import re
from dataclasses import dataclass, field
from importlib import resources
from typing import Any

from ._validate import check_int, check_number, closest, describe
from .dtypes import DTYPES, Dtype, dtype
from .errors import InvalidParameter, UnknownGPU
from .local_calibration import local_entry
from .results import ResultMixin, format_quantity

__all__ = ["Gpu", "Peak", "custom_gpu", "gpu", "gpu_names", "gpus", "peak_unit", "register_gpu"]


def peak_unit(dt: str | Dtype) -> str:
    """The unit a peak of ``dt`` is quoted in: 'OPS' for integer types (NVIDIA's "TOPS"),
    'FLOP/s' for floating-point ones."""
    return "OPS" if dtype(dt).kind == "int" else "FLOP/s"


UNITS = ("cuda", "tensor")


def _read_csv(name: str) -> list[dict[str, str]]:
    text = resources.files("dlperf_widgets.core.data").joinpath(name).read_text("utf-8")
    lines = [ln for ln in text.splitlines() if ln.strip() and not ln.lstrip().startswith("#")]
    return [{k: (v or "").strip() for k, v in row.items()} for row in csv.DictReader(lines)]


@dataclass(frozen=True)
class Peak:
    """One execution rate: unit, dtype, FMA/clk/SM, clock, and the FLOP/s they give."""

    unit: str
    dtype: str
    fma_per_clk_per_sm: int
    clock_mhz: float
    flops_per_s: float
    sparse_fma_per_clk_per_sm: int | None = None
    sparse_flops_per_s: float | None = None
    override_reason: str = ""


@functools.lru_cache(maxsize=1)
def _architectures() -> dict[str, dict[tuple[str, str], tuple[int, int | None, str]]]:
    table: dict[str, dict[tuple[str, str], tuple[int, int | None, str]]] = {}
    for row in _read_csv("architectures.csv"):
        sparse = int(row["fma_sparse"]) if row["fma_sparse"] else None
        table.setdefault(row["architecture"], {})[(row["unit"], row["dtype"])] = (
            int(row["fma_dense"]),
            sparse,
            row["source"],
        )
    return table


@functools.lru_cache(maxsize=1)
def _overrides() -> dict[tuple[str, str, str], dict[str, str]]:
    return {(r["gpu"], r["unit"], r["dtype"]): r for r in _read_csv("peak_overrides.csv")}


@dataclass(frozen=True)
class Gpu(ResultMixin):
    """A GPU and every figure the performance model needs.

    ``peaks`` holds one :class:`Peak` per (unit, dtype) the GPU runs. The JSON keys of
    ``dlperf gpu`` are the attributes and properties listed in :meth:`to_dict`.
    """

    name: str
    architecture: str
    sms: int
    boost_clock_mhz: float
    l2_bytes: int
    memory_bytes: int
    memory_bandwidth_bytes_per_s: float
    compute_capability: str = ""
    tensor_clock_mhz: float | None = None
    aliases: tuple[str, ...] = ()
    source: str = ""
    notes: str = ""
    peaks: tuple[Peak, ...] = field(default=(), repr=False)
    base_clock_mhz: float | None = None
    tdp_w: float | None = None
    l2_bandwidth_bytes_per_s: float | None = None

    # -- derived figures -------------------------------------------------------------
    def _best(self, dtype_name: str, sparse: bool = False) -> Peak | None:
        best: Peak | None = None
        for p in self.peaks:
            if p.dtype != dtype_name:
                continue
            rate = p.sparse_flops_per_s if sparse else p.flops_per_s
            if rate is None:
                continue
            ref = (
                None if best is None else (best.sparse_flops_per_s if sparse else best.flops_per_s)
            )
            if ref is None or rate > ref:
                best = p
        return best

    def supports(self, dt: str | Dtype) -> bool:
        return self._best(dtype(dt).name) is not None

    def peak_flops(
        self, dt: str | Dtype, *, sparse: bool = False, unit: str | None = None
    ) -> float:
        """Peak FLOP/s for a dtype on the fastest unit that runs it (or on ``unit``)."""
        d = dtype(dt)
        if unit is not None:
            if unit not in UNITS:
                raise InvalidParameter(f"'unit' must be one of cuda, tensor (got {describe(unit)})")
            for p in self.peaks:
                if p.dtype == d.name and p.unit == unit:
                    rate = p.sparse_flops_per_s if sparse else p.flops_per_s
                    if rate is not None:
                        return rate
            raise InvalidParameter(
                f"'dtype' {d.name} has no {'2:4 sparse ' if sparse else ''}{unit} rate on "
                f"{self.name} (got {describe(d.name)})"
            )
        best = self._best(d.name, sparse)
        if best is None and sparse:
            have = ", ".join(self.peak_sparse_flops_per_s) or "none"
            raise InvalidParameter(
                f"'dtype' must have a 2:4 sparse Tensor Core rate on {self.name} "
                f"(it has: {have}) (got {describe(d.name)})"
            )
        if best is None:
            runs = ", ".join(self.dtypes()) or "none"
            what = "2:4 sparse " if sparse else ""
            raise InvalidParameter(
                f"'dtype' must be a type {self.name} runs {what}(one of {runs}) (got {describe(d.name)})"
            )
        rate = best.sparse_flops_per_s if sparse else best.flops_per_s
        assert rate is not None  # _best only returns peaks that have this rate
        return rate

    def unit_for(self, dt: str | Dtype) -> str:
        """The unit ('tensor' or 'cuda') that gives the dtype's peak."""
        best = self._best(dtype(dt).name)
        if best is None:
            self.peak_flops(dt)  # raises the standard message
        assert best is not None
        return best.unit

    def dtypes(self) -> list[str]:
        seen = {p.dtype for p in self.peaks}
        return [d for d in DTYPES if d in seen]

    def ops_per_byte(self, dt: str | Dtype) -> float:
        """Peak FLOP/s over memory bandwidth: the arithmetic intensity where the roofline bends.

        NVIDIA slides "NN Performance optimization", "Math and Memory bounds" (V100: 138.9).
        """
        return self.peak_flops(dt) / self.memory_bandwidth_bytes_per_s

    @property
    def peak_flops_per_s(self) -> dict[str, float]:
        return {d: self.peak_flops(d) for d in self.dtypes()}

    @property
    def peak_sparse_flops_per_s(self) -> dict[str, float]:
        out = {}
        for d in self.dtypes():
            best = self._best(d, sparse=True)
            if best is not None and best.sparse_flops_per_s is not None:
                out[d] = best.sparse_flops_per_s
        return out

    @property
    def ops_per_byte_by_dtype(self) -> dict[str, float]:
        return {d: self.ops_per_byte(d) for d in self.dtypes()}

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "architecture": self.architecture,
            "compute_capability": self.compute_capability,
            "sms": self.sms,
            "boost_clock_mhz": self.boost_clock_mhz,
            "tensor_clock_mhz": self.tensor_clock_mhz,
            "base_clock_mhz": self.base_clock_mhz,
            "tdp_w": self.tdp_w,
            "l2_bytes": self.l2_bytes,
            "l2_bandwidth_bytes_per_s": self.l2_bandwidth_bytes_per_s,
            "memory_bytes": self.memory_bytes,
            "memory_bandwidth_bytes_per_s": self.memory_bandwidth_bytes_per_s,
            "peak_flops_per_s": self.peak_flops_per_s,
            "peak_sparse_flops_per_s": self.peak_sparse_flops_per_s,
            "ops_per_byte": self.ops_per_byte_by_dtype,
            "units": {p.dtype + ":" + p.unit: p.fma_per_clk_per_sm for p in self.peaks},
            "aliases": list(self.aliases),
            "source": self.source,
            "notes": self.notes,
        }

    # -- display ---------------------------------------------------------------------
    def _title(self) -> str:
        return f"{self.name} ({self.architecture}, {self.sms} SMs)"

    def _rows(self) -> list[tuple[str, str]]:
        rows = [
            ("SMs", str(self.sms)),
            ("boost clock", f"{self.boost_clock_mhz:g} MHz"),
            ("L2 cache", f"{self.l2_bytes / 2**20:g} MiB"),
            ("memory", f"{self.memory_bytes / 2**30:g} GiB"),
            ("memory bandwidth", format_quantity(self.memory_bandwidth_bytes_per_s, "B/s")),
        ]
        if self.tensor_clock_mhz:
            rows.insert(2, ("Tensor Core clock", f"{self.tensor_clock_mhz:g} MHz"))
        if self.base_clock_mhz:
            rows.insert(1, ("base clock", f"{self.base_clock_mhz:g} MHz"))
        if self.tdp_w:
            rows.append(("board power limit", f"{self.tdp_w:g} W"))
        if self.l2_bandwidth_bytes_per_s:
            rows.append(("L2 bandwidth", format_quantity(self.l2_bandwidth_bytes_per_s, "B/s")))
        for d in self.dtypes():
            rows.append(
                (
                    f"peak {d} ({self.unit_for(d)})",
                    f"{format_quantity(self.peak_flops(d), peak_unit(d))}, "
                    f"ops:byte {self.ops_per_byte(d):.1f}",
                )
            )
        return rows

    def __repr__(self) -> str:
        return f"Gpu({self.name!r}, sms={self.sms}, architecture={self.architecture!r})"

    def _repr_html_(self) -> str:
        rows = "".join(
            f"<tr><th style='text-align:left'>{html.escape(k)}</th>"
            f"<td style='text-align:right'>{html.escape(v)}</td></tr>"
            for k, v in self._rows()
        )
        return (
            f"<table class='dlperf-result'><caption style='text-align:left'><b>"
            f"{html.escape(self._title())}</b></caption>{rows}</table>"
        )


def _build_peaks(
    name: str,
    architecture: str,
    sms: int,
    boost_clock_mhz: float,
    tensor_clock_mhz: float | None,
) -> tuple[Peak, ...]:
    arch = _architectures().get(architecture) if isinstance(architecture, str) else None
    if arch is None:
        raise InvalidParameter(
            f"'architecture' must be one of {', '.join(_architectures())} (got {describe(architecture)})"
        )
    overrides = _overrides()
    peaks = []
    for (unit, dt), (fma, fma_sparse, _source) in arch.items():
        clock = tensor_clock_mhz if (unit == "tensor" and tensor_clock_mhz) else boost_clock_mhz
        reason = ""
        ov = overrides.get((name, unit, dt))
        if ov:
            fma = int(ov["fma_dense"]) if ov["fma_dense"] else fma
            fma_sparse = int(ov["fma_sparse"]) if ov["fma_sparse"] else fma_sparse
            clock = float(ov["clock_mhz"]) if ov["clock_mhz"] else clock
            reason = ov["reason"]
        # peak = SMs x clock x FMA/clk/SM x 2 (an FMA is a multiply and an add)
        rate = sms * clock * 1e6 * fma * 2
        sparse_rate = sms * clock * 1e6 * fma_sparse * 2 if fma_sparse else None
        peaks.append(Peak(unit, dt, fma, clock, rate, fma_sparse, sparse_rate, reason))
    return tuple(peaks)


@functools.lru_cache(maxsize=1)
def _database() -> dict[str, Gpu]:
    db: dict[str, Gpu] = {}
    for row in _read_csv("gpus.csv"):
        tclock = float(row["tensor_clock_mhz"]) if row["tensor_clock_mhz"] else None
        sms = int(row["sms"])
        boost = float(row["boost_clock_mhz"])
        db[row["name"]] = Gpu(
            name=row["name"],
            architecture=row["architecture"],
            sms=sms,
            boost_clock_mhz=boost,
            tensor_clock_mhz=tclock,
            l2_bytes=int(float(row["l2_mib"]) * 2**20),
            memory_bytes=int(float(row["memory_gib"]) * 2**30),
            memory_bandwidth_bytes_per_s=float(row["memory_bandwidth_gb_per_s"]) * 1e9,
            compute_capability=row["compute_capability"],
            aliases=tuple(a.strip() for a in row["aliases"].split(";") if a.strip()),
            source=row["source"],
            notes=row["notes"],
            peaks=_build_peaks(row["name"], row["architecture"], sms, boost, tclock),
            base_clock_mhz=_opt_float(row.get("base_clock_mhz")),
            tdp_w=_opt_float(row.get("tdp_w")),
            l2_bandwidth_bytes_per_s=_opt_float(row.get("l2_bandwidth_gb_per_s"), 1e9),
        )
    return db


def _opt_float(text: str | None, scale: float = 1.0) -> float | None:
    return float(text) * scale if text else None


_custom: dict[str, Gpu] = {}

# A custom GPU's name: plain ASCII letters, digits and a few separators, at most 64
# characters. Anything else could look like a built-in name in a dropdown while being
# another: "A100" with a zero-width space, Cyrillic "А100", fullwidth "Ａ100".
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9 ._()+/-]{0,63}")


def _check_name(name: Any, parameter: str = "name") -> str:
    if not isinstance(name, str) or not _NAME.fullmatch(name.strip(" ")):
        raise InvalidParameter(
            f"'{parameter}' must be 1 to 64 plain ASCII letters, digits, spaces or ._()+/- "
            f"starting with a letter or digit (got {describe(name)})"
        )
    return name.strip(" ")


_index_cache: dict[str, Any] = {}


def _index() -> dict[str, Gpu]:
    # built once per set of custom GPUs (register_gpu adds to _custom)
    key = tuple((name, id(g)) for name, g in _custom.items())
    if _index_cache.get("key") == key:
        return _index_cache["index"]
    index: dict[str, Gpu] = {}
    for g in list(_database().values()) + list(_custom.values()):
        for alias in (g.name, *g.aliases):
            index[_norm(alias)] = g
    _index_cache.update(key=key, index=index)
    return index


def _norm(name: str) -> str:
    return name.strip().lower().replace(" ", "-").replace("_", "-").removeprefix("nvidia-")


def gpu_names() -> list[str]:
    """Canonical names of every GPU in the database and every registered custom GPU."""
    return list(_database()) + [n for n in _custom if n not in _database()]


def gpus() -> list[Gpu]:
    """Every GPU, database first, in the order of the data file."""
    return [gpu(n) for n in gpu_names()]


def gpu(name: str | Gpu) -> Gpu:
    """Look a GPU up by name or alias, case-insensitively (``'v100'``, ``'A100-80GB'``)."""
    if isinstance(name, Gpu):
        return name
    if not isinstance(name, str) or not name.strip():
        raise InvalidParameter(f"'gpu' must be a GPU name such as 'A100' (got {describe(name)})")
    index = _index()
    hit = index.get(_norm(name)) or _local_gpu(name)
    if hit is not None:
        return hit
    options = sorted({g.name for g in index.values()} | set(index))
    near = closest(_norm(name), options, n=4) if len(name) <= 100 else []
    near_names = list(dict.fromkeys(index[_norm(n)].name if _norm(n) in index else n for n in near))
    hint = f"; closest: {', '.join(near_names)}" if near_names else ""
    raise UnknownGPU(
        f"'gpu' must be a known GPU (got {describe(name)}){hint}; 'dlperf gpus' lists them all"
    )


_local_built: dict[str, Any] = {"entry": None, "gpu": None}


def _local_gpu(name: str) -> Gpu | None:
    """The device entry saved by ``dlperf calibrate`` (a CPU, or a GPU the database lacks),
    when ``name`` is its name or an alias (core.local_calibration); else None."""
    entry = local_entry()
    if entry is None:
        return None
    if entry is not _local_built["entry"]:
        try:
            built: Gpu | None = Gpu(
                name=str(entry["name"]),
                architecture=str(entry["architecture"]),
                sms=int(entry["sms"]),
                boost_clock_mhz=float(entry["boost_clock_mhz"]),
                l2_bytes=int(entry.get("l2_bytes") or 0),
                memory_bytes=int(entry.get("memory_bytes") or 0),
                memory_bandwidth_bytes_per_s=float(entry["memory_bandwidth_bytes_per_s"]),
                aliases=tuple(str(a) for a in entry.get("aliases") or ()),
                source="local calibration ('dlperf calibrate')",
                notes=str(entry.get("notes") or ""),
                peaks=tuple(
                    Peak(
                        str(p["unit"]),
                        str(p["dtype"]),
                        int(p["fma_per_clk_per_sm"]),
                        float(p["clock_mhz"]),
                        float(p["flops_per_s"]),
                    )
                    for p in entry["peaks"]
                ),
            )
        except (KeyError, TypeError, ValueError):
            built = None  # a damaged entry: the name stays unknown
        _local_built.update(entry=entry, gpu=built)
    g = _local_built["gpu"]
    if g is None or _norm(name) not in {_norm(n) for n in (g.name, *g.aliases)}:
        return None
    return g


def custom_gpu(
    name: str,
    *,
    architecture: str,
    sms: int,
    boost_clock_mhz: float,
    memory_bandwidth_bytes_per_s: float,
    l2_bytes: int = 0,
    memory_bytes: int = 0,
    tensor_clock_mhz: float | None = None,
    notes: str = "user-defined",
) -> Gpu:
    """A GPU built from its figures; peaks come from the architecture's FMA rates.

    >>> toy = custom_gpu("toy-8sm", architecture="ampere_ga100", sms=8,
    ...                  boost_clock_mhz=1410, memory_bandwidth_bytes_per_s=1e11)
    >>> toy.sms
    8
    """
    name = _check_name(name)
    if not isinstance(notes, str) or len(notes) > 1000:
        raise InvalidParameter(
            f"'notes' must be text of at most 1000 characters (got {describe(notes)})"
        )
    sms = check_int("sms", sms, allow_array=False)
    boost = check_number("boost_clock_mhz", boost_clock_mhz, minimum=0, strict=True)
    bw = check_number(
        "memory_bandwidth_bytes_per_s", memory_bandwidth_bytes_per_s, minimum=0, strict=True
    )
    l2 = check_int("l2_bytes", l2_bytes, minimum=0, allow_array=False)
    mem = check_int("memory_bytes", memory_bytes, minimum=0, allow_array=False)
    tclock = (
        None
        if tensor_clock_mhz is None
        else check_number("tensor_clock_mhz", tensor_clock_mhz, minimum=0, strict=True)
    )
    return Gpu(
        name=name.strip(),
        architecture=architecture,
        sms=sms,
        boost_clock_mhz=boost,
        tensor_clock_mhz=tclock,
        l2_bytes=l2,
        memory_bytes=mem,
        memory_bandwidth_bytes_per_s=bw,
        notes=notes,
        source="user-defined",
        peaks=_build_peaks(name.strip(), architecture, sms, boost, tclock),
    )


def register_gpu(g: Gpu) -> Gpu:
    """Make a custom GPU findable by name (``gpu('toy-8sm')``, ``--gpu toy-8sm``)."""
    if not isinstance(g, Gpu):
        raise InvalidParameter(f"'g' must be a Gpu from custom_gpu() (got {type(g).__name__})")
    for key in (g.name, *g.aliases):  # a Gpu built or replaced by hand skips custom_gpu()
        _check_name(key)
    # Names are matched as gpu() looks them up (case, spaces, underscores, an "NVIDIA "
    # prefix, aliases), so "a100-sxm4-80gb" or "NVIDIA H100 PCIe" cannot replace a built-in.
    taken = {
        _norm(key): known for known in _database().values() for key in (known.name, *known.aliases)
    }
    for key in (g.name, *g.aliases):
        if _norm(key) in taken:
            raise InvalidParameter(
                f"'name' must not be a built-in GPU's name or alias (got {describe(key)}, "
                f"which names {taken[_norm(key)].name})"
            )
    for other in _custom.values():
        if other == g:  # re-running the same cell registers the same GPU again: fine
            return g
        if {_norm(k) for k in (other.name, *other.aliases)} & {
            _norm(k) for k in (g.name, *g.aliases)
        }:
            raise InvalidParameter(
                f"'name' must not be a registered custom GPU's name (got {describe(g.name)}); "
                f"give the new GPU another name"
            )
    _custom[g.name] = g
    return g

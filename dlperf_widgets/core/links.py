"""GPU links: NVLink inside a server, PCIe, and the InfiniBand NICs between servers.

Each link is a row of ``data/interconnects.csv`` (one-way bandwidth per GPU and per-hop
latency, with its source). Used by the collectives of :mod:`.scaleout` and by the
collective kernels of :mod:`.workload`.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import ClassVar

from ._validate import describe
from .errors import InvalidParameter
from .gpus import Gpu, _read_csv
from .results import ResultMixin

__all__ = ["Interconnect", "default_links", "interconnect", "interconnect_names", "server_link"]


@dataclass(frozen=True)
class Interconnect(ResultMixin):
    """A GPU link from ``data/interconnects.csv``: one-way bandwidth and per-hop latency."""

    name: str
    kind: str
    bandwidth_bytes_per_s: float
    latency_s: float
    gpus: str
    source: str

    _units: ClassVar[dict[str, str]] = {"bandwidth_bytes_per_s": "B/s", "latency_s": "s"}


@functools.lru_cache(maxsize=1)
def _links() -> dict[str, Interconnect]:
    index: dict[str, Interconnect] = {}
    for r in _read_csv("interconnects.csv"):
        link = Interconnect(
            name=r["name"],
            kind=r["kind"],
            bandwidth_bytes_per_s=float(r["bandwidth_gb_per_s"]) * 1e9,
            latency_s=float(r["latency_us"]) * 1e-6,
            gpus=r["gpus"],
            source=r["source"],
        )
        for key in (r["name"], *r["aliases"].split(";")):
            if key.strip():
                index[key.strip().lower()] = link
    return index


def interconnect_names() -> list[str]:
    return list(dict.fromkeys(link.name for link in _links().values()))


def interconnect(name: str | Interconnect) -> Interconnect:
    """A link by name or alias (``'NVLink4'``, ``'NDR'``), case-insensitively."""
    if isinstance(name, Interconnect):
        return name
    if isinstance(name, str) and name.strip().lower() in _links():
        return _links()[name.strip().lower()]
    raise InvalidParameter(
        f"'link' must be one of {', '.join(interconnect_names())} (got {describe(name)})"
    )


# Links of a server and between servers, by architecture (interconnects.csv, 'gpus').
_DEFAULT_LINKS = {
    "volta": ("NVLink2", "IB-HDR"),
    "ampere_ga100": ("NVLink3", "IB-HDR"),
    "hopper": ("NVLink4", "IB-NDR"),
    "blackwell": ("NVLink5", "IB-XDR"),
}


def default_links(g: Gpu) -> tuple[Interconnect, Interconnect]:
    """(inside a server, between servers) for a GPU: NVLink of its generation and the
    InfiniBand of its clusters; PCIe 4 and HDR for GPUs without NVLink."""
    intra, inter = _DEFAULT_LINKS.get(g.architecture, ("PCIe4", "IB-HDR"))
    if "pcie" in g.name.lower():
        intra = "PCIe5" if g.architecture == "hopper" else "PCIe4"
    return interconnect(intra), interconnect(inter)


# The NVLink of the servers each network links (interconnects.csv, 'gpus': HDR with A100
# clusters, NDR with H100, XDR with B200).
_SERVER_OF_NETWORK = {"IB-HDR": "NVLink3", "IB-NDR": "NVLink4", "IB-XDR": "NVLink5"}


def server_link(network: str | Interconnect) -> Interconnect:
    """The NVLink inside the servers that a network link connects (HDR: A100's NVLink3,
    NDR: H100's NVLink4, XDR: B200's NVLink5)."""
    li = interconnect(network)
    if li.name not in _SERVER_OF_NETWORK:
        raise InvalidParameter(
            f"'link' must be a network link between servers ({', '.join(_SERVER_OF_NETWORK)}) "
            f"(got {describe(li.name)})"
        )
    return interconnect(_SERVER_OF_NETWORK[li.name])

"""Collectives across servers: every NIC of a server carries its share (core/topology.py)."""

from __future__ import annotations

import math

import pytest

from dlperf_widgets.core.errors import InvalidParameter
from dlperf_widgets.core.links import interconnect, server_link
from dlperf_widgets.core.scaleout import allgather_time, allreduce_time, collective, step_time
from dlperf_widgets.core.topology import group_per_node, topology_bandwidth
from dlperf_widgets.core.workload import price, workload, workload_constants

# Published all-reduce bus bandwidths between servers (nccl-tests all_reduce_perf, large
# messages): (GPU, NVLink, network, NICs per 8-GPU server, GB/s, source).
PUBLISHED_BUSBW = [
    ("A100-SXM4-80GB", "NVLink3", "IB-HDR", 8, 192.0,
     "NVIDIA/nccl issue 812 (2023): DGX A100, 8 x 200 Gb/s InfiniBand, 192 GB/s"),
    ("H100-SXM5-80GB", "NVLink4", "IB-NDR", 8, 330.93,
     "AI @ Georgia Tech / Voltage Park benchmark: 4 x 8 H100 SXM5, 8 x 400 Gb/s, NCCL 2.24.3"),
    ("A100-SXM4-80GB", "NVLink3", "IB-HDR", 1, 24.0,
     "NVIDIA/nccl issue 412 (2023): one 200 Gb/s HDR NIC per 8-GPU server, about 24 GB/s"),
]  # fmt: skip


@pytest.mark.parametrize("gpu,intra,inter,nics,busbw,source", PUBLISHED_BUSBW)
def test_model_bus_bandwidth_against_published_nccl_tests(gpu, intra, inter, nics, busbw, source):
    """The model's bus bandwidth of an all-reduce over 8-GPU servers, with the calibrated
    NVLink and NIC shares of kernel_efficiency.csv, is within 15 % of nccl-tests figures
    published for multi-server A100 HDR and H100 NDR clusters, with 8 NICs per server and
    with one: the network part scales with the NICs a server has, not with one NIC."""
    c = workload_constants(gpu)
    bw = topology_bandwidth(
        "all-reduce", 32, 8, 8, nics,
        interconnect(intra).bandwidth_bytes_per_s * c["collective_bandwidth"].value,
        interconnect(inter).bandwidth_bytes_per_s * c["network_bandwidth"].value,
    )  # fmt: skip
    assert bw / 1e9 == pytest.approx(busbw, rel=0.15), source


def test_rings_through_every_nic_closed_form():
    """64 GPUs in 8 NDR servers: 8 rings, one per NIC, give the ring formula with a bus
    bandwidth of 8 x 50 GB/s (NVLink's 8/7 x 450 GB/s is not the bound); one NIC per server
    is 8 times slower in the bandwidth term, the flat count of one ring through one port."""
    s, n = 14e9, 64
    lat = 5e-6  # interconnects.csv: IB-NDR per-hop latency, above NVLink's 3 us
    nccl = allreduce_time(s, n, link="IB-NDR")
    assert nccl == pytest.approx(2 * (n - 1) * lat + 2 * (n - 1) / n * s / 400e9)
    flat = allreduce_time(s, n, link="IB-NDR", nics_per_node=1)
    assert flat == pytest.approx(2 * (n - 1) * lat + 2 * (n - 1) / n * s / 50e9)
    assert allreduce_time(s, n, link="IB-NDR", gpus_per_node=1) == pytest.approx(flat)
    # all-gather: one pass of the same rings
    assert allgather_time(s, n, link="IB-NDR") == pytest.approx(
        (n - 1) * lat + (n - 1) / n * s / 400e9
    )
    r = collective(s, n, link="IB-NDR")
    assert r.bandwidth_bytes_per_s == pytest.approx(400e9) and r.time_s == pytest.approx(nccl)
    assert (r.gpus_per_node, r.nics_per_node) == (8, 8)


def test_nvlink_bounds_the_rings_when_nics_are_fast():
    """Each GPU sends k - 1 of its k ring hops over NVLink: with 8 XDR NICs per B200 server
    (8 x 100 GB/s) NVLink5's 900 GB/s x 8/7 = 1029 GB/s is above the network, but with
    16 NICs per server the NVLink bound takes over."""
    nvl, nic = 900e9, 100e9
    assert topology_bandwidth("all-reduce", 64, 8, 8, 8, nvl, nic) == pytest.approx(800e9)
    assert topology_bandwidth("all-reduce", 64, 8, 8, 16, nvl, nic) == pytest.approx(8 / 7 * nvl)
    assert server_link("IB-XDR").name == "NVLink5" and server_link("HDR").name == "NVLink3"


def test_group_geometry():
    """A group's GPUs per server: all of a data-parallel group at TP 1, half at TP 2, one at
    TP 8 (each of the 8 groups through its own NIC), and the whole group when it fits."""
    assert group_per_node(64, 1, 8) == 8
    assert group_per_node(32, 2, 8) == 4
    assert group_per_node(8, 8, 8) == 1
    assert group_per_node(4, 2, 8) == 4  # 4 GPUs 2 apart: one server


def test_price_uses_the_nics_of_the_group():
    """In price(), a data-parallel group with all 8 GPUs of each H100 server all-reduces at
    8 NICs' bandwidth; with tensor parallelism 8 each data-parallel group holds one GPU per
    server and gets one NIC (the 8 groups run side by side); nics_per_node=1 squeezes a
    whole server's traffic through one port."""
    eff = workload_constants("H100")["network_bandwidth"].value
    spec = "llama-2-7b"

    def dp_time(w, **kw):
        p = price(w, "H100", **kw)
        (i,) = [i for i, k in enumerate(w.kernels) if k.group == "dp"]
        return w.kernels[i], p.times_s[i]

    k, t = dp_time(workload(spec, batch=1, seq=2048, data_parallel=16))
    n, s = k.ranks, k.bytes
    ring = 2 * (n - 1) * 5e-6 + 2 * (n - 1) / n * s / (8 * 50e9 * eff)
    tree = 2 * math.ceil(math.log2(n)) * 5e-6 + 2 * s / (8 * 50e9 * eff)
    assert t == pytest.approx(min(ring, tree))
    _, t1 = dp_time(workload(spec, batch=1, seq=2048, data_parallel=16), nics_per_node=1)
    assert t1 > 7 * t
    k8, t8 = dp_time(workload(spec, batch=1, seq=2048, tensor_parallel=8, data_parallel=4))
    n8, s8 = k8.ranks, k8.bytes
    ring8 = 2 * (n8 - 1) * 5e-6 + 2 * (n8 - 1) / n8 * s8 / (50e9 * eff)
    tree8 = 2 * math.ceil(math.log2(n8)) * 5e-6 + 2 * s8 / (50e9 * eff)
    assert t8 == pytest.approx(min(ring8, tree8))


def test_all_to_all_does_not_aggregate_nics():
    """An all-to-all cannot combine data inside a server before the network (an NCCL
    maintainer, NVIDIA/nccl-tests issue 267): 16 GPUs in 2 servers each send half of their
    bytes to the other server through their own NIC, time S / 2 / b, not spread over 8."""
    nvl, nic, s, n = 450e9, 50e9, 1e9, 16
    bw = topology_bandwidth("all-to-all", n, 8, 8, 8, nvl, nic)
    assert (n - 1) / n * s / bw == pytest.approx(0.5 * s / nic)
    assert topology_bandwidth("p2p", 2, 1, 8, 8, nvl, nic) == pytest.approx(nic)


@pytest.mark.parametrize(
    "call,match",
    [
        (lambda: allreduce_time(1e9, 8, link="IB-NDR"), "'ranks' must exceed gpus_per_node"),
        (lambda: allreduce_time(1e9, 64, link="NVLink4", gpus_per_node=8), "'gpus_per_node' applies"),
        (lambda: allreduce_time(1e9, 64, bandwidth_bytes_per_s=1e9, nics_per_node=2), "'nics_per_node' needs"),
        (lambda: allreduce_time(1e9, 64, link="IB-NDR", nics_per_node=0), "'nics_per_node' must be"),
        (lambda: collective(1e9, 64, link="IB-NDR", gpus_per_node=-8), "'gpus_per_node' must be"),
        (lambda: price(workload("llama-2-7b", data_parallel=16), nics_per_node=1.5), "'nics_per_node'"),
        (lambda: server_link("NVLink4"), "'link' must be a network link"),
        (lambda: step_time(gpus=16, global_batch=64, nics_per_node=0), "'nics_per_node' must be"),
    ],
)  # fmt: skip
def test_bad_topology_input(call, match):
    """Bad topology parameters are one sentence naming the parameter, the rule and the value."""
    with pytest.raises(InvalidParameter, match=match):
        call()

"""Collectives over a cluster's topology: NVLink inside a server, the server's NICs between.

A communication group of ``ranks`` GPUs that spans servers holds ``per_node`` of its GPUs in
each server (all 8 of an 8-GPU server when tensor parallelism is 1; one when a tensor-parallel
group of 8 fills the server). NCCL prices nothing itself; what it does is this:

- **All-reduce, all-gather, reduce-scatter.** NCCL runs several rings at once ("channels"),
  and on a server with one NIC per GPU each ring leaves the server through a different NIC,
  so the server's traffic is spread over all of its NICs (NCCL documentation, environment
  variables NCCL_CROSS_NIC and NCCL_MIN_NCHANNELS; Jeaugey, "Massively Scale Your Deep
  Learning Training with NCCL 2.4", NVIDIA technical blog 2019, for the rings and the
  double binary trees). With ``per_node`` = k rings, each carrying 1/k of the data, every
  ring link carries 2 (n - 1)/n x S / k bytes of an all-reduce. Each GPU sends one of its k
  ring hops through the network and k - 1 over NVLink, so the time is

      2 (n - 1)/n x S x max(1 / (k b), (k - 1) / (k B_nvl))

  with b the network bandwidth of one GPU (a NIC's bandwidth x NICs per server / GPUs per
  server: the groups that run side by side in a server share its NICs) and B_nvl the GPU's
  one-way NVLink bandwidth: the ring formula with a bus bandwidth of
  min(k b, k B_nvl / (k - 1)). A two-level all-reduce (reduce-scatter in the server,
  all-reduce of each GPU's 1/k across the servers, all-gather in the server) moves the same
  bytes through each NIC; both use every NIC, and neither is bounded by a single NIC.
- **All-to-all** (expert parallelism) cannot combine data before it leaves the server: a GPU
  sends (n - k)/n of its S bytes to other servers through its own share of the NICs, and
  (k - 1)/n over NVLink (an NCCL maintainer: "Alltoall cannot aggregate the bandwidth of
  multiple NICs", NVIDIA/nccl-tests issue 267, 2024).
- **Point to point** (pipeline stages on different servers): one GPU's share of the NICs.

``nics_per_node=1`` on 8-GPU servers gives the pessimistic count of one flat ring through a
single NIC per server: every GPU's network traffic squeezed through one port.
"""

from __future__ import annotations

__all__ = ["group_per_node", "topology_bandwidth"]


def group_per_node(ranks: int, stride: int, gpus_per_node: int) -> int:
    """GPUs of a group of ``ranks`` (``stride`` GPUs apart) that share one server of
    ``gpus_per_node``: ``ranks`` when the group fits in a server."""
    if ranks * stride <= gpus_per_node:
        return ranks
    return max(1, min(ranks, gpus_per_node // stride))


def topology_bandwidth(
    op: str,
    ranks: int,
    per_node: int,
    gpus_per_node: int,
    nics_per_node: int,
    link_bytes_per_s: float,
    nic_bytes_per_s: float,
) -> float:
    """Bus bandwidth of a collective across servers, B in the ring formulas
    (n - 1)/n x S / B (one pass) and 2 (n - 1)/n x S / B (all-reduce): see the module's text.

    ``link_bytes_per_s`` is a GPU's one-way NVLink bandwidth, ``nic_bytes_per_s`` one NIC's;
    ``per_node`` the group's GPUs in each server (:func:`group_per_node`); a group that fits
    in one server (``per_node == ranks``) runs over NVLink alone.
    """
    n, k = ranks, per_node
    if k >= n:
        return link_bytes_per_s
    per_gpu = nic_bytes_per_s * nics_per_node / gpus_per_node
    if op == "all-to-all":
        # (k - 1)/n of S over NVLink, (n - k)/n through the GPU's own NIC share
        worst = max((k - 1) / link_bytes_per_s, (n - k) / per_gpu)
        return (n - 1) / worst
    if op == "p2p":
        return min(per_gpu, link_bytes_per_s)
    net = k * per_gpu
    return net if k == 1 else min(net, k * link_bytes_per_s / (k - 1))

"""Canonical component ids (shared/spec/bundle-format.md section 6)."""

from __future__ import annotations

from vsandx.faults import COMPONENT_KINDS

CLUSTER_ID = "cluster"


def host_id(hostname: str) -> str:
    return f"host:{hostname}"


def nic_id(hostname: str, vmnic: str) -> str:
    return f"nic:{hostname}/{vmnic}"


def diskgroup_id(hostname: str, cache_device: str) -> str:
    return f"diskgroup:{hostname}/{strip_partition(cache_device)}"


def disk_id(hostname: str, device: str) -> str:
    return f"disk:{hostname}/{strip_partition(device)}"


def strip_partition(device: str) -> str:
    """`naa.5000c500a1b2c3d4:2` -> `naa.5000c500a1b2c3d4` (CMMDS devName carries a partition)."""
    return device.split(":", 1)[0]


def kind_of(component_id: str) -> str:
    """The kind of a canonical id; raises ValueError for anything that is not one."""
    if component_id == CLUSTER_ID:
        return "cluster"
    kind, sep, rest = component_id.partition(":")
    if not sep or not rest or kind not in COMPONENT_KINDS or kind == "cluster":
        raise ValueError(f"not a component id: {component_id!r}")
    return kind


def host_of(component_id: str) -> str | None:
    """The host name a component belongs to (None for the cluster)."""
    kind = kind_of(component_id)
    if kind == "cluster":
        return None
    rest = component_id.split(":", 1)[1]
    return rest if kind == "host" else rest.split("/", 1)[0]

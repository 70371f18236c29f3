"""BundleTensors: the typed, versioned result that training and prediction both consume."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final

import numpy as np

from pipeline.channels import KIND_CHANNEL_DEFS, KIND_CHANNELS, KIND_STATIC

if TYPE_CHECKING:
    from pipeline.citations import Citation

# Bump on any change to channels, static features, units or scaling: cached tensors key on it.
# 2: nic ev.link_down/ev.link_up also count vobd's link VOBs (one per transition, covered where vobd or
# vmkernel is); a link-down port's speed_gbps/duplex_full are unknown (masked), not 0 and half duplex.
# 4: nic static rated_gbps (the rated speed in nicinfo's Description); speed_gbps/duplex_full from the
# driver's last logged link-up line where nicinfo gives none.
# 5: cluster static vm_closed_loop (Little's law per VM: closed-loop threads or a paced rate).
# 6: cluster static vm_inflight_spread (how much the in-flight level of the VMs that could be a one- or
# two-thread benchmark moves; threads hold it still).
# 7: cluster static vm_disk_oio (vscsiStats: outstanding I/Os per virtual disk when one is issued).
# 8: cluster vm.active counts VMs doing any I/O at a step (a VM that read and wrote counted twice).
# 9: vm_disk_oio is each disk's histogram median as grouped data (interpolated in its bucket's class of
# whole numbers), not the top of the bucket that holds it.
# 10: nic traffic_share: where no vmnic of a host follows its vmknic sample by sample, a vmnic that moves
# the vmknic's bytes over the window (within a tenth) is read by volume before byte shares stand in.
# 11: ... only where the vmknic moves at least 64 KB/s (rx + tx); below it an idle port moves as much.
SCHEMA_VERSION: Final = "vsandx.tensors/11"


@dataclass
class KindTensors:
    kind: str
    ids: tuple[str, ...]  # canonical component ids, sorted
    values: np.ndarray  # (n_components, channels, T) float32, 0 where masked
    mask: np.ndarray  # (n_components, channels, T) bool, True where observed
    static: np.ndarray  # (n_components, n_static) float32
    static_mask: np.ndarray  # (n_components, n_static) bool
    host_index: np.ndarray  # (n_components,) int32 index into kinds["host"].ids; -1 for the cluster
    group_index: np.ndarray  # (n_components,) int32 disk -> index into kinds["diskgroup"].ids, else -1

    @property
    def channels(self) -> tuple[str, ...]:
        return KIND_CHANNELS[self.kind]

    @property
    def static_names(self) -> tuple[str, ...]:
        return KIND_STATIC[self.kind]

    @classmethod
    def empty(cls, kind: str, ids: tuple[str, ...], T: int) -> KindTensors:
        n, c, s = len(ids), len(KIND_CHANNELS[kind]), len(KIND_STATIC[kind])
        return cls(
            kind,
            ids,
            np.zeros((n, c, T), np.float32),
            np.zeros((n, c, T), bool),
            np.zeros((n, s), np.float32),
            np.zeros((n, s), bool),
            np.full(n, -1, np.int32),
            np.full(n, -1, np.int32),
        )


@dataclass
class BundleTensors:
    schema_version: str
    hosts: tuple[str, ...]  # CMMDS host names, sorted
    host_bundles: tuple[str, ...]  # hosts whose support bundle is in the upload
    start: int  # epoch seconds (UTC) of step 0
    step_s: int
    T: int
    native_interval_s: int
    kinds: dict[str, KindTensors]  # every kind of vsandx.faults.COMPONENT_KINDS, maybe with 0 rows
    missing: tuple[str, ...] = ()
    warnings: tuple[str, ...] = ()
    timing_ms: dict[str, float] = field(default_factory=dict)
    # component id -> the log lines behind its event channels (pipeline.citations), for findings to cite.
    # Beside the tensors, not in them: no model reads it, the dataset cache does not store it (a tensor
    # loaded from the cache has none), and it is bounded (a few lines per component and event kind).
    citations: dict[str, tuple[Citation, ...]] = field(default_factory=dict)

    @property
    def context(self) -> np.ndarray:
        """Cluster-level context (n_static of the cluster,) float32."""
        return self.kinds["cluster"].static[0]

    @property
    def component_ids(self) -> list[str]:
        return [cid for kt in self.kinds.values() for cid in kt.ids]

    def without(self, sources: set[str]) -> BundleTensors:
        """The bundle as if nothing of `sources` (pipeline.channels' channel sources: "event" for log
        events, "esxtop", ...) had been collected: those channels masked and zeroed."""
        kinds = {}
        for k, kt in self.kinds.items():
            drop = np.array([c.source in sources for c in KIND_CHANNEL_DEFS[k]])[None, :, None]  # (1, C, 1)
            mask = kt.mask & ~drop
            kinds[k] = dataclasses.replace(kt, mask=mask, values=np.where(mask, kt.values, np.float32(0)))
        return dataclasses.replace(self, kinds=kinds)

    def summary(self) -> dict[str, Any]:
        """A JSON-able description: what `vsandx parse --json` prints."""
        import datetime as dt

        def iso(t: int) -> str:
            return dt.datetime.fromtimestamp(t, dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")

        kinds = {}
        for k, kt in self.kinds.items():
            cover = kt.mask.mean(axis=(0, 2)) if kt.mask.size else np.zeros(len(kt.channels))
            kinds[k] = {
                "count": len(kt.ids),
                "ids": list(kt.ids),
                "shape": list(kt.values.shape),
                "channels": list(kt.channels),
                "channels_without_data": [c for c, v in zip(kt.channels, cover, strict=True) if v == 0],
                "static": list(kt.static_names),
            }
        return {
            "schema": self.schema_version,
            "hosts": list(self.hosts),
            "host_bundles": list(self.host_bundles),
            "window": {
                "start": iso(self.start),
                "end": iso(self.start + self.step_s * self.T),
                "steps": self.T,
                "step_s": self.step_s,
            },
            "interval_s": self.native_interval_s,
            "components": kinds,
            "missing": list(self.missing),
            "warnings": list(self.warnings),
            "timing_ms": {k: round(v, 2) for k, v in self.timing_ms.items()},
        }

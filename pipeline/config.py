"""Pipeline configuration: reading limits and the tensor grid, defaulted from vsandx.settings."""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any

MiB = 1024 * 1024


@dataclass(frozen=True)
class PipelineConfig:
    # Reading limits (section "Deliver 1" of the pipeline issue); all counted on bytes produced.
    max_members: int = 50_000  # headers seen, any type, nested archives included
    max_member_bytes: int = 1024 * MiB  # uncompressed bytes read from one member
    max_total_bytes: int = 4096 * MiB  # uncompressed bytes produced for the whole upload
    max_ratio: float = 250.0  # uncompressed / compressed bytes, checked once ratio_min_bytes produced
    ratio_min_bytes: int = 64 * MiB
    max_depth: int = 2  # archive-in-archive nesting (vCenter zip of host .tgz = depth 1)
    max_name_len: int = 1024
    max_header_bytes: int = 1 * MiB  # pax / GNU long-name headers, read whole by tarfile
    # A nested zip inside a stream (tar, or a compressed zip entry) cannot be seeked: it is held in
    # memory up to this size and refused past it. A stored entry of an outer zip is read in place.
    max_nested_zip_bytes: int = 128 * MiB
    # Content budgets (issue 18): a few bytes of upload must not become gigabytes of records. A 64-host
    # cluster (40 disks and 4 NICs per host, 50 VMs per host, 48 h at 300 s) parses with no budget hit:
    # 31 M perf values, 436 MB peak RSS. Each breach names the limit and the file.
    max_components: int = 4096  # per kind (host, nic, diskgroup, disk); 64 hosts x 40 disks = 2,560
    max_perf_entities: int = 50_000  # distinct perf entities (64 x 200 VMs + 64 x ~60 others = 16,700)
    max_samples: int = 50_000  # samples per perf entity (48 h at 20 s = 8,640)
    max_perf_values: int = 48_000_000  # samples x metrics kept (8 bytes each), esxtop's included
    max_entity_bytes: int = 32 * MiB  # text of one perf entity (48 h at 20 s, 60 metrics: ~5 MB)
    # Bytes parsed from one streamed source (perf dump, perf JSON, CMMDS, esxtop CSV): memory does not
    # grow with it (the budgets above bound what is kept); it bounds time. A 64-host dump over 48 h at
    # 300 s with 50 VMs per host is ~290 MB.
    max_source_bytes: int = 1024 * MiB
    max_table_bytes: int = 8 * MiB  # one esxcli table or vscsiStats file, read whole (real: a few KB)
    max_log_bytes: int = 32 * MiB  # bytes parsed from one log file (ESXi rotates at a few MB); then a warning
    max_line_bytes: int = 64 * 1024  # one log line; longer ones are skipped before any regex
    max_events: int = 20_000  # log events kept per component (device/vmnic/UUID) and event kind
    max_events_total: int = 500_000  # log events kept over the whole bundle
    max_esxtop_columns: int = 200_000  # esxtop CSV columns (real captures: a few thousand)
    # Tensor grid: T steps, at a multiple of the native interval, never coarser than max_step_s
    # unless the native interval itself is. 180 steps of up to 20 minutes hold 60 hours: every capture
    # the bundle format allows (1 to 48 h) whole. At 300 s (15 h) a 48-hour capture lost what lay
    # outside the busiest 15 hours: on the 200-bundle field test set, 5 labelled faults had no trace
    # left in the tensors (a resync that had finished, a fault that began after the window).
    grid_steps: int = 180
    max_step_s: int = 1200

    @classmethod
    def from_settings(cls) -> PipelineConfig:
        from vsandx.settings import get_pipeline_settings

        s = get_pipeline_settings()
        kw: dict[str, Any] = {}
        for f in fields(cls):
            v = getattr(s, f"pipeline_{f.name}", None)
            if v is not None:
                kw[f.name] = v
        return cls(**kw)

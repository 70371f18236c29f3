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
    # Tensor grid: T steps, at a multiple of the native interval, never coarser than max_step_s
    # unless the native interval itself is.
    grid_steps: int = 180
    max_step_s: int = 300

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

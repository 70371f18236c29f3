"""The pipeline's one entry point: bundle (path, bytes or file) -> BundleTensors."""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from typing import BinaryIO

from pipeline.config import PipelineConfig
from pipeline.errors import NoPerfData
from pipeline.parse.bundle import ParsedBundle, parse_members
from pipeline.read import ReadReport, iter_members
from pipeline.tensorize import tensorize
from pipeline.tensors import BundleTensors
from pipeline.topology import Topology, build_topology

Source = str | os.PathLike[str] | bytes | BinaryIO


@dataclass
class Parsed:
    records: ParsedBundle
    topology: Topology
    read_parse_ms: float


def _name(source: Source) -> str:
    if isinstance(source, str | os.PathLike):
        return os.fspath(source)
    if isinstance(source, bytes | bytearray):
        return "<upload>"
    return str(getattr(source, "name", "<upload>"))


def parse_bundle(source: Source, config: PipelineConfig | None = None) -> Parsed:
    """Read and parse every source of the bundle and resolve its topology (no tensors)."""
    cfg = config or PipelineConfig()
    t0 = time.perf_counter()
    report = ReadReport()
    name = _name(source)
    records = parse_members(iter_members(source, cfg, report), name, report)
    if not any(len(e.times) and e.metrics for e in records.perf.values()):
        raise NoPerfData(name)
    topo = build_topology(records)
    return Parsed(records, topo, (time.perf_counter() - t0) * 1000)


def load_bundle(source: Source, config: PipelineConfig | None = None) -> BundleTensors:
    """Bundle -> BundleTensors. Raises only pipeline.errors.BundleError subclasses on bad input."""
    cfg = config or PipelineConfig()
    parsed = parse_bundle(source, cfg)
    t1 = time.perf_counter()
    bt = tensorize(parsed.records, parsed.topology, cfg)
    bt.timing_ms = {"read_parse": parsed.read_parse_ms, "tensorize": (time.perf_counter() - t1) * 1000}
    return bt

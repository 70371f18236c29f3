"""The pipeline's one entry point: bundle (path, bytes or file) -> BundleTensors."""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from pipeline.config import PipelineConfig
from pipeline.errors import NoPerfData, NotABundle, SeveralClusters
from pipeline.parse.bundle import ParsedBundle, parse_members
from pipeline.read import ReadReport, iter_members
from pipeline.streams import compression_of, decompressor, looks_like_tar
from pipeline.tensorize import tensorize
from pipeline.tensors import BundleTensors
from pipeline.topology import Topology, build_topology, check_components

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


def check_path(path: str | os.PathLike[str]) -> None:
    """Fail fast, in milliseconds and before any model loads: `path` is a directory, or a file that
    starts like a zip, a tar or a compressed tar. Raises NotABundle naming the file and the reason.
    Passing says nothing of what is inside: load_bundle still checks everything."""
    p = Path(path)
    if p.is_dir():
        return
    if not p.exists():
        raise NotABundle(str(p), "no such file or directory")
    if not p.is_file():
        raise NotABundle(str(p), "not a regular file or a directory")
    with open(p, "rb", buffering=0) as fh:
        head = fh.read(1024)
        if head.startswith((b"PK\x03\x04", b"PK\x05\x06")) or looks_like_tar(head[:512]):
            return
        comp = compression_of(head)
        if comp is None:
            raise NotABundle(str(p), "not a directory, tar, tgz or zip archive")
        fh.seek(0)
        try:
            first = decompressor(comp, fh).read(512)
        except Exception as e:  # OSError, EOFError, lzma.LZMAError: each module raises its own on garbage
            raise NotABundle(str(p), f"{comp}-compressed, but the data is damaged ({e})") from e
    if not looks_like_tar(first):
        raise NotABundle(str(p), f"{comp}-compressed, but not a tar archive inside")


def parse_bundle(source: Source, config: PipelineConfig | None = None, name: str | None = None) -> Parsed:
    """Read and parse every source of the bundle and resolve its topology (no tensors). `name`: what
    errors call the upload (default: its path or file name)."""
    cfg = config or PipelineConfig()
    t0 = time.perf_counter()
    report = ReadReport()
    name = name or _name(source)
    records = parse_members(iter_members(source, cfg, report, name), name, report, cfg)
    if not any(len(e.times) and e.metrics for e in records.perf.values()):
        raise NoPerfData(name)
    clusters = sorted({e.eid for e in records.perf.values() if e.etype == "cluster-domclient"})
    if len(clusters) > 1:  # a folder of several uploads is not one cluster of all their hosts
        shown = ", ".join(c[:64] for c in clusters[:5]) + (", …" if len(clusters) > 5 else "")  # names are untrusted
        raise SeveralClusters(name, f"holds {len(clusters)} separate clusters ({shown}); "
                                    "diagnose each cluster's bundle on its own")  # fmt: skip
    topo = build_topology(records)
    check_components(topo, cfg.max_components, name)
    return Parsed(records, topo, (time.perf_counter() - t0) * 1000)


def load_bundle(source: Source, config: PipelineConfig | None = None, name: str | None = None) -> BundleTensors:
    """Bundle -> BundleTensors. Raises only pipeline.errors.BundleError subclasses on bad input. A path
    is streamed from disk member by member (never read whole); `name` is what errors call it."""
    cfg = config or PipelineConfig()
    parsed = parse_bundle(source, cfg, name)
    t1 = time.perf_counter()
    bt = tensorize(parsed.records, parsed.topology, cfg)
    bt.timing_ms = {"read_parse": parsed.read_parse_ms, "tensorize": (time.perf_counter() - t1) * 1000}
    return bt

"""Route every member of an upload to the parser its content calls for; collect plain records."""

from __future__ import annotations

import csv
import datetime as dt
import hashlib
import io
import re
import xml.etree.ElementTree as ET
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Final

from pipeline.errors import CorruptMember
from pipeline.parse import cmmds, esxcli, esxtop, logs, perfdump, vscsistats
from pipeline.read import Member, ReadReport

HOST_DIR: Final = re.compile(r"^esx-(?P<host>.+)-(?P<ts>\d{4}-\d{2}-\d{2}--\d{2}\.\d{2})(?:-(?P<n>\d+))?$")
MAX_TEXT_BYTES: Final = 256 * 1024 * 1024  # small-table sources read whole: CMMDS, esxcli, vscsiStats
MAX_LOG_LINE: Final = 1024 * 1024
MAX_DOC_BYTES: Final = 256 * 1024 * 1024  # one perf dump XML document (one line); 16 hosts x 48 h at 20 s fit
# What a malformed file can make a parser raise; turned into a warning for that file only.
PARSE_ERRORS: Final = (
    ValueError,
    KeyError,
    IndexError,
    TypeError,
    UnicodeError,
    OverflowError,
    RecursionError,
    csv.Error,
    ET.ParseError,
    CorruptMember,
)


@dataclass
class HostFolder:
    path: str  # the folder inside the upload
    name_hint: str  # host name from the folder name (hint only: host names contain dashes)
    collected: int | None = None  # collection time from the folder name, epoch seconds UTC
    storage: list[esxcli.StorageDevice] = field(default_factory=list)
    vmknics: list[esxcli.VmkNic] = field(default_factory=list)
    nics: list[esxcli.NicRow] = field(default_factory=list)
    logs: list[logs.LogFile] = field(default_factory=list)
    esxtop: list[esxtop.EsxtopCapture] = field(default_factory=list)


@dataclass
class ParsedBundle:
    source: str
    perf: dict[str, perfdump.PerfEntity] = field(default_factory=dict)
    cmmds: cmmds.Cmmds = field(default_factory=cmmds.Cmmds)
    folders: dict[str, HostFolder] = field(default_factory=dict)
    loose_esxtop: list[tuple[str, esxtop.EsxtopCapture]] = field(default_factory=list)
    loose_logs: list[tuple[str, logs.LogFile]] = field(default_factory=list)
    vscsi: list[tuple[str, list[vscsistats.Histogram]]] = field(default_factory=list)
    files: list[tuple[str, str]] = field(default_factory=list)  # (path, kind) of every file used
    warnings: list[str] = field(default_factory=list)
    read: ReadReport = field(default_factory=ReadReport)

    def warn(self, msg: str) -> None:
        if len(self.warnings) < 200:
            self.warnings.append(msg)


def host_folder_of(path: str) -> tuple[str, str, int | None] | None:
    """(folder path, host name hint, collection time) of the host support bundle a member lies in."""
    parts = path.split("/")
    for i, comp in enumerate(parts[:-1]):
        m = HOST_DIR.match(comp)
        if m:
            try:
                when = dt.datetime.strptime(m["ts"], "%Y-%m-%d--%H.%M").replace(tzinfo=dt.UTC)
                collected: int | None = int(when.timestamp())
            except ValueError:
                collected = None
            return "/".join(parts[: i + 1]), m["host"], collected
    return None


def classify(path: str, head: bytes) -> str | None:
    if path == "labels.json" or (path.endswith("/labels.json") and path.count("/") <= 1):
        return None  # ground truth of simulated bundles: never read when diagnosing
    if perfdump.sniff_dump(head):
        return "perfdump"
    if perfdump.sniff_json(head):
        return "perfjson"
    if cmmds.sniff(head):
        return "cmmds"
    if esxcli.sniff_storage(head):
        return "storage"
    if esxcli.sniff_network(head):
        return "network"
    if esxtop.sniff(head):
        return "esxtop"
    if vscsistats.sniff(head):
        return "vscsistats"
    if esxcli.sniff_nicinfo(head):
        return "nicinfo"
    if logs.sniff(head):
        return "log"
    return None


class _Collector:
    def __init__(self, out: ParsedBundle) -> None:
        self.out = out
        self.perf = perfdump.PerfParser()
        self.seen_dumps: set[bytes] = set()
        self.seen_cmmds: set[bytes] = set()

    def folder(self, path: str) -> HostFolder | None:
        hf = host_folder_of(path)
        if hf is None:
            return None
        f = self.out.folders.get(hf[0])
        if f is None:
            f = self.out.folders[hf[0]] = HostFolder(hf[0], hf[1], hf[2])
        return f

    def text(self, m: Member) -> str | None:
        data = m.open().read(MAX_TEXT_BYTES + 1)
        if len(data) > MAX_TEXT_BYTES:
            self.out.warn(f"{m.path}: larger than {MAX_TEXT_BYTES} bytes, ignored")
            return None
        return data.decode("utf-8", "replace")

    def member(self, m: Member) -> None:
        kind = classify(m.path, m.head)
        if kind is None:
            return
        self.out.files.append((m.path, kind))
        try:
            self._dispatch(kind, m)
        except PARSE_ERRORS as e:
            self.out.warn(f"{m.path}: unreadable {kind} ({type(e).__name__}: {str(e)[:120]})")

    def _dispatch(self, kind: str, m: Member) -> None:
        folder = self.folder(m.path)
        if kind == "perfdump":
            fp = hashlib.sha1(m.head).digest()
            if fp in self.seen_dumps:
                return  # the same cluster-wide dump from another host bundle
            self.seen_dumps.add(fp)
            self.perf.feed_dump(_lines(m.open(), MAX_DOC_BYTES, self.out, m.path), m.path)
        elif kind == "perfjson":
            data = m.open().read(MAX_TEXT_BYTES + 1)
            if len(data) <= MAX_TEXT_BYTES:
                self.perf.feed_json(perfdump.load_json(data), m.path)
        elif kind == "cmmds":
            text = self.text(m)
            fp = hashlib.sha1(text.encode()).digest() if text is not None else b""
            if text is not None and fp not in self.seen_cmmds:
                self.seen_cmmds.add(fp)
                cm = cmmds.parse_cmmds(text, m.path)
                self.out.cmmds.merge(cm)
                for w in cm.warnings:
                    self.out.warn(w)
        elif kind == "esxtop":
            cap = esxtop.parse_esxtop(m.open(), m.path)
            if cap is None:
                self.out.warn(f"{m.path}: esxtop header not found")
            elif folder is not None:
                folder.esxtop.append(cap)
            else:
                self.out.loose_esxtop.append((m.path, cap))
            if cap is not None and cap.rows_skipped:
                self.out.warn(f"{m.path}: {cap.rows_skipped} malformed esxtop rows skipped")
        elif kind == "log":
            src = logs.source_of(m.path)
            if src == "other":
                return
            lf = logs.parse_log(_lines(m.open(), MAX_LOG_LINE, self.out, m.path), src)
            if folder is not None:
                folder.logs.append(lf)
            else:
                self.out.loose_logs.append((m.path, lf))
        elif kind == "vscsistats":
            text = self.text(m)
            if text is not None:
                self.out.vscsi.append((m.path, vscsistats.parse_vscsistats(text)))
        else:
            text = self.text(m)
            if text is None or folder is None:
                if folder is None:
                    self.out.warn(f"{m.path}: {kind} output outside a host folder ignored")
                return
            if kind == "storage":
                folder.storage = esxcli.parse_storage_list(text)
            elif kind == "network":
                folder.vmknics = esxcli.parse_network_list(text)
            elif kind == "nicinfo":
                folder.nics = esxcli.parse_nicinfo(text)


def _lines(f: io.BufferedReader, limit: int, out: ParsedBundle, where: str) -> Iterator[bytes]:
    """Lines of at most `limit` bytes; a longer one is skipped (read through in chunks) with a warning."""
    while True:
        line = f.readline(limit)
        if not line:
            return
        if len(line) == limit and not line.endswith(b"\n"):
            out.warn(f"{where}: a line longer than {limit} bytes skipped")
            while (chunk := f.readline(1 << 20)) and not chunk.endswith(b"\n"):
                pass
            continue
        yield line


def parse_members(members: Iterable[Member], source: str, report: ReadReport) -> ParsedBundle:
    out = ParsedBundle(source=source, read=report)
    col = _Collector(out)
    for m in members:
        col.member(m)
    out.perf = col.perf.entities
    for w in col.perf.warnings:
        out.warn(w)
    return out

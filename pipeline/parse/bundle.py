"""Route every member of an upload to the parser its content calls for; collect plain records."""

from __future__ import annotations

import csv
import datetime as dt
import hashlib
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Final

from pipeline.config import PipelineConfig
from pipeline.errors import CorruptMember, LimitExceeded
from pipeline.parse import cmmds, esxcli, esxtop, logs, logtime, perfdump, perfstream, vscsistats
from pipeline.parse.textio import BoundedLines, chunks, read_bounded
from pipeline.read import Member, ReadReport

HOST_DIR: Final = re.compile(r"^esx-(?P<host>.+)-(?P<ts>\d{4}-\d{2}-\d{2}--\d{2}\.\d{2})(?:-(?P<n>\d+))?$")
# Budgets whose breach costs one file, not the bundle: the file is left out (or cut) with a warning.
# The perf dump is the bundle's substance: any breach there refuses the bundle.
SOFT_LIMITS: Final = frozenset({"max_source_bytes", "max_esxtop_columns"})
SMALL_CMMDS: Final = 4 * 1024 * 1024
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
    if logtime.sniff(head):
        return "log"
    return None


class _Collector:
    def __init__(self, out: ParsedBundle, config: PipelineConfig) -> None:
        self.out = out
        self.cfg = config
        self.perf = perfdump.PerfParser(config)
        self.events = logs.EventBudget(config.max_events, config.max_events_total)
        self.seen_dumps: set[bytes] = set()
        self.seen_cmmds: set[bytes] = set()
        self.esxtop_values = 0

    def folder(self, path: str) -> HostFolder | None:
        hf = host_folder_of(path)
        if hf is None:
            return None
        f = self.out.folders.get(hf[0])
        if f is None:
            f = self.out.folders[hf[0]] = HostFolder(hf[0], hf[1], hf[2])
        return f

    def text(self, m: Member) -> str | None:
        limit = self.cfg.max_table_bytes
        data = read_bounded(m.open(), limit)
        if data is None:
            self.out.warn(f"{m.path}: larger than {limit} bytes, ignored (max_table_bytes)")
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
        except LimitExceeded as e:
            if e.limit not in SOFT_LIMITS or kind in ("perfdump", "perfjson"):
                raise
            self.out.warn(f"{e}; {kind} file ignored")

    def _dispatch(self, kind: str, m: Member) -> None:
        folder = self.folder(m.path)
        if kind == "perfdump":
            fp = hashlib.sha1(m.head).digest()
            if fp in self.seen_dumps:
                return  # the same cluster-wide dump from another host bundle
            self.seen_dumps.add(fp)
            perfstream.feed_dump_stream(self.perf, m.open(), m.path)
        elif kind == "perfjson":
            perfstream.feed_json_stream(self.perf, m.open(), m.path)
        elif kind == "cmmds":
            self._cmmds(m)
        elif kind == "esxtop":
            self._esxtop(m, folder)
        elif kind == "log":
            src = logs.source_of(m.path)
            if src == "other":
                return
            cfg = self.cfg
            lines = BoundedLines(m.open(), cfg.max_line_bytes, cfg.max_log_bytes)
            lf = logs.parse_log(lines, src, self.events, folder.path if folder is not None else m.path, m.path)
            for w in lines.warnings(m.path, "max_log_bytes"):
                self.out.warn(w)
            if lf.dropped:
                self.out.warn(
                    f"{m.path}: {lf.dropped} log events not kept (max_events per component and kind, "
                    f"max_events_total {cfg.max_events_total}): event counts there are cut short"
                )
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

    def _cmmds(self, m: Member) -> None:
        # Every host bundle repeats the cluster's directory: a small one is fingerprinted before it is
        # parsed (parsed once); a large one is parsed as it streams and merged once.
        f = m.open()
        h = hashlib.sha1()
        first = f.read(SMALL_CMMDS + 1)
        h.update(first)
        if len(first) <= SMALL_CMMDS and h.digest() in self.seen_cmmds:
            return

        def hashed() -> Iterator[bytes]:
            yield first
            for c in chunks(f, self.cfg.max_source_bytes - len(first), m.path):
                h.update(c)
                yield c

        cm = cmmds.parse_cmmds_stream(hashed(), m.path, self.cfg.max_components)
        if h.digest() in self.seen_cmmds:
            return
        self.seen_cmmds.add(h.digest())
        self.out.cmmds.merge(cm)
        for w in cm.warnings:
            self.out.warn(w)

    def _esxtop(self, m: Member, folder: HostFolder | None) -> None:
        # esxtop values share the perf dump's budget: what is left of it after the captures so far
        cap = esxtop.parse_esxtop(m.open(), m.path, self.cfg, self.cfg.max_perf_values - self.esxtop_values)
        if cap is None:
            self.out.warn(f"{m.path}: esxtop header not found")
            return
        self.esxtop_values += cap.values
        if folder is not None:
            folder.esxtop.append(cap)
        else:
            self.out.loose_esxtop.append((m.path, cap))
        if cap.rows_skipped:
            self.out.warn(f"{m.path}: {cap.rows_skipped} malformed esxtop rows skipped")
        if cap.long_lines:
            self.out.warn(f"{m.path}: {cap.long_lines} esxtop rows longer than the column budget skipped")
        if cap.truncated:
            self.out.warn(
                f"{m.path}: esxtop rows past {self.cfg.max_source_bytes} bytes (max_source_bytes) or "
                f"{self.cfg.max_perf_values} values (max_perf_values) ignored: the capture is cut short"
            )


def parse_members(
    members: Iterable[Member], source: str, report: ReadReport, config: PipelineConfig | None = None
) -> ParsedBundle:
    out = ParsedBundle(source=source, read=report)
    col = _Collector(out, config or PipelineConfig())
    for m in members:
        col.member(m)
    out.perf = col.perf.entities
    for w in col.perf.warnings:
        out.warn(w)
    for s in report.skipped:
        out.warn(f"skipped {s}")
    if report.n_skipped > len(report.skipped):
        out.warn(f"skipped {report.n_skipped - len(report.skipped)} more non-regular members")
    return out

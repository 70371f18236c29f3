"""Content budgets (issue 18): each limit named in its error or warning; linear-time regexes; zip
structure checked before decompression; streamed parsers equal to their whole-file forms."""

from __future__ import annotations

import gzip
import io
import json
import re
import struct
import tarfile
import time
import zipfile
from collections.abc import Callable, Iterator
from functools import lru_cache
from types import ModuleType
from typing import TypeVar

import numpy as np
import pytest

from data.simulate.archive import tar_bytes
from data.simulate.generate import simulate_bundle
from pipeline import PipelineConfig, load_bundle
from pipeline.errors import CorruptArchive, LimitExceeded
from pipeline.parse import bundle, cmmds, esxcli, esxtop, linkspeed, logs, logtime, perfdump, perfstream, textio
from pipeline.read import ReadReport, iter_members

MiB = 1024 * 1024
T = TypeVar("T")
SI = "2026-03-02 10:00:00,2026-03-02 10:00:20,2026-03-02 10:00:40"


class Trickle(io.RawIOBase):
    """A stream handing out `n` bytes per read: every chunk boundary a parser can meet."""

    def __init__(self, data: bytes, n: int = 7) -> None:
        self._b, self._n = io.BytesIO(data), n

    def readable(self) -> bool:
        return True

    def read(self, size: int = -1) -> bytes:
        return self._b.read(self._n)


@lru_cache(maxsize=1)
def _simulated() -> dict[str, bytes]:
    """A healthy 4-host lab bundle from the simulator, the one writer of bundles (labels.json left out)."""
    files = simulate_bundle("lab", seed=3, index=0, issue_rate=0.0).files
    return {k: v for k, v in files.items() if k != "labels.json"}


def _small() -> dict[str, bytes]:
    """A copy of the simulated bundle's files, to edit."""
    return dict(_simulated())


def tgz_bytes(files: dict[str, bytes]) -> bytes:
    return gzip.compress(tar_bytes(files), compresslevel=1)


def _top(files: dict[str, bytes]) -> str:
    return sorted(k.split("/")[0] for k in files if k.startswith("esx-"))[0]


# ------------------------------------------------------------------ regexes: linear on 1 MB lines
# Lines that made the old patterns quadratic (`Link vmnic1 vmnic1 …`, a device-name run ending in a
# non-delimiter, an unterminated string of escapes), and the like for every other pattern.
_ADVERSARIAL = [
    b"Link " + b"vmnic1 " * 150_000,
    b"naa." * 260_000 + b"(",
    b"'\\" * 500_000,
    b"{'\"" * 350_000,
    b'to dev "x" failed H:0x0 D:0x2 P:0x0 ' * 28_000,
    b"Device LSOM ] 1 " * 70_000,
    b"- " * 500_000 + b"x",
    b"0000000-" * 130_000,
    # link-up speed lines (linkspeed) and NIC ratings in descriptions (esxcli._RATING)
    b"vmnic1 link is up, " * 55_000,
    b"1000 M" * 175_000 + b"bps",
    b"link speed " * 95_000,
    b"full duplex: " * 80_000,
    b"10 Gigabit-" * 95_000,
]


def _patterns() -> list[tuple[str, re.Pattern[str] | re.Pattern[bytes]]]:
    mods: list[ModuleType] = [logs, logtime, linkspeed, cmmds, esxcli, esxtop, perfstream, perfdump, bundle, textio]
    out = []
    for mod in mods:
        for name, val in vars(mod).items():
            if isinstance(val, re.Pattern):
                out.append((f"{mod.__name__}.{name}", val))
    # patterns compiled inline on untrusted text (esxcli's nicinfo column spans)
    out += [("esxcli.rule-spans", re.compile(r"-+")), ("esxcli.header-spans", re.compile(r"\S+(?: \S+)*"))]
    return out


# linear: 8; quadratic: 64. Between them, with room for cache effects on the larger input.
MAX_GROWTH = 24.0


def _cpu_per_call(fn: Callable[[], object]) -> float:
    """CPU seconds of one call: the best of 3 batches, each long enough (>= 5 ms) for the clock."""
    n, took = 1, 0.0
    while True:
        t = time.process_time()
        for _ in range(n):
            fn()
        took = time.process_time() - t
        if took >= 0.005:
            break
        n *= 4
    for _ in range(2):
        t = time.process_time()
        for _ in range(n):
            fn()
        took = min(took, time.process_time() - t)
    return took / n


def _growth(fn: Callable[[T], object], make: Callable[[int], T], small: int, factor: int = 8, tries: int = 3) -> float:
    """How much the CPU time of fn(make(size)) grows when the size grows `factor` times: about `factor`
    for linear work, factor² for quadratic, whatever the machine's speed (the clock's unit cancels out).
    The inputs are made before the clock starts (copying a 64 KiB slice, not the pattern, once measured
    42x on a busy CI machine); the least of up to `tries` measurements, since noise only ever inflates
    one, while a quadratic pattern's 64x shows on every one."""
    lo, hi = make(small), make(small * factor)
    best = float("inf")
    for _ in range(tries):
        best = min(best, _cpu_per_call(lambda: fn(hi)) / max(_cpu_per_call(lambda: fn(lo)), 1e-9))
        if best < MAX_GROWTH:
            break
    return best


def _log_matchers(line: str) -> object:
    return logs.event_of(0.0, line), logs.vob_event(0.0, line)


def test_every_regex_on_untrusted_text_is_linear() -> None:
    """Each pattern searched on each adversarial line at 8 KiB and 64 KiB: CPU time grows with the size,
    not with its square (the old link pattern: ~40 minutes on 1 MB). Then every pattern and matcher on
    the 1 MB lines, to the end."""
    pats = _patterns()
    assert {
        "pipeline.parse.logs._SCSI",
        "pipeline.parse.logs._LINK_WORD",
        "pipeline.parse.logtime._TS",
        "pipeline.parse.cmmds._TOKEN",
        "pipeline.parse.linkspeed._RATE",
        "pipeline.parse.esxcli._RATING",
    } <= {n for n, _ in pats}
    lines = [ln[: 1 << 20] for ln in _ADVERSARIAL]
    texts = [ln.decode("latin-1") for ln in lines]
    for name, pat in pats:
        for ln, tx in zip(lines, texts, strict=True):
            line = ln if isinstance(pat.pattern, bytes) else tx
            growth = _growth(pat.search, lambda n, x=line: x[:n], 8 * 1024)  # type: ignore[misc]
            assert growth < MAX_GROWTH, f"{name}: {growth:.0f}x the CPU for 8x the line"
            pat.search(line)  # type: ignore[arg-type]
    for tx in texts:  # the procedural matchers built on them
        growth = _growth(_log_matchers, lambda n, x=tx: x[:n], 8 * 1024)  # type: ignore[misc]
        assert growth < MAX_GROWTH, f"log matchers: {growth:.0f}x the CPU for 8x the line {tx[:20]!r}"
        logs.event_of(0.0, tx)
        logs.vob_event(0.0, tx)
        logs.device_in(tx)
        esxcli.parse_nicinfo("Name  Speed Duplex\n" + tx)


def test_cmmds_tokenizer_is_linear_on_unterminated_strings() -> None:
    shapes = ((b"['\\", b"'\\"), (b"[{", b"'\\"), (b"[", b"{'a'"))
    for head, unit in shapes:

        def parse(text: bytes) -> None:
            assert not cmmds.parse_cmmds_stream([text], "c").disks

        growth = _growth(parse, lambda n, head=head, unit=unit: head + unit * n, 4096)  # type: ignore[misc]
        assert growth < MAX_GROWTH, f"{head!r}: {growth:.0f}x the CPU for 8x the input"
        parse(head + unit * (500_000 if unit != b"{'a'" else 250_000))


# ------------------------------------------------------------------ streamed = whole
def test_cmmds_stream_equals_whole_at_every_boundary() -> None:
    entries = [
        {"uuid": "h1", "owner": "h1", "type": "HOSTNAME", "content": '{"hostname": "esx-a"}'},
        {"uuid": "d1", "owner": "h1", "type": "DISK", "content": '{"devName": "naa.1:2", "isSsd": 1, "ssdUuid": "d1"}'},
        {"uuid": "x", "type": "NODE", "content": "{'}}}' \\' \"{", "nested": {"a": "}"}},
        {"uuid": "d2", "owner": "h1", "type": "DISK", "content": '{"devName": "naa.2", "ssdUuid": "d1"}'},
    ]
    text = repr(entries)
    whole = cmmds.parse_cmmds(text, "c")
    assert set(whole.disks) == {"d1", "d2"} and whole.hosts == {"h1": "esx-a"}
    data = text.encode()
    for n in (1, 2, 3, 7, 64):
        parts = [data[i : i + n] for i in range(0, len(data), n)]
        got = cmmds.parse_cmmds_stream(parts, "c")
        assert (got.hosts, got.disks) == (whole.hosts, whole.disks)


def test_perf_dump_stream_equals_lines() -> None:
    dump = next(d for p, d in _simulated().items() if "perf_stats_with_dump" in p)
    a = perfdump.PerfParser()
    a.feed_dump(iter(dump.split(b"\n")), "d")
    b = perfdump.PerfParser()
    perfstream.feed_dump_stream(b, Trickle(dump, 1000), "d")  # type: ignore[arg-type]
    assert a.entities.keys() == b.entities.keys() and len(a.entities) > 10
    for k, e in a.entities.items():
        assert e.metrics.keys() == b.entities[k].metrics.keys()
        assert all(np.array_equal(v, b.entities[k].metrics[lb], equal_nan=True) for lb, v in e.metrics.items())


def test_perf_json_stream_equals_whole() -> None:
    si = ",".join(f"2026-03-02 {h:02d}:{m:02d}:00" for h in range(24) for m in range(60))
    vals = ",".join(str(i) for i in range(24 * 60))
    ents = [
        {"entityRefId": f"host-cpu:u{i}", "sampleInfo": si, "value": [{"metricId": {"label": "a"}, "values": vals}]}
        for i in range(60)
    ]
    data = json.dumps([*ents, {"nothing": 1}, "junk"]).encode()
    assert len(data) > 2 * textio.CHUNK  # items cross chunk boundaries
    a = perfdump.PerfParser()
    a.feed_json(perfdump.load_json(data), "j")
    b = perfdump.PerfParser()
    perfstream.feed_json_stream(b, io.BufferedReader(io.BytesIO(data)), "j")
    assert a.entities.keys() == b.entities.keys() and len(b.entities) == 60
    assert all((a.entities[k].metrics["a"] == e.metrics["a"]).all() for k, e in b.entities.items())


def test_utf16_dtd_is_refused() -> None:
    doc = '<?xml version="1.0" encoding="UTF-16"?><!DOCTYPE x [<!ENTITY a "aaaa">]><obj>&a;</obj>'
    line = b"\xff\xfe" + doc.encode("utf-16-le")
    for feed in (
        lambda p: p.feed_dump(iter([perfdump.HEAD.encode(), line]), "d"),
        lambda p: perfstream.feed_dump_stream(p, io.BytesIO(perfdump.HEAD.encode() + b"\n" + line + b"\n"), "d"),
    ):
        p = perfdump.PerfParser()
        feed(p)
        assert not p.entities and any("DTD" in w for w in p.warnings), p.warnings


# ------------------------------------------------------------------ each budget, by name
def _dump(n_ents: int, n_samples: int, labels: int = 1) -> bytes:
    si = ",".join(f"2026-03-02 10:{i // 60:02d}:{i % 60:02d}" for i in range(n_samples))
    vals = ",".join("1" for _ in range(n_samples))
    value = "".join(
        f"<value><metricId><label>m{k}</label></metricId><values>{vals}</values></value>" for k in range(labels)
    )
    ents = "".join(
        f"<VsanPerfEntityMetricCSV><entityRefId>host-cpu:u{i}</entityRefId><sampleInfo>{si}</sampleInfo>{value}"
        "</VsanPerfEntityMetricCSV>"
        for i in range(n_ents)
    )
    return f"{perfdump.HEAD}\n<obj>{ents}</obj>\n".encode()


@pytest.mark.parametrize(
    ("cfg", "dump", "limit"),
    [
        (PipelineConfig(max_perf_entities=5), _dump(6, 3), "max_perf_entities"),
        (PipelineConfig(max_samples=10), _dump(1, 11), "max_samples"),
        (PipelineConfig(max_perf_values=20), _dump(3, 3, labels=3), "max_perf_values"),
        (PipelineConfig(max_entity_bytes=1000), _dump(1, 200), "max_entity_bytes"),
        (PipelineConfig(max_source_bytes=1000), _dump(5, 20), "max_source_bytes"),
    ],
)
def test_perf_budgets_refuse_the_bundle(cfg: PipelineConfig, dump: bytes, limit: str) -> None:
    p = perfdump.PerfParser(cfg)
    with pytest.raises(LimitExceeded) as ei:
        perfstream.feed_dump_stream(p, io.BytesIO(dump), "d")
    assert ei.value.limit == limit and ei.value.member.startswith("d") and limit in str(ei.value)


def test_components_budget_names_the_file() -> None:
    files = _small()
    with pytest.raises(LimitExceeded) as ei:
        load_bundle(tgz_bytes(files), PipelineConfig(max_components=3))
    assert ei.value.limit == "max_components" and "cmmds" in ei.value.member


def test_log_budgets_are_truncation_warnings() -> None:
    files = _small()
    top = _top(files)
    line = b"2026-03-02T10:05:00.000Z cpu1:1)vmnic1 : 0000:04:00.1 Link Down\n"
    files[f"{top}/var/run/log/vmkernel.log"] = b"2026-03-02T10:05:00Z " + b"x" * 5000 + b"\n" + line * 3000
    cfg = PipelineConfig(max_events=10, max_log_bytes=100_000, max_line_bytes=4096)
    w = "\n".join(load_bundle(tgz_bytes(files), cfg).warnings)
    assert "max_events" in w and "max_log_bytes" in w and "max_line_bytes" in w
    rep = ReadReport()
    pb = bundle.parse_members(iter_members(tgz_bytes(files), cfg, rep), "<t>", rep, cfg)
    kept = [e for lf in pb.folders[next(iter(pb.folders))].logs for e in lf.events if e.kind == "link_down"]
    assert len(kept) == 10


def test_events_total_budget() -> None:
    budget = logs.EventBudget(per_key=100, total=5)
    lines = [b"2026-03-02T10:05:%02dZ vmnic%d : Link Down\n" % (i, i) for i in range(20)]
    lf = logs.parse_log(lines, "vmkernel", budget)
    assert len(lf.events) == 5 and lf.dropped == 15


def test_esxtop_columns_budget_costs_only_the_capture() -> None:
    files = _small()
    top = _top(files)
    cols = ",".join(f'"\\\\h\\Physical Disk SCSI Device(naa.{i})\\Commands/sec"' for i in range(50))
    files[f"{top}/wide.csv"] = f'"(PDH-CSV 4.0) (UTC)(0)",{cols}\n"03/02/2026 10:00:00",{"1," * 50}\n'.encode()
    bt = load_bundle(tgz_bytes(files), PipelineConfig(max_esxtop_columns=20))
    assert any("max_esxtop_columns" in w and "wide.csv" in w for w in bt.warnings)


def test_table_budget() -> None:
    files = _small()
    top = _top(files)
    files[f"{top}/commands/nicinfo.sh.txt"] += b" " * 5000
    bt = load_bundle(tgz_bytes(files), PipelineConfig(max_table_bytes=2000))
    assert any("max_table_bytes" in w and "nicinfo" in w for w in bt.warnings)


def test_skipped_members_are_reported_in_the_result() -> None:
    files = _small()
    b = io.BytesIO()
    with tarfile.open(fileobj=b, mode="w:gz") as tf:
        for n, d in sorted(files.items()):
            ti = tarfile.TarInfo(n)
            ti.size = len(d)
            tf.addfile(ti, io.BytesIO(d))
        for name, kind in (
            ("esx-x/link", tarfile.SYMTYPE),
            ("esx-x/hard", tarfile.LNKTYPE),
            ("esx-x/dev", tarfile.CHRTYPE),
        ):
            ti = tarfile.TarInfo(name)
            ti.type, ti.linkname = kind, "/etc/passwd"
            tf.addfile(ti)
    w = load_bundle(b.getvalue()).warnings
    assert {
        "skipped esx-x/link (symlink)",
        "skipped esx-x/hard (hard link)",
        "skipped esx-x/dev (not a regular file)",
    } <= set(w)


# ------------------------------------------------------------------ zip structure
def _zip(entries: list[tuple[str, bytes]]) -> bytearray:
    b = io.BytesIO()
    with zipfile.ZipFile(b, "w", zipfile.ZIP_STORED) as zf:
        for n, d in entries:
            zf.writestr(n, d)
    return bytearray(b.getvalue())


def _central(z: bytearray) -> Iterator[int]:
    i = 0
    while (i := z.find(b"PK\x01\x02", i)) >= 0:
        yield i
        i += 4


@pytest.mark.parametrize("attack", ["shared", "out_of_order", "name", "method", "size", "overlap"])
def test_zip_structure_checked_before_decompression(attack: str) -> None:
    z = _zip([("esx-a/one.txt", b"1" * 100), ("esx-a/two.txt", b"2" * 100)])
    c1, c2 = list(_central(z))
    if attack == "shared":
        z[c2 + 42 : c2 + 46] = z[c1 + 42 : c1 + 46]  # both records at the first local header
        z[c2 + 46 : c2 + 46 + 13] = z[c1 + 46 : c1 + 46 + 13]
    elif attack == "out_of_order":
        off2 = z[c2 + 42 : c2 + 46]
        z[c2 + 42 : c2 + 46] = z[c1 + 42 : c1 + 46]
        z[c1 + 42 : c1 + 46] = off2
    elif attack == "name":
        z[30:33] = b"ESX"  # the first local header's name
    elif attack == "method":
        z[8:10] = struct.pack("<H", 8)
    elif attack == "size":
        z[18:22] = struct.pack("<I", 99)
    else:  # the first entry's data claims to run into the second
        z[c1 + 20 : c1 + 24] = struct.pack("<I", 200)
        z[18:22] = struct.pack("<I", 200)
    with pytest.raises(CorruptArchive) as ei:
        list(iter_members(bytes(z)))
    assert ei.value.reason


def test_stored_nested_zip_is_read_in_place_and_streamed_one_has_a_budget() -> None:
    inner = bytes(_zip([("esx-a/x.txt", b"hello")]))
    outer = bytes(_zip([("export/inner.zip", inner + b"")]))
    got = {m.path: m.read() for m in iter_members(outer, PipelineConfig(max_nested_zip_bytes=10))}
    assert got == {"export/esx-a/x.txt": b"hello"}  # in place: the budget for held zips does not apply
    tgz = tgz_bytes({"export/inner.zip": inner})
    with pytest.raises(LimitExceeded) as ei:
        list(iter_members(tgz, PipelineConfig(max_nested_zip_bytes=len(inner) - 1)))
    assert ei.value.limit == "max_nested_zip_bytes" and ei.value.member == "export/inner.zip"
    assert {m.path for m in iter_members(tgz)} == {"export/esx-a/x.txt"}

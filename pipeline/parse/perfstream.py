"""The perf dump read as a stream: SOAP documents through expat, the JSON form item by item.

A document (one line, possibly hundreds of MB) is never held whole and no element tree is built:
expat's callbacks keep only the entity being read, which `PerfParser.add` takes as soon as it ends.
Expat decodes the document in its declared encoding (UTF-16 too), so refusing a DTD is done on what
it parsed, not on a byte pattern an encoding can hide.
"""

from __future__ import annotations

import codecs
import io
import json
import re
from collections.abc import Iterable
from typing import TYPE_CHECKING, Final
from xml.parsers import expat

from pipeline.errors import LimitExceeded
from pipeline.parse.textio import chunks

if TYPE_CHECKING:  # the parser feeds this module (PerfParser.feed_dump); only its type is needed here
    from pipeline.parse.perfdump import PerfParser

ENTITY: Final = "VsanPerfEntityMetricCSV"
ELEMENT_COST: Final = 64  # bytes charged to an entity's budget per element: empty elements cost time too
_CAPTURE: Final = {
    ("entityRefId",): "ref",
    ("sampleInfo",): "si",
    ("value", "metricId", "label"): "label",
    ("value", "metricId", "metricsCollectInterval"): "interval",
    ("value", "values"): "values",
}
_BOMS: Final = (b"\xff\xfe", b"\xfe\xff")
_WS: Final = re.compile(rb"[ \t\r]*")
_JSON_SEP: Final = re.compile(r"[\s,]*")


class _Refused(Exception):
    """A document declares a DTD or entities: never expanded, the document is skipped."""


class _Doc:
    """One XML document fed in pieces; each complete entity goes to `sink.add`."""

    def __init__(self, sink: PerfParser, where: str) -> None:
        self.sink = sink
        self.where = where
        self.max_bytes = sink.cfg.max_entity_bytes
        p = expat.ParserCreate(namespace_separator="}")
        p.buffer_text = True
        p.StartElementHandler = self._start
        p.EndElementHandler = self._end
        p.CharacterDataHandler = self._text
        p.StartDoctypeDeclHandler = self._refuse
        p.EntityDeclHandler = self._refuse
        p.SetParamEntityParsing(expat.XML_PARAM_ENTITY_PARSING_NEVER)
        self.p = p
        self.depth = 0
        self.rel: list[str] | None = None  # local names below the entity element being read
        self.added = 0
        self._reset()

    def _reset(self) -> None:
        self.fields: dict[str, str] = {}
        self.vals: list[tuple[str, str, int | None]] = []
        self.value: dict[str, str] = {}
        self.buf: list[str] | None = None
        self.size = 0

    def _refuse(self, *_args: object) -> None:
        raise _Refused

    def _start(self, name: str, _attrs: object) -> None:
        local = name.rpartition("}")[2]
        self.depth += 1
        if self.rel is None:
            if local == ENTITY and self.depth <= 2:  # the document itself or a child of its root
                self.rel = []
                self._reset()
            elif self.depth > 1:
                self.sink.record(self.where)  # any other element costs a callback: budgeted like an entity
            return
        self._grow(ELEMENT_COST)
        self.rel.append(local)
        if tuple(self.rel) in _CAPTURE:
            self.buf = []
        elif self.rel == ["value"]:
            self.value = {}

    def _grow(self, n: int) -> None:
        self.size += n
        if self.size > self.max_bytes:
            raise LimitExceeded("max_entity_bytes", self.where, f"an entity of more than {self.max_bytes} bytes")

    def _text(self, data: str) -> None:
        if self.buf is not None:
            self._grow(len(data))
            self.buf.append(data)

    def _end(self, _name: str) -> None:
        self.depth -= 1
        rel = self.rel
        if rel is None:
            return
        if not rel:
            self.rel = None
            self._entity()
            return
        key = _CAPTURE.get(tuple(rel))
        if key is not None and self.buf is not None:
            text = "".join(self.buf)
            self.buf = None
            if key in ("ref", "si"):
                self.fields[key] = text
            else:
                self.value[key] = text
        elif rel == ["value"]:
            v = self.value
            label, values = (v.get("label") or "").strip(), v.get("values")
            if label and values is not None:
                self.vals.append((label, values, _int(v.get("interval"))))
        rel.pop()

    def _entity(self) -> None:
        sink = self.sink
        sink.record(self.where)
        ref, si = self.fields.get("ref"), self.fields.get("si")
        if ref is None or si is None:
            sink.warn(f"{self.where}: entity without entityRefId/sampleInfo")
        else:
            sink.add(ref.strip(), si, self.vals, self.where)
            self.added += 1
        self._reset()

    def feed(self, data: bytes, final: bool = False) -> bool:
        """False once the document is abandoned (warned)."""
        try:
            self.p.Parse(data, final)
        except _Refused:
            self.sink.warn(f"{self.where}: document with a DTD ignored")
            return False
        except expat.ExpatError as e:
            kept = f"; {self.added} entities before the error kept" if self.added else ""
            self.sink.warn(f"{self.where}: XML does not parse ({e}){kept}")
            return False
        return True


def _int(text: str | None) -> int | None:
    if not text:
        return None
    try:
        return int((text or "").strip())
    except ValueError:
        return None


def feed_dump_lines(sink: PerfParser, lines: Iterable[bytes], where: str) -> None:
    """One document per item (tests and callers holding lines already)."""
    sink.new_source()
    for lineno, raw in enumerate(lines, start=1):
        s = raw.strip()
        if not s or s.startswith(b"-"):
            continue
        if not s.startswith(b"<") and not s.startswith(_BOMS):
            sink.warn(f"{where}:{lineno}: not an XML document")
            continue
        _Doc(sink, f"{where}:{lineno}").feed(s, final=True)


def feed_dump_stream(sink: PerfParser, f: io.BufferedIOBase, where: str) -> None:
    """The SOAP text form from a stream: lines split as they come, each document parsed in pieces."""
    sink.new_source()
    lineno, doc, at_start = 1, None, True
    for chunk in chunks(f, sink.cfg.max_source_bytes, where):
        pos, n = 0, len(chunk)
        while pos < n:
            if at_start:
                pos = _WS.match(chunk, pos).end()  # type: ignore[union-attr]  # matches the empty string
                if pos == n:
                    break
                if chunk[pos] == 0x0A:
                    lineno, pos = lineno + 1, pos + 1
                    continue
                if chunk.startswith(b"\xef\xbb\xbf", pos):
                    pos += 3
                    continue
                at_start = False
                if chunk[pos] == 0x3C or chunk.startswith(_BOMS, pos):  # "<"
                    doc = _Doc(sink, f"{where}:{lineno}")
                elif chunk[pos] != 0x2D:  # "-": a separator line
                    sink.warn(f"{where}:{lineno}: not an XML document")
            nl = chunk.find(b"\n", pos)
            end = n if nl < 0 else nl
            if doc is not None and end > pos and not doc.feed(chunk[pos:end]):
                doc = None
            if nl < 0:
                break
            if doc is not None:
                doc.feed(b"", final=True)
                doc = None
            lineno, pos, at_start = lineno + 1, nl + 1, True
    if doc is not None:
        doc.feed(b"", final=True)


def feed_json_stream(sink: PerfParser, f: io.BufferedIOBase, where: str) -> None:
    """The JSON form (`[{entity}, …]`) decoded one list item at a time, never as one document."""
    sink.new_source()
    cfg = sink.cfg
    dec = json.JSONDecoder()
    udec = codecs.getincrementaldecoder("utf-8")("replace")
    source = chunks(f, cfg.max_source_bytes, where)
    buf, pos, eof, opened = "", 0, False, False
    while True:
        pos = _JSON_SEP.match(buf, pos).end()  # type: ignore[union-attr]
        if pos >= len(buf) or (opened and buf[pos] != "]" and not eof and len(buf) - pos < 64):
            if eof:
                break
            chunk = next(source, None)
            eof = chunk is None
            buf = buf[pos:] + udec.decode(chunk or b"", final=eof)
            pos = 0
            continue
        if not opened:
            if buf[pos] == "\ufeff":
                pos += 1
                continue
            if buf[pos] != "[":
                return
            opened, pos = True, pos + 1
            continue
        if buf[pos] == "]":
            return
        try:
            item, end = dec.raw_decode(buf, pos)
        except (ValueError, RecursionError):
            if eof:
                sink.warn(f"{where}: JSON does not parse after item {sink.records}; the items before it kept")
                return
            if len(buf) - pos > cfg.max_entity_bytes:
                detail = f"a JSON item of more than {cfg.max_entity_bytes} bytes"
                raise LimitExceeded("max_entity_bytes", where, detail) from None
            chunk = next(source, None)
            eof = chunk is None
            buf = buf[pos:] + udec.decode(chunk or b"", final=eof)
            pos = 0
            continue
        pos = end
        sink.json_item(item, where)

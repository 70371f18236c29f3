"""CMMDS directory (`cmmds-tool find -f python`): a Python literal list of dicts, read entry by entry.

The file (one line, hundreds of MB on a large cluster) is streamed: a tokenizer finds each top-level
`{…}` entry (strings skipped, so braces in the JSON `content` strings do not count) and each entry is
evaluated on its own, so memory is one entry, never the file or its AST.
"""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any, Final

from pipeline.errors import LimitExceeded
from vsandx.components import strip_partition

# A string is closed by its quote or, unterminated, by the end of its line or of the buffer, and its
# body is possessive: a quote always consumes its string once, so scanning is linear. (Rewinding to
# the next quote after an unterminated `'\'\'\'…` made the old pattern quadratic.) A whole flat entry
# (the usual CMMDS entry: `content` is a string) is one token, so a large file costs one step per entry.
_S1: Final = rb"'(?:[^'\\\n]++|\\[^\n]?)*+"
_S2: Final = rb'"(?:[^"\\\n]++|\\[^\n]?)*+'
_TOKEN: Final = re.compile(
    rb"\{(?:[^{}'\"\\\n]++|" + _S1 + rb"'|" + _S2 + rb'")*+\}'
    rb"|" + _S1 + rb"(?:'|(?=\n)|\Z)|" + _S2 + rb'(?:"|(?=\n)|\Z)|[{}]'
)
MAX_ENTRIES: Final = 4_000_000  # entries of any type scanned (a 64-host cluster has well under 1M)
MAX_ENTRY_CHARS: Final = 1 << 20
MAX_NAME_CHARS: Final = 512  # UUIDs, host and device names
DEFAULT_MAX_COMPONENTS: Final = 4096  # PipelineConfig.max_components


@dataclass
class CmmdsDisk:
    uuid: str
    owner: str  # host UUID
    device: str  # devName without partition suffix
    is_ssd: bool
    ssd_uuid: str  # cache disk of its group (itself for a cache disk)

    @property
    def is_cache(self) -> bool:
        return self.ssd_uuid == self.uuid


@dataclass
class Cmmds:
    hosts: dict[str, str] = field(default_factory=dict)  # host UUID -> hostname
    disks: dict[str, CmmdsDisk] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)

    def merge(self, other: Cmmds) -> None:
        for k, v in other.hosts.items():
            self.hosts.setdefault(k, v)
        for k, d in other.disks.items():
            self.disks.setdefault(k, d)


def sniff(head: bytes) -> bool:
    s = head.lstrip(b"\xef\xbb\xbf \t\r\n")
    return (
        s.startswith(b"[")
        and (b"'uuid'" in s or b'"uuid"' in s)
        and (b"'type'" in s or b'"type"' in s)
        and b'"entityRefId"' not in s
    )


class _Entries:
    """Top-level `{…}` entries of a chunked stream; None for one longer than MAX_ENTRY_CHARS.

    `truncated` is set when a string outgrew an entry's size: where it ends is unknown, so the rest
    of the file is not read (a warning, never silent).
    """

    def __init__(self, chunks: Iterable[bytes]) -> None:
        self._chunks = chunks
        self.truncated = False

    def __iter__(self) -> Iterator[bytes | None]:
        buf, scan, depth, start, oversized = b"", 0, 0, -1, False
        it = iter(self._chunks)
        eof = False
        while not eof:
            chunk = next(it, None)
            eof = chunk is None
            buf += chunk or b""
            carry = -1
            for m in _TOKEN.finditer(buf, scan):
                c = buf[m.start()]
                if c in (0x27, 0x22):  # a string: may continue in the next chunk
                    if not eof and m.end() == len(buf):
                        carry = m.start()
                        break
                elif c == 0x7B and m.end() - m.start() > 1:  # a flat entry, whole
                    if depth == 0:
                        yield buf[m.start() : m.end()] if m.end() - m.start() <= MAX_ENTRY_CHARS else None
                elif c == 0x7B:
                    if depth == 0:
                        start, oversized = m.start(), False
                    depth += 1
                elif depth:
                    depth -= 1
                    if depth == 0:
                        yield None if oversized else buf[start : m.end()]
            scan = carry if carry >= 0 else len(buf)
            if carry >= 0 and len(buf) - carry > MAX_ENTRY_CHARS:
                self.truncated = True
                return
            keep = scan
            if depth and not oversized:
                if len(buf) - start > MAX_ENTRY_CHARS:
                    oversized = True
                else:
                    keep = start
            buf, scan, start = buf[keep:], scan - keep, start - keep


def _wanted(raw: bytes) -> bool:
    return b"'DISK'" in raw or b"'HOSTNAME'" in raw or b'"DISK"' in raw or b'"HOSTNAME"' in raw


def _eval(raw: bytes | None) -> Any:
    if raw is None:
        return None
    entry = raw.decode("utf-8", "replace")
    try:
        return ast.literal_eval(entry)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        try:
            return json.loads(entry)
        except (ValueError, RecursionError):
            return None


def parse_cmmds(text: str, where: str, max_components: int = DEFAULT_MAX_COMPONENTS) -> Cmmds:
    return parse_cmmds_stream([text.encode("utf-8", "replace")], where, max_components)


def parse_cmmds_stream(chunks: Iterable[bytes], where: str, max_components: int = DEFAULT_MAX_COMPONENTS) -> Cmmds:
    """HOSTNAME and DISK entries; more hosts or disks than `max_components` is refused (LimitExceeded)."""
    cm = Cmmds()
    bad = 0
    entries = _Entries(chunks)
    evaluated = 0
    for n, raw in enumerate(entries):
        if n >= MAX_ENTRIES:
            raise LimitExceeded("max_components", where, f"more than {MAX_ENTRIES} CMMDS entries")
        if raw is not None and not _wanted(raw):
            continue  # NODE, DOM_OBJECT, …: never evaluated
        evaluated += 1
        if evaluated > 4 * max_components + 1000:
            raise LimitExceeded("max_components", where, f"more than {evaluated - 1} HOSTNAME/DISK entries")
        e = _eval(raw)
        if not isinstance(e, dict):
            bad += 1
            continue
        typ, uuid, owner, content = e.get("type"), e.get("uuid"), e.get("owner"), e.get("content")
        if typ not in ("HOSTNAME", "DISK") or not isinstance(uuid, str):
            continue
        if len(uuid) > MAX_NAME_CHARS or (isinstance(owner, str) and len(owner) > MAX_NAME_CHARS):
            bad += 1  # names are kept for the whole parse: bounded
            continue
        c: Any = content
        if isinstance(content, str):
            try:
                c = json.loads(content)
            except (ValueError, RecursionError):
                c = None
        if not isinstance(c, dict):
            bad += 1
            continue
        table: dict[str, Any] = cm.hosts if typ == "HOSTNAME" else cm.disks
        if len(table) >= max_components and uuid not in table:
            kind = "hosts" if typ == "HOSTNAME" else "disks"
            raise LimitExceeded("max_components", where, f"more than {max_components} {kind} in CMMDS")
        if typ == "HOSTNAME":
            hn = c.get("hostname")
            if isinstance(hn, str) and hn.strip() and len(hn) <= MAX_NAME_CHARS:
                cm.hosts[uuid] = hn.strip()
        else:
            dev, ssd = c.get("devName"), c.get("ssdUuid")
            if isinstance(ssd, str) and len(ssd) > MAX_NAME_CHARS:
                ssd = None
            if isinstance(dev, str) and dev and len(dev) <= MAX_NAME_CHARS and isinstance(owner, str):
                cm.disks[uuid] = CmmdsDisk(
                    uuid,
                    owner,
                    strip_partition(dev),
                    bool(c.get("isSsd")),
                    ssd if isinstance(ssd, str) and ssd else uuid,
                )
    if bad:
        cm.warnings.append(f"{where}: {bad} CMMDS entries unreadable")
    if not cm.hosts and not cm.disks and not bad:  # e.g. nested lists and no entry: say so, never silent
        cm.warnings.append(f"{where}: no HOSTNAME or DISK entry read; the topology comes from the other sources")
    if entries.truncated:
        cm.warnings.append(f"{where}: a string longer than {MAX_ENTRY_CHARS} bytes; the rest of the file ignored")
    return cm

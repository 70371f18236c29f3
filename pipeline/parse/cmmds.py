"""CMMDS directory (`cmmds-tool find -f python`): a Python literal list of dicts, read entry by entry.

The whole file is never handed to `ast.literal_eval` at once: its AST would take many times the
file's size. A tokenizer finds each top-level `{…}` entry (strings skipped, so braces in the JSON
`content` strings do not count) and each entry is evaluated on its own.
"""

from __future__ import annotations

import ast
import json
import re
from dataclasses import dataclass, field
from typing import Any, Final

from vsandx.components import strip_partition

_TOKEN: Final = re.compile(r"'(?:[^'\\\n]|\\.)*'|\"(?:[^\"\\\n]|\\.)*\"|[{}]")
MAX_ENTRY_CHARS: Final = 1 << 20


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


def _entries(text: str) -> list[str]:
    out: list[str] = []
    depth = 0
    start = 0
    for m in _TOKEN.finditer(text):
        tok = m.group(0)
        if tok == "{":
            if depth == 0:
                start = m.start()
            depth += 1
        elif tok == "}" and depth:
            depth -= 1
            if depth == 0:
                out.append(text[start : m.end()])
    return out


def _eval(entry: str) -> Any:
    if len(entry) > MAX_ENTRY_CHARS:
        return None
    try:
        return ast.literal_eval(entry)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        try:
            return json.loads(entry)
        except (ValueError, RecursionError):
            return None


def parse_cmmds(text: str, where: str) -> Cmmds:
    cm = Cmmds()
    bad = 0
    for raw in _entries(text):
        e = _eval(raw)
        if not isinstance(e, dict):
            bad += 1
            continue
        typ, uuid, owner, content = e.get("type"), e.get("uuid"), e.get("owner"), e.get("content")
        if typ not in ("HOSTNAME", "DISK") or not isinstance(uuid, str):
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
        if typ == "HOSTNAME":
            hn = c.get("hostname")
            if isinstance(hn, str) and hn.strip():
                cm.hosts[uuid] = hn.strip()
        else:
            dev, ssd = c.get("devName"), c.get("ssdUuid")
            if isinstance(dev, str) and dev and isinstance(owner, str):
                cm.disks[uuid] = CmmdsDisk(
                    uuid,
                    owner,
                    strip_partition(dev),
                    bool(c.get("isSsd")),
                    ssd if isinstance(ssd, str) and ssd else uuid,
                )
    if bad:
        cm.warnings.append(f"{where}: {bad} CMMDS entries unreadable")
    return cm

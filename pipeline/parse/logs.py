"""vmkernel / vmkwarning / vobd logs (ESXi 7 and 8 styles) -> timed events that matter for diagnosis."""

from __future__ import annotations

import re
import sys
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Final, NamedTuple

from pipeline.parse.linkspeed import link_speed, to_detail
from pipeline.parse.linkvob import LinkTracker
from pipeline.parse.logcite import CITE_TOTAL, Citer
from pipeline.parse.logtime import timestamp
from pipeline.parse.textio import BoundedLines

_SCSI: Final = re.compile(
    r'to dev "(?P<dev>[^"]+)" failed H:0x(?P<h>[0-9a-fA-F]+) D:0x(?P<d>[0-9a-fA-F]+) P:0x(?P<p>[0-9a-fA-F]+)'
    r"(?:.*?sense data: 0x(?P<k>[0-9a-fA-F]+) 0x(?P<asc>[0-9a-fA-F]+) 0x(?P<q>[0-9a-fA-F]+))?"
)
_DETER: Final = re.compile(r"Device (\S+) performance has (deteriorated|improved)")
_LSOM: Final = re.compile(r"LSOM (\w+) Congestion State: (\w+)")
# "vmnicN … Link Down|Up" is found in two linear searches (the last Link word, then the first vmnic
# ending before it): the one-pattern form `vmnic\d+\b.*\bLink` rescanned the line from every vmnic.
_LINK_WORD: Final = re.compile(r"\bLink (Down|Up)\b", re.IGNORECASE)
_LINK_NIC: Final = re.compile(r"\b(vmnic\d+)\b", re.IGNORECASE)
_PERM: Final = re.compile(r"device ([0-9a-fA-F-]{32,36}) is under permanent error")
_VOB: Final = re.compile(r"\]\s*\d+us: \[([A-Za-z0-9_.]+)\]\s*(.*)")
# A UUID standing as its own token: not the tail of a longer name (an NFS volume `fi-<uuid>`).
_UUID: Final = re.compile(r"(?<![\w-])[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}(?![\w-])")
# What precedes a vmkernel/vmkwarning message after the timestamp: ESXi 8's syslog severity and source
# (`In(182) vmkernel: `, `Wa(180) vmkwarning: `), then `cpuN:world`, then optional tokens such as
# `opID=a9f5cca4`, up to the `)`. The matchers read only the message after it, so every shape reads
# the same and a token of the prefix (an opID shaped like a UUID) is never taken for the message's.
# Anchored (match) and every run bounded: linear.
_PREFIX: Final = re.compile(
    rb"[ \t]{0,8}(?:[A-Z][a-z]\(\d{1,4}\)[ \t]{1,8})?(?:[A-Za-z][\w.-]{0,63}:[ \t]{1,8})?"
    rb"cpu\d{1,6}:\d{1,12}(?:[ \t][^)\n]{0,512})?\)"
)
_PREFIX_S: Final = re.compile(_PREFIX.pattern.decode())
# A device name: a prefix, then a run of name characters that must end at a delimiter. The run is
# matched once from the first prefix in it (possessive), never again from each prefix inside it.
_DEV_START: Final = re.compile(r"\b(?:naa|eui|t10|mpx)\.")
_DEV_RUN: Final = re.compile(r"[A-Za-z0-9_.:-]++")
_DEV_END: Final = frozenset(" \t\n\r\f\v\"',)]")
_VMNIC: Final = re.compile(r"\b(vmnic\d+)\b")
_KEYS: Final = (b"ScsiDeviceIO", b"LSOM", b"ink ", b"permanent error", b"performance has")  # ink: Link, link
MEMO_LINES: Final = 8192
MEMO_LINE_BYTES: Final = 512  # the memo holds at most 4 MiB of line text

# Sense keys: 0x3 medium error and 0x4 hardware error mean a failing device; 0x5 illegal request and
# 0x6 unit attention are routine (unsupported VPD page, reservation reset) and benign.
MEDIUM_SENSE: Final = frozenset({0x3, 0x4})
BENIGN_SENSE: Final = frozenset({0x5, 0x6, 0x0})
EVENT_KINDS: Final = (
    "scsi_fail_medium",
    "scsi_fail_benign",
    "scsi_fail_host",
    "scsi_fail_other",
    "deteriorated",
    "improved",
    "lsom_congestion",
    "lsom_congestion_clear",
    "link_down",
    "link_up",
    "link_speed",  # a driver's link-up line: speed and duplex in `detail` (linkspeed), in no channel
    "perm_error",
    "vob",
)


class LogEvent(NamedTuple):
    t: float  # epoch seconds UTC
    kind: str  # one of EVENT_KINDS
    device: str | None = None  # naa.… without partition
    vmnic: str | None = None
    uuid: str | None = None  # vSAN disk / disk group UUID named in the line
    detail: str | None = None  # the VOB id for "vob"


@dataclass
class LogFile:
    source: str  # vmkernel, vmkwarning, vobd, other
    events: list[LogEvent] = field(default_factory=list)
    path: str = ""  # the file inside the upload (a rotated `.N.gz` one: its lines once decompressed)
    # event -> (1-based line number in the file, the line cut to CITE_CHARS): the lines a finding cites
    cited: dict[LogEvent, tuple[int, str]] = field(default_factory=dict)
    lines: int = 0
    untimed: int = 0
    first: float | None = None
    last: float | None = None
    dropped: int = 0  # events seen but not kept (EventBudget)


class EventBudget:
    """Events kept for one bundle: at most `per_key` per component and kind (the device, vmnic or
    UUID an event names, within one host folder) and `total` in all; the rest are only counted."""

    def __init__(self, per_key: int = 20_000, total: int = 500_000, cite_total: int = CITE_TOTAL) -> None:
        self.per_key = per_key
        self.total = total
        self.kept = 0
        self.cite_total = cite_total  # lines kept to cite, over the bundle (LogFile.cited)
        self.cites = 0
        self._counts: dict[tuple[str, str, str | None, str | None, str | None], int] = {}

    def admit(self, scope: str, ev: LogEvent) -> bool:
        if self.kept >= self.total:
            return False
        key = (scope, ev.kind, ev.device, ev.vmnic, ev.uuid)
        n = self._counts.get(key, 0)
        if n >= self.per_key:
            return False
        self._counts[key] = n + 1
        self.kept += 1
        return True


def source_of(path: str) -> str:
    base = path.rsplit("/", 1)[-1].lower()
    for s in ("vmkwarning", "vmkernel", "vobd"):
        if base.startswith(s):
            return s
    return "other"


def _scsi(t: float, m: re.Match[str]) -> LogEvent:
    dev = m["dev"].split(":", 1)[0]
    h, d = int(m["h"], 16), int(m["d"], 16)
    key = int(m["k"], 16) if m["k"] else None
    if h != 0:
        kind = "scsi_fail_host"  # timeouts, aborts, resets, no-connect
    elif d == 0x2 and key in MEDIUM_SENSE:
        kind = "scsi_fail_medium"
    elif d == 0x2 and (key is None or key in BENIGN_SENSE):
        kind = "scsi_fail_benign"
    else:
        kind = "scsi_fail_other"  # busy, queue full, reservation conflict, other sense keys
    return LogEvent(t, kind, device=dev)


def message(text: str) -> str:
    """A vmkernel/vmkwarning line's message: the text after its `[severity source:] cpuN:world [opID=…])`
    prefix (the timestamp already cut off), or the whole text where there is no such prefix."""
    m = _PREFIX_S.match(text)
    return text[m.end() :] if m else text


def event_of(t: float, text: str) -> LogEvent | None:
    """The event a vmkernel/vmkwarning line (after its timestamp) reports, read from its message."""
    return _message_event(t, message(text))


def _message_event(t: float, text: str) -> LogEvent | None:
    if "ScsiDeviceIO" in text or "failed H:0x" in text:
        m = _SCSI.search(text)
        if m:
            return _scsi(t, m)
    if "performance has" in text:
        # A device's latency ("Device naa.… performance has deteriorated"), never an NFS datastore's
        # ("NFS volume <name> performance has deteriorated", ESXi 8): that is not a vSAN disk.
        m2 = _DETER.search(text)
        if m2:
            return LogEvent(t, "deteriorated" if m2[2] == "deteriorated" else "improved", device=m2[1])
    if "LSOM" in text:
        m3 = _LSOM.search(text)
        if m3:
            u = _UUID.search(text)
            kind = "lsom_congestion" if m3[2].lower() == "exceeded" else "lsom_congestion_clear"
            return LogEvent(t, kind, uuid=u[0] if u else None, detail=m3[1])
        m4 = _PERM.search(text)
        if m4:
            return LogEvent(t, "perm_error", uuid=m4[1])
    if "Link " in text:
        last = None
        for last in _LINK_WORD.finditer(text):  # noqa: B007  # the last one: the old greedy `.*` took it
            pass
        nic = _LINK_NIC.search(text) if last else None
        if last and nic and nic.end() <= last.start():
            return LogEvent(t, "link_down" if last[1].lower() == "down" else "link_up", vmnic=nic[1])
    if "ink " in text and (sp := link_speed(text)) is not None:  # a driver's link-up line with its speed
        return LogEvent(t, "link_speed", vmnic=sp.vmnic, detail=to_detail(sp))
    return None


def device_in(text: str) -> str | None:
    """The first `naa.…`/`eui.…`/`t10.…`/`mpx.…` name that ends at a delimiter or the end of text."""
    pos = 0
    while m := _DEV_START.search(text, pos):
        run = _DEV_RUN.match(text, m.start())
        end = run.end() if run else m.end()
        if end == len(text) or text[end] in _DEV_END:
            return text[m.start() : end]
        pos = end  # every prefix inside this run ends at the same place: none can match
    return None


def _candidate(raw: bytes) -> bool:
    k = _KEYS
    return k[0] in raw or k[1] in raw or k[2] in raw or k[3] in raw or k[4] in raw


def vob_event(t: float, text: str) -> LogEvent | None:
    m = _VOB.search(text)
    if m is None:
        return None
    rest = m[2]
    nic = _VMNIC.search(rest)
    if ".nfs." in m[1] or "NFS" in rest:  # an NFS server or datastore: never a vSAN device or disk
        return LogEvent(t, "vob", vmnic=nic[1] if nic else None, detail=m[1])
    dev = device_in(rest)
    u = _UUID.search(rest)
    return LogEvent(
        t,
        "vob",
        device=dev.split(":", 1)[0] if dev else None,
        vmnic=nic[1] if nic else None,
        uuid=u[0] if u else None,
        detail=m[1],
    )


def parse_log(
    lines: Iterable[bytes], source: str, budget: EventBudget | None = None, scope: str = "", path: str = ""
) -> LogFile:
    """Lines must already be bounded in length (textio.BoundedLines): every regex here is linear, but
    a line's cost is still its length. A network VOB that changes its vmnic's link state adds a link
    event (linkvob.LinkTracker) after its VOB event. `path`: the file inside the upload, which the
    lines kept to cite (LogFile.cited, numbered from 1 as the file's lines) are quoted from."""
    out = LogFile(source, path=path)
    links = LinkTracker()
    budget = budget or EventBudget()
    citer = Citer(out, budget)
    # BoundedLines skips over-long lines unread: the line number counts them (each was skipped before
    # the line after it is handed out, so at every line its count is those skipped above it)
    skipped = (lambda: lines.long_lines) if isinstance(lines, BoundedLines) else (lambda: 0)
    handed = 0
    vobd = source == "vobd"
    # What a line means does not depend on its timestamp (always ending in "Z"): repeated messages
    # (a flapping link, a failing device: the lines an attack repeats too) are matched once. Nor on its
    # vmkernel prefix (cpu, world, opID): a message is matched once whichever world logged it.
    memo: dict[bytes, LogEvent | None] = {}
    for raw in lines:
        handed += 1
        if not raw or raw.isspace():
            continue
        out.lines += 1
        got = timestamp(raw)
        if got is None:
            out.untimed += 1
            continue
        t, body_at = got
        if out.first is None or t < out.first:
            out.first = t
        if out.last is None or t > out.last:
            out.last = t
        vob = vobd or b"us: [" in raw
        if not vob and not _candidate(raw):
            continue
        pre = None if vob else _PREFIX.match(raw, body_at)
        body = raw[pre.end() if pre else body_at :]
        if body in memo:
            hit = memo[body]
        else:
            text = body.decode("utf-8", "replace")
            hit = vob_event(0.0, text) if vob else _message_event(0.0, text)
            if hit is not None:  # names repeat across events: one copy each
                hit = LogEvent(0.0, hit.kind, *(None if v is None else sys.intern(v) for v in hit[2:]))
            if len(memo) < MEMO_LINES and len(body) <= MEMO_LINE_BYTES:
                memo[body] = hit
        if hit is None:
            continue
        ev = LogEvent(t, *hit[1:])
        link = links.event(ev) if hit.kind == "vob" else None
        for e in (ev,) if link is None else (ev, link):
            if budget.admit(scope, e):
                out.events.append(e)
                citer.keep(e, handed + skipped(), raw)
            else:
                out.dropped += 1
    return out

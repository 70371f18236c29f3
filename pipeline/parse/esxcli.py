"""esxcli text tables: `vsan storage list`, `vsan network list`, `network nic list` (nicinfo)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Final


def _is_rule(line: str) -> bool:
    """A dashed rule: `---  -----  --` (two runs at least). Checked without a regex: the pattern form
    `^-+(\\s+-+)+\\s*$` nests quantifiers over untrusted text."""
    return line[:1] == "-" and line.replace("-", " ").isspace() and len(line.split()) >= 2


@dataclass
class StorageDevice:
    device: str
    uuid: str | None
    dg_uuid: str | None
    dg_name: str | None
    is_ssd: bool
    is_capacity: bool | None
    dedup: bool | None
    compression: bool | None


@dataclass
class VmkNic:
    name: str
    traffic: str | None


@dataclass
class NicRow:
    """One `esxcli network nic list` row. A port whose link is down reports `Speed 0` and (often)
    `Duplex Half`: that is no negotiation at all, not a 0 Mb/s half-duplex link, so its speed and
    duplex are unknown (None) and only `link_up` False says what is wrong with it."""

    name: str
    link_up: bool | None
    speed_mbps: float | None  # None: not reported, or the link is down
    duplex_full: bool | None  # None: not reported, or the link is down
    mtu: float | None
    driver: str | None
    rated_mbps: float | None = None  # what the port was built for, read off its Description (rated_mbps)


# A rating in a NIC's description: "10GbE", "25GbE", "100GbE", "10-Gigabit", "10 Gigabit", "10GBASE-T",
# "10Gb/25Gb", "25G" (a number, then a unit right after it), or "Gigabit" with no number before it (1 GbE:
# "I350 Gigabit Network Connection", "NetXtreme BCM5720 Gigabit Ethernet"). Every run is bounded and the
# alternatives start on different characters: linear.
_RATING: Final = re.compile(
    r"(?<![\w.])(\d{1,3}(?:\.\d)?)[ -]?(?:gbe|gige|gigabit|gbase|gb/s|gbps|gb|g)(?![a-z0-9])", re.IGNORECASE
)
_GIGABIT: Final = re.compile(r"(?<![\w-])gigabit(?![a-z])", re.IGNORECASE)
# Ethernet's rates in Gb/s: a number outside them ("X710", "ConnectX-4", "I350-T2") is a model, not a rate.
_RATES: Final = frozenset({1.0, 2.5, 5.0, 10.0, 25.0, 40.0, 50.0, 100.0, 200.0, 400.0})
DESCRIPTION_CHARS: Final = 256  # a description past this (a hostile 1 MB cell) is read no further


def rated_mbps(description: str | None) -> float | None:
    """The speed a NIC was built for, from its description, in Mb/s: the fastest rating it names (a
    "10Gb/25Gb" port is a 25 GbE port that can run at 10); None when it names none."""
    text = (description or "")[:DESCRIPTION_CHARS]
    rates = [float(m[1]) for m in _RATING.finditer(text) if float(m[1]) in _RATES]
    if rates:
        return 1000.0 * max(rates)
    return 1000.0 if _GIGABIT.search(text) else None


def _bool(v: str | None) -> bool | None:
    if v is None:
        return None
    v = v.strip().lower()
    return True if v == "true" else False if v == "false" else None


def _blocks(text: str) -> list[tuple[str, dict[str, str]]]:
    """Blocks of `Head` followed by indented `Key: value` lines."""
    out: list[tuple[str, dict[str, str]]] = []
    cur: dict[str, str] | None = None
    for line in text.splitlines():
        if not line.strip():
            continue
        if not line[0].isspace():
            cur = {}
            out.append((line.strip(), cur))
        elif cur is not None and ":" in line:
            k, v = line.split(":", 1)
            cur[k.strip()] = v.strip()
    return out


def sniff_storage(head: bytes) -> bool:
    return b"VSAN UUID:" in head and b"Device:" in head


def parse_storage_list(text: str) -> list[StorageDevice]:
    out = []
    for head, kv in _blocks(text):
        dev = kv.get("Device") or head
        if not dev or " " in dev:
            continue
        out.append(
            StorageDevice(
                device=dev.split(":", 1)[0],
                uuid=kv.get("VSAN UUID") or None,
                dg_uuid=kv.get("VSAN Disk Group UUID") or None,
                dg_name=kv.get("VSAN Disk Group Name") or None,
                is_ssd=bool(_bool(kv.get("Is SSD"))),
                is_capacity=_bool(kv.get("Is Capacity Tier")),
                dedup=_bool(kv.get("Deduplication")),
                compression=_bool(kv.get("Compression")),
            )
        )
    return out


def sniff_network(head: bytes) -> bool:
    return b"VmkNic Name:" in head


def parse_network_list(text: str) -> list[VmkNic]:
    return [VmkNic(kv["VmkNic Name"], kv.get("Traffic Type")) for _h, kv in _blocks(text) if "VmkNic Name" in kv]


def sniff_nicinfo(head: bytes) -> bool:
    lines = head.splitlines()[:200]
    return any(ln.startswith(b"Name") and b"Speed" in ln and b"Duplex" in ln for ln in lines)


def _num(v: str | None) -> float | None:
    try:
        return float(v) if v not in (None, "") else None
    except ValueError:
        return None


def _link_details(lines: list[str]) -> dict[str, bool]:
    """Per vmnic, the link state of nicinfo.sh's per-NIC blocks (`NIC:  vmnicN`, then `NICInfo:` with
    `Link Detected: false` and, on some versions, `Link Status: Down`); False where any says down."""
    out: dict[str, bool] = {}
    nic = None
    for line in lines:
        s = line.strip()
        if s.startswith("NIC:"):
            parts = s[4:].split(None, 1)
            nic = parts[0] if parts and parts[0].startswith("vmnic") else None
        elif s and not line[0].isspace() and s != "NICInfo:":
            nic = None  # another section of the script's output
        elif nic is not None and s.startswith(("Link Detected:", "Link Status:")):
            v = s.split(":", 1)[1].strip().lower()
            if v in ("false", "down"):
                out[nic] = False
            elif v in ("true", "up"):
                out.setdefault(nic, True)
    return out


def _row(name: str, link: str, speed: float | None, duplex: str, detected: bool | None) -> NicRow:
    """What an engineer reads in a row: a link reported down (Link Status, or Link Detected: false in
    the NIC's details), or with no speed (0), has no negotiated speed or duplex to judge."""
    up = True if link == "up" else False if link == "down" else None
    if detected is False or (up is None and speed == 0):
        up = False
    elif up is None:
        up = detected
    full = True if duplex == "full" else False if duplex == "half" else None
    if up is False or speed == 0:
        speed, full = None, None
    return NicRow(name=name, link_up=up, speed_mbps=speed, duplex_full=full, mtu=None, driver=None)


def parse_nicinfo(text: str) -> list[NicRow]:
    lines = text.splitlines()
    details = _link_details(lines)
    for i, line in enumerate(lines):
        if not (line.startswith("Name") and "Speed" in line and "Duplex" in line):
            continue
        # Column spans come from the dashed rule when there is one, else from header words.
        if i + 1 < len(lines) and _is_rule(lines[i + 1]):
            spans = [(m.start(), m.end()) for m in re.finditer(r"-+", lines[i + 1])]
            body = lines[i + 2 :]
        else:
            spans = [(m.start(), m.end()) for m in re.finditer(r"\S+(?: \S+)*", line)]
            body = lines[i + 1 :]
        names = [line[a:b].strip() if k + 1 < len(spans) else line[a:].strip() for k, (a, b) in enumerate(spans)]
        out = []
        for row in body:
            if not row.strip():
                break
            cells = {}
            for k, (a, _b) in enumerate(spans):
                end = spans[k + 1][0] if k + 1 < len(spans) else len(row)
                cells[names[k]] = row[a:end].strip()
            name = cells.get("Name") or row.split()[0]
            if not name.startswith("vmnic"):
                continue
            link = cells.get("Link Status", "").lower()
            duplex = cells.get("Duplex", "").lower()
            speed = _num(cells.get("Speed"))
            if speed is None or duplex not in ("full", "half"):
                # a row wider than its columns (long driver name): fall back to the token order
                toks = row.split()
                speed = next((float(t) for t in toks[3:] if t.isdigit()), speed)
                duplex = next((t.lower() for t in toks if t in ("Full", "Half")), duplex)
                link = next((t.lower() for t in toks[3:5][::-1] if t in ("Up", "Down")), link)
            name = name.split()[0]
            r = _row(name, link, speed, duplex, details.get(name))
            r.mtu, r.driver = _num(cells.get("MTU")), cells.get("Driver") or None
            r.rated_mbps = rated_mbps(cells.get("Description"))
            out.append(r)
        return out
    return []

"""vmkernel / vmkwarning / vobd writer: every event kind in the real message shapes, both ESXi styles,
benign noise that never borrows a fault's shape, rotation, determinism."""

from __future__ import annotations

import calendar
import gzip
import re
import time
from pathlib import Path

import numpy as np
import pytest

from data.simulate.events import EVENT_KINDS, Event, HostLogContext, NicInfo
from data.simulate.logs import render_host_logs
from tests.conftest import load_checker

ROOT = Path(__file__).resolve().parents[2]
START = 1772445600.0  # 2026-03-02T10:00:00Z
END = START + 7200.0
DEV, DEV2 = "naa.5000c500a1b2c3d4", "naa.55cd2e404ba2ce71"
DISK, DG = "52f1a0b1-1111-2222-3333-444455556666", "5289c2d3-1111-2222-3333-444455556666"
PEER = "5f1e2d3c-aaaa-bbbb-cccc-0123456789ac"
ISO = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z")
KERN = {
    7: re.compile(r"^\S+ cpu(\d+):(\d+)\)"),
    8: re.compile(r"^\S+ (?:In\(182\)|Wa\(180\)) vmkernel: cpu(\d+):(\d+)\)"),
}
WARN = {7: KERN[7], 8: re.compile(r"^\S+ Wa\(180\) vmkwarning: cpu(\d+):(\d+)\)")}
VOB = {
    7: re.compile(r"^\S+Z: \[\w+\] \d+us: \[[\w.]+\] \S"),
    8: re.compile(r"^\S+Z In\(14\) vobd\[\d+\]: \[\w+\] \d+us: \[[\w.]+\] \S"),
}

ATTRS: dict[str, dict[str, str | int | float]] = {
    "scsi_fail": {"device": DEV, "opcode": "0x28", "host_status": "0x0", "device_status": "0x2",
                  "sense": "0x3 0x11 0x0"},
    "dev_deteriorated": {"device": DEV, "avg_us": 1343, "now_us": 28022.4},
    "dev_improved": {"device": DEV, "from_us": 28022, "to_us": 1500},
    "lsom_congestion": {"dg_uuid": DG, "ctype": "SSD", "threshold": 200, "current": 255},
    "lsom_congestion_clear": {"dg_uuid": DG, "ctype": "Log", "current": 120},
    "link_down": {"vmnic": "vmnic1", "pci": "0000:04:00.1"},
    "link_up": {"vmnic": "vmnic1", "pci": "0000:04:00.1", "speed_mbps": 1000, "duplex": "Full"},
    "perm_error": {"disk_uuid": DISK},
    "disk_offline": {"disk_uuid": DISK, "device": DEV},
    "disk_online": {"disk_uuid": DISK, "device": DEV},
    "node_left": {"node_uuid": PEER},
    "node_joined": {"node_uuid": PEER},
    "resync_start": {"objects": 42, "bytes_to_sync": 123456789},
}  # fmt: skip

_N = r"naa\.5000c500a1b2c3d4"
_DET = r"performance has deteriorated\. I/O latency increased from average value of 1343 microseconds to 28022"
_KW = ("vmkernel", "vmkwarning")
# (file, regex on the message) per kind: the real shapes of bundle-format.md section 5
SHAPES: dict[str, list[tuple[str, str]]] = {
    "scsi_fail": [
        (f, rf'ScsiDeviceIO: \d+: Cmd\(0x[0-9a-f]+\) 0x28, CmdSN 0x[0-9a-f]+ from world \d+ to dev "{_N}" '
            r"failed H:0x0 D:0x2 P:0x0 Valid sense data: 0x3 0x11 0x0")
        for f in _KW
    ],
    "dev_deteriorated": [
        *((f, rf"WARNING: ScsiDeviceIO: \d+: Device {_N} {_DET} microseconds\.$") for f in _KW),
        ("vobd", rf"\[esx\.problem\.scsi\.device\.io\.latency\.high\] Device {_N} {_DET} microseconds\.$"),
    ],
    "dev_improved": [
        ("vmkernel", rf"ScsiDeviceIO: \d+: Device {_N} performance has improved\. "
                     r"I/O latency reduced from 28022 microseconds to 1500 microseconds\.$"),
        ("vobd", rf"\[esx\.clear\.scsi\.device\.io\.latency\.improved\] Device {_N} performance has "
                 r"improved\."),
    ],
    "lsom_congestion": [
        ("vmkernel", r"LSOM: LSOM_ThrowAsyncCongestionVOB:\d+: LSOM SSD Congestion State: Exceeded\. "
                     r"Congestion Threshold: 200 Current Congestion: 255\.$"),
        ("vmkernel", rf"LSOM: \w+:\d+: Throttled: .*SSD {DG} congestion reached\.$"),
        ("vobd", r"\[esx\.problem\.vsan\.lsom\.congestionthreshold\] LSOM SSD Congestion State: Exceeded\. "
                 r"Congestion Threshold: 200 Current Congestion: 255\.$"),
    ],
    "lsom_congestion_clear": [
        ("vmkernel", r"LSOM: LSOM_ThrowAsyncCongestionVOB:\d+: LSOM Log Congestion State: Normal\. "
                     r"Congestion Threshold: 200 Current Congestion: 120\.$"),
        ("vobd", r"\[esx\.clear\.vsan\.lsom\.congestionthreshold\] LSOM Log Congestion State: Normal\."),
    ],
    "link_down": [
        ("vmkernel", r"\)vmnic1 : 0000:04:00\.1 Link Down$"),
        ("vmkernel", r"netschedHClk: NetSchedHClkNotify:\d+: vmnic1: link down notification$"),
        ("vobd", r"\[vob\.net\.vmnic\.linkstate\.down\] vmnic vmnic1 linkstate down$"),
        ("vobd", r"\[esx\.problem\.net\.vmnic\.linkstate\.down\] Physical NIC vmnic1 linkstate is down$"),
    ],
    "link_up": [
        ("vmkernel", r"\)vmnic1 : 0000:04:00\.1 Link Up$"),
        ("vmkernel", r"\)i40en: \w+:\d+: vmnic1: NIC Link is Up 1000 Mbps Full Duplex$"),
        ("vobd", r"\[vob\.net\.vmnic\.linkstate\.up\] vmnic vmnic1 linkstate up$"),
        ("vobd", r"\[esx\.clear\.net\.vmnic\.linkstate\.up\] Physical NIC vmnic1 linkstate is up$"),
    ],
    "perm_error": [
        *((f, rf"WARNING: LSOM: LSOMEventNotify:\d+: Virtual SAN device {DISK} is under permanent error\.$")
          for f in _KW),
        ("vobd", rf"\[esx\.problem\.vob\.vsan\.lsom\.diskerror\] vSAN device {DISK} is under permanent "
                 r"error\.$"),
    ],
    "disk_offline": [
        ("vmkwarning", rf"Device {_N} has been removed or is permanently inaccessible\.$"),
        ("vobd", rf"\[esx\.problem\.vob\.vsan\.pdl\.offline\] vSAN device {DISK} has gone offline\.$"),
    ],
    "disk_online": [
        ("vobd", rf"\[esx\.clear\.vob\.vsan\.pdl\.online\] vSAN device {DISK} has come online\.$"),
    ],
    "node_left": [("vmkernel", rf"CMMDS: \w+:\d+: Removing node {PEER} from the cluster membership$")],
    "node_joined": [("vmkernel", rf"CMMDS: \w+:\d+: Adding node {PEER} to the cluster membership$")],
    "resync_start": [("vmkernel", r"DOM: \w+:\d+: Resync of 42 objects scheduled, 123456789 bytes to sync$")],
}  # fmt: skip

# shapes that belong to faults and must never come from the background
FAULT_SIGNS = (
    "deteriorated", "Valid sense data: 0x3", "Valid sense data: 0x4", "Possible sense data", "H:0x5", "H:0x8",
    "Congestion State: Exceeded", "congestion reached", "Link Down", "linkstate down", "linkstate is down",
    "permanent error", "gone offline", "permanently inaccessible", "state in doubt", "Removing node",
    "Destroying node", "Resync of",
)  # fmt: skip


def _ctx(major: int, n_cpus: int = 24) -> HostLogContext:
    nics = (
        NicInfo("vmnic0", "0000:04:00.0", "ixgben", "00:1b:21:aa:bb:01", 10000, "Full", 1500, "Intel X550"),
        NicInfo("vmnic1", "0000:04:00.1", "i40en", "00:1b:21:aa:bb:02", 10000, "Full", 9000, "Intel X710"),
    )
    return HostLogContext(
        hostname="esx-02.lab.local",
        host_uuid="5f1e2d3c-aaaa-bbbb-cccc-0123456789ab",
        esxi_major=major,
        build="8.0.2-22380479" if major == 8 else "7.0.3-21930508",
        n_cpus=n_cpus,
        devices=(DEV, DEV2, "naa.5000c500a1b2c3d5"),
        disk_uuids=(DISK, DG),
        nics=nics,
        peer_uuids=(PEER, "5f1e2d3c-aaaa-bbbb-cccc-0123456789ad"),
    )


def _all_events() -> list[Event]:
    return [Event(START + 300.0 + 60.0 * i + 0.25, k, ATTRS[k]) for i, k in enumerate(EVENT_KINDS)]


def _lines(out: dict[str, bytes], name: str) -> list[str]:
    """One log's lines oldest first, rotated parts included."""
    base = f"var/run/log/{name}"
    rot = sorted((int(p.split(".")[-2]) for p in out if p.startswith(base + ".") and p.endswith(".gz")), reverse=True)
    text = "".join(gzip.decompress(out[f"{base}.{i}.gz"]).decode() for i in rot) + out[base + ".log"].decode()
    return text.splitlines()


def test_attrs_cover_every_kind() -> None:
    assert set(ATTRS) == set(EVENT_KINDS) == set(SHAPES)


@pytest.mark.parametrize("major", [7, 8])
@pytest.mark.parametrize("kind", list(EVENT_KINDS))
def test_event_kind_in_real_shape(major: int, kind: str) -> None:
    out = render_host_logs(
        _ctx(major), [Event(START + 1800.5, kind, ATTRS[kind])], START, END, np.random.default_rng(7)
    )
    for name, pattern in SHAPES[kind]:
        rx = re.compile(pattern)
        hits = [ln for ln in _lines(out, name) if rx.search(ln)]
        assert hits, f"{kind}: no {name} line matches {pattern!r}"
        assert all(ln.startswith("2026-03-02T10:30:00.") for ln in hits), hits


@pytest.mark.parametrize("major", [7, 8])
def test_line_syntax_sorted_and_plausible(major: int) -> None:
    n_cpus = 12
    out = render_host_logs(_ctx(major, n_cpus), _all_events(), START, END, np.random.default_rng(3))
    for name, rx in (("vmkernel", KERN[major]), ("vmkwarning", WARN[major]), ("vobd", VOB[major])):
        lines = _lines(out, name)
        assert lines, name
        stamps = [ln[:24] for ln in lines]
        assert all(ISO.match(ln) for ln in lines), name
        assert stamps == sorted(stamps), f"{name} not in time order"
        for ln in lines:
            m = rx.match(ln)
            assert m, f"{name}: {ln!r}"
            if name != "vobd":
                assert int(m.group(1)) < n_cpus and 2097152 <= int(m.group(2)) < 2200000, ln
    uptimes = [int(re.search(r"\] (\d+)us: ", ln).group(1)) for ln in _lines(out, "vobd")]  # type: ignore[union-attr]
    assert uptimes == sorted(uptimes) and len(set(uptimes)) == len(uptimes)


@pytest.mark.parametrize("major", [7, 8])
def test_warning_lines_go_to_both_logs(major: int) -> None:
    out = render_host_logs(_ctx(major), _all_events(), START, END, np.random.default_rng(5))
    body = {7: lambda ln: ln, 8: lambda ln: ln[:25] + ln[25:].split(": ", 1)[1]}[major]
    kern = [body(ln) for ln in _lines(out, "vmkernel")]
    warn = [body(ln) for ln in _lines(out, "vmkwarning")]
    assert warn and set(warn) <= set(kern)
    assert {ln for ln in kern if ")WARNING: " in ln} <= set(warn)
    if major == 8:
        assert all(" Wa(180) vmkernel: " in ln for ln in _lines(out, "vmkernel") if ")WARNING: " in ln)


def test_host_side_failure_and_int_attrs() -> None:
    ev = Event(
        START + 60.0,
        "scsi_fail",
        {"device": DEV, "opcode": 0x2A, "host_status": np.int64(5), "device_status": 0, "sense": ""},
    )
    out = render_host_logs(_ctx(8), [ev], START, END, np.random.default_rng(1))
    kern = "\n".join(_lines(out, "vmkernel"))
    assert re.search(rf'ScsiDeviceIO: \d+: Cmd\(0x[0-9a-f]+\) 0x2a, .* to dev "{_N}" failed H:0x5 D:0x0 P:0x0', kern)
    assert any(f'NMP device "{DEV}" state in doubt' in ln for ln in _lines(out, "vmkwarning"))


@pytest.mark.parametrize("seed", range(6))
def test_benign_noise_covers_the_window_without_fault_shapes(seed: int) -> None:
    ctx = _ctx(7 + seed % 2)
    out = render_host_logs(ctx, [], START, END, np.random.default_rng(seed))
    every = []
    for name in ("vmkernel", "vmkwarning", "vobd"):
        lines = _lines(out, name)
        every += lines
        assert all(START <= _epoch(ln) <= END for ln in lines)
        if name == "vmkernel":
            # a few to a few dozen per hour, in both halves of the window
            assert 8 <= len(lines) <= 400
            half = START + 3600.0
            assert any(_epoch(ln) < half for ln in lines) and any(_epoch(ln) >= half for ln in lines)
    text = "\n".join(every)
    for sign in FAULT_SIGNS:
        assert sign not in text, sign
    assert re.search(r"failed H:0x0 D:0x2 P:0x0 Valid sense data: 0x5 0x2[04] 0x0", text)
    assert any(dev in text for dev in ctx.devices)


def _epoch(line: str) -> float:
    return calendar.timegm(time.strptime(line[:19], "%Y-%m-%dT%H:%M:%S")) + int(line[20:23]) / 1000


def test_rotated_copies_hold_the_older_part() -> None:
    seen = 0
    for seed in range(40):
        out = render_host_logs(_ctx(7), _all_events(), START, END, np.random.default_rng(seed))
        for path, data in out.items():
            assert re.fullmatch(r"var/run/log/(vmkernel|vmkwarning|vobd)\.(log|\d\.gz)", path), path
            if not path.endswith(".gz"):
                continue
            seen += 1
            assert data[4:8] == b"\0\0\0\0"  # gzip mtime 0: bytes depend on content only
            older = gzip.decompress(data).decode().splitlines()
            name, n = path.rsplit(".", 2)[0], int(path.split(".")[-2])
            newer_path = f"{name}.{n - 1}.gz" if n else f"{name}.log"
            newer = out[newer_path]
            newer_lines = (gzip.decompress(newer) if newer_path.endswith(".gz") else newer).decode().splitlines()
            assert older and newer_lines and older[-1][:23] <= newer_lines[0][:23]
    assert seen >= 5


def test_deterministic() -> None:
    a = render_host_logs(_ctx(8), _all_events(), START, END, np.random.default_rng(11))
    b = render_host_logs(_ctx(8), _all_events(), START, END, np.random.default_rng(11))
    c = render_host_logs(_ctx(8), _all_events(), START, END, np.random.default_rng(12))
    assert a == b and a != c


@pytest.mark.parametrize("major", [7, 8])
def test_bundle_checker_accepts_logs(major: int) -> None:
    mod = load_checker()
    ck = mod.Checker("t")
    out = render_host_logs(_ctx(major), _all_events(), START, END, np.random.default_rng(2))
    for path, data in out.items():
        ck.check_log((gzip.decompress(data) if path.endswith(".gz") else data).decode(), path)
    assert ck.problems == [] and ck.warnings == []

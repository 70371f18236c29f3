# ruff: noqa: E501 - log lines are quoted verbatim
"""vmkernel / vmkwarning lines in every shape (ESXi 7, ESXi 8 severity tags, `opID=` tokens) read the same,
and NFS datastore lines never become vSAN disk events (issue 17 item 5)."""

from __future__ import annotations

from pathlib import Path

import pytest

from pipeline.parse import logs

REAL_LOGS = Path(__file__).resolve().parents[3] / ".." / "shared" / "samples" / "real" / "logs"
TS = "2026-03-02T10:00:00.000Z"
DG = "52a1b2c3-0000-1111-2222-333344445555"

# One message of each event kind the parser reads.
MESSAGES = [
    'ScsiDeviceIO: 4325: Cmd(0x45be74dae040) 0x28, CmdSN 0xd65263a8 from world 0 to dev "naa.5000c500a1b2c3d4" failed H:0x0 D:0x2 P:0x0 Valid sense data: 0x3 0x11 0x0',
    'ScsiDeviceIO: 4325: Cmd(0x45) 0x1a, CmdSN 0x1 from world 0 to dev "naa.5000c500a1b2c3d4:2" failed H:0x0 D:0x2 P:0x0 Valid sense data: 0x5 0x24 0x0',
    'ScsiDeviceIO: 1: Cmd 0x2a to dev "naa.6000c29" failed H:0x5 D:0x0 P:0x0 ',
    "WARNING: ScsiDeviceIO: 1513: Device naa.5000c500a1b2c3d4 performance has deteriorated. I/O latency increased from average value of 1343 microseconds to 28022 microseconds.",
    "ScsiDeviceIO: 1493: Device naa.5000c500a1b2c3d4 performance has improved. I/O latency reduced from 28022 microseconds to 5521 microseconds.",
    f"LSOM: LSOM_ThrowAsyncCongestionVOB:3012: LSOM SSD Congestion State: Exceeded. Congestion Threshold: 200 Current Congestion: 255. Disk group {DG}",
    "LSOM: LSOM_ThrowAsyncCongestionVOB:3023: LSOM SSD Congestion State: Normal. Congestion Threshold: 200 Current Congestion: 12.",
    f"WARNING: LSOM: LSOMEventNotify:6440: Virtual SAN device {DG} is under permanent error.",
    "vmnic3 : 0000:04:00.1 Link Down",
    "vmnic3 : 0000:04:00.1 Link Up",
]
# The prefixes a message arrives with: ESXi 6.x/7, an opID token (any version; vCenter's opIDs may be
# UUID-shaped), ESXi 8's severity tag and source, both.
PREFIXES = [
    " cpu12:2098330)",
    " cpu0:2127075 opID=55d67df2)",
    " cpu0:2127075 opID=9f3e2d10-aaaa-4bbb-8ccc-0123456789ab)",
    " In(182) vmkernel: cpu10:2099084)",
    " Wa(180) vmkwarning: cpu3:2097803)",
    " In(182) vmkernel: cpu10:2099084 opID=a9f5cca4)",
    " Wa(180) vmkwarning: cpu2:2097803 opID=9f3e2d10-aaaa-4bbb-8ccc-0123456789ab)",
]


def _events(lines: list[str], source: str = "vmkernel") -> list[logs.LogEvent]:
    return logs.parse_log(iter(ln.encode() for ln in lines), source).events


def _real(name: str) -> Path:
    p = REAL_LOGS / name
    if not p.exists():
        pytest.skip(f"real sample {p} absent (../shared/samples/real/logs is not checked out here)")
    return p


@pytest.mark.parametrize("msg", MESSAGES)
def test_every_prefix_reads_the_same_event(msg: str) -> None:
    want = _events([TS + PREFIXES[0] + msg])
    assert len(want) == 1
    for pre in PREFIXES[1:]:
        assert _events([TS + pre + msg]) == want, pre
        assert logs.event_of(0.0, pre + msg) == logs.event_of(0.0, PREFIXES[0] + msg), pre


def test_uuid_shaped_opid_is_not_the_disk_group() -> None:
    (ev,) = _events([TS + PREFIXES[-1] + MESSAGES[5]])
    assert ev.kind == "lsom_congestion" and ev.uuid == DG
    # A congestion line naming no group does not take the opID for one.
    (ev,) = _events([TS + PREFIXES[2] + MESSAGES[6]])
    assert ev.kind == "lsom_congestion_clear" and ev.uuid is None


def test_prefix_is_stripped_once_and_only_when_it_is_one() -> None:
    assert logs.message(" In(182) vmkernel: cpu1:2 opID=x)Link Down") == "Link Down"
    assert logs.message(" cpu1:2)cpu3:4)x") == "cpu3:4)x"
    no_prefix = " vmnic3 : 0000:04:00.1 Link Down"  # a line without `cpuN:world)` is read whole
    assert logs.message(no_prefix) == no_prefix
    assert logs.event_of(0.0, no_prefix) == logs.LogEvent(0.0, "link_down", vmnic="vmnic3")
    unterminated = " In(182) vmkernel: cpu1:2 opID=" + "x" * 100_000
    assert logs.message(unterminated) == unterminated


def test_same_message_from_other_worlds_is_one_memo_entry() -> None:
    lines = [f"2026-03-02T10:00:{i:02d}.000Z{PREFIXES[i % len(PREFIXES)]}{MESSAGES[8]}" for i in range(30)]
    lf = logs.parse_log(iter(ln.encode() for ln in lines), "vmkernel")
    assert [e.kind for e in lf.events] == ["link_down"] * 30
    assert len({e[1:] for e in lf.events}) == 1


def test_real_esxi8_block_reads_like_esxi7() -> None:
    raw = _real("esxi8_vmkernel_vmkwarning_nfs.log").read_bytes().splitlines()
    lf = logs.parse_log(iter(raw), "vmkwarning")
    assert lf.lines == len(raw) == 8 and lf.untimed == 0
    assert lf.first is not None and lf.last is not None and lf.last - lf.first == pytest.approx(206.327)
    # Nothing here is a vSAN event: the NFS latency warnings name a datastore, not a device or disk.
    assert lf.events == []
    # Each real prefix (severity tag, source, cpu:world, opID) carries our messages as ESXi 7 lines do.
    for line in raw:
        head = line.decode()
        pre = head[len(TS) : head.index(")") + 1]
        for msg in MESSAGES:
            assert _events([TS + pre + msg]) == _events([TS + PREFIXES[0] + msg]), (pre, msg)


def test_real_nfs_deterioration_lines_stay_off_disks_in_every_shape() -> None:
    raw = _real("esxi8_vmkernel_vmkwarning_nfs.log").read_text().splitlines()
    nfs = [ln for ln in raw if "NFS volume" in ln]
    assert len(nfs) == 4 and sum("performance has deteriorated" in ln for ln in nfs) == 3
    for ln in nfs:
        msg = ln[ln.index(")") + 1 :]
        for pre in PREFIXES:
            assert _events([TS + pre + msg], "vmkernel") == []


def test_synthetic_nfs_lines_are_not_disk_events() -> None:
    vid = "0753971d-bf82-42f2-a175-d2ac9f412633"
    lines = [
        f"{TS} Wa(180) vmkwarning: cpu3:2097803)WARNING: NFS: 5544: NFS volume fi-{vid} performance has deteriorated. I/O latency increased from average value of 0(us) to 10614(us). Exceeded threshold 10000(us)",
        f"{TS} cpu3:2097803)WARNING: NFS: 5544: NFS volume {vid} performance has deteriorated. I/O latency increased from average value of 0(us) to 10614(us).",
        f"{TS} cpu3:2097803)WARNING: NFS: 5544: NFS volume naa.6000c29 performance has deteriorated.",
    ]
    assert _events(lines) == []
    vobs = [
        f"{TS}: [vmfsCorrelator] 1us: [esx.problem.vmfs.nfs.server.disconnect] 192.168.33.2 /zbs/fi-{vid} {vid}",
        f"{TS}: [vmfsCorrelator] 2us: [vob.vmfs.nfs.volume.latency] NFS volume naa.6000c29 {vid} performance has deteriorated.",
    ]
    evs = _events(vobs, "vobd")
    assert [(e.kind, e.device, e.uuid, e.vmnic) for e in evs] == [("vob", None, None, None)] * 2
    # A device's deterioration still names its device, with or without the ScsiDeviceIO tag.
    (ev,) = _events([f"{TS} Wa(180) vmkwarning: cpu1:1)WARNING: Device naa.9 performance has deteriorated."])
    assert (ev.kind, ev.device) == ("deteriorated", "naa.9")


def test_uuid_is_a_whole_token() -> None:
    evs = _events([f"{TS}: [c] 1us: [esx.problem.vob] vSAN device {DG} is under permanent error."], "vobd")
    assert evs[0].uuid == DG
    for text in (f"fi-{DG}", f"{DG}-00", f"x{DG}"):
        assert _events([f"{TS}: [c] 1us: [esx.problem.vob] device {text} gone"], "vobd")[0].uuid is None

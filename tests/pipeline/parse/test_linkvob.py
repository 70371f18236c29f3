# ruff: noqa: E501 - log lines are quoted verbatim
"""vobd's link VOBs become one link event per transition of the vmnic they name (issue 17 item 5)."""

from __future__ import annotations

from pathlib import Path

import pytest

from pipeline.parse import linkvob, logs

REAL_LOGS = Path(__file__).resolve().parents[3] / ".." / "shared" / "samples" / "real" / "logs"

# One flap in the shapes ESXi writes (vmnic7 here), each VOB on its own second.
FLAP = [
    "[vob.net.pg.uplink.transition.down] Uplink: vmnic7 is down. Affected portgroup: vSAN. 1 uplinks up. Failed criteria: 128",
    "[vob.net.pg.uplink.transition.down] Uplink: vmnic7 is down. Affected portgroup: vMotion. 1 uplinks up. Failed criteria: 128",
    "[vob.net.vmnic.linkstate.down] vmnic vmnic7 linkstate down",
    "[esx.problem.net.vmnic.linkstate.down] Physical NIC vmnic7 linkstate is down",
    '[esx.problem.net.redundancy.lost] Lost uplink redundancy on virtual switch "vSwitch1". Physical NIC vmnic7 is down. Affected port groups: "vSAN"',
    '[esx.problem.net.connectivity.lost] Lost network connectivity on virtual switch "vSwitch1". Physical NIC vmnic7 is down. Affected portgroups:"vSAN"',
    "[vob.net.vmnic.linkstate.up] vmnic vmnic7 linkstate up",
    "[vob.net.pg.uplink.transition.up] Uplink:vmnic7 is up. Affected portgroup: vSAN. 2 uplinks up",
    "[esx.clear.net.vmnic.linkstate.up] Physical NIC vmnic7 linkstate is up",
    '[esx.clear.net.connectivity.restored] Network connectivity restored on virtual switch "vSwitch1", portgroups: "vSAN". Physical NIC vmnic7 is up',
    '[esx.clear.net.redundancy.restored] Uplink redundancy restored on virtual switch "vSwitch1". Physical NIC vmnic7 is up',
]


def _vobd(texts: list[str], start: int = 0) -> list[str]:
    return [
        f"2026-03-02T10:{(start + i) // 60:02d}:{(start + i) % 60:02d}.000Z: [netCorrelator] {i + 1}us: {x}"
        for i, x in enumerate(texts)
    ]


def _links(lines: list[str], source: str = "vobd") -> list[tuple[float, str, str | None]]:
    lf = logs.parse_log(iter(ln.encode() for ln in lines), source)
    return [(e.t % 3600, e.kind, e.vmnic) for e in lf.events if e.kind in linkvob.LINK_KINDS]


def test_real_vobd_flap_is_one_down_and_one_up() -> None:
    path = REAL_LOGS / "vobd_uplink_down_up.log"
    if not path.exists():
        pytest.skip(f"real sample {path} absent (../shared/samples/real/logs is not checked out here)")
    lf = logs.parse_log(iter(path.read_bytes().splitlines()), "vobd")
    vobs = [e for e in lf.events if e.kind == "vob"]
    assert len(vobs) == lf.lines == 7  # every VOB still counts as a VOB
    assert [e.vmnic for e in vobs] == ["vmnic6"] * 6 + [None]
    links = [(e.kind, e.vmnic, e.detail) for e in lf.events if e.kind in linkvob.LINK_KINDS]
    assert links == [("link_down", "vmnic6", None), ("link_up", "vmnic6", None)]
    down, up = (e.t for e in lf.events if e.kind in linkvob.LINK_KINDS)
    assert down == vobs[0].t and up == vobs[3].t  # at the first VOB of each transition
    assert up - down == pytest.approx(6.99)


def test_every_link_vob_shape_alone_is_a_transition() -> None:
    for text in FLAP:
        ((_, kind, nic),) = _links(_vobd([text]))
        assert nic == "vmnic7"
        vob_id = text[1 : text.index("]")]
        assert kind == ("link_up" if vob_id.endswith((".up", ".restored")) else "link_down"), vob_id
    assert set(linkvob.LINK_VOBS.values()) == linkvob.LINK_KINDS


def test_one_flap_many_vobs_one_event_each_way() -> None:
    assert [k for _, k, _ in _links(_vobd(FLAP))] == ["link_down", "link_up"]


def test_flapping_link_counts_every_transition() -> None:
    lines = _vobd(FLAP * 3)
    assert [k for _, k, _ in _links(lines)] == ["link_down", "link_up"] * 3


def test_vmnics_are_tracked_apart() -> None:
    texts = [FLAP[2], FLAP[2].replace("vmnic7", "vmnic2"), FLAP[4], FLAP[6], FLAP[6].replace("vmnic7", "vmnic2")]
    got = [(k, n) for _, k, n in _links(_vobd(texts))]
    assert got == [("link_down", "vmnic7"), ("link_down", "vmnic2"), ("link_up", "vmnic7"), ("link_up", "vmnic2")]


def test_reposted_loss_during_one_outage_is_the_same_outage() -> None:
    lines = _vobd(FLAP[2:3]) + _vobd(FLAP[4:5], start=3000)  # redundancy lost posted again 50 min later
    assert [k for _, k, _ in _links(lines)] == ["link_down"]


def test_vobs_that_are_not_a_vmnic_link_change_add_nothing() -> None:
    texts = [
        '[esx.problem.net.connectivity.lost] Lost network connectivity on virtual switch "vSwitch1". Affected portgroups:"vSAN"',
        "[esx.audit.dcui.network.restart] A management interface Management Network has been restarted.",
        "[esx.problem.net.vmknic.ip.duplicate] Duplicate IP address detected for 10.0.0.1 on interface vmk1, current owner being vmnic7",
        "[vob.net.vmnic.linkstate.downgrade] vmnic vmnic7 linkstate down",
    ]
    lf = logs.parse_log(iter(ln.encode() for ln in _vobd(texts)), "vobd")
    assert [e.kind for e in lf.events] == ["vob"] * 4


def test_link_vob_inside_a_vmkernel_log_is_read_too() -> None:
    assert [k for _, k, _ in _links(_vobd(FLAP[2:3]), "vmkernel")] == ["link_down"]


def test_tracker_memory_is_bounded() -> None:
    tr = linkvob.LinkTracker()
    for i in range(linkvob.MAX_TRACKED + 100):
        assert tr.event(logs.LogEvent(float(i), "vob", vmnic=f"vmnic{i}", detail="vob.net.vmnic.linkstate.down"))
    assert len(tr.state) == linkvob.MAX_TRACKED
    untracked = logs.LogEvent(
        0.0, "vob", vmnic=f"vmnic{linkvob.MAX_TRACKED + 1}", detail="vob.net.vmnic.linkstate.down"
    )
    assert tr.event(untracked) is not None  # untracked vmnics count every VOB rather than grow the table


def test_collapse_links_merges_echoes_across_logs_only() -> None:
    ev = logs.LogEvent
    evs = [
        ev(100.0, "link_down", vmnic="vmnic1"),  # vmkernel
        ev(100.004, "link_down", vmnic="vmnic1"),  # vobd, same transition
        ev(100.5, "vob", vmnic="vmnic1", detail="vob.net.vmnic.linkstate.down"),
        ev(101.0, "link_down", vmnic="vmnic2"),  # another vmnic
        ev(105.0, "link_up", vmnic="vmnic1"),
        ev(106.5, "link_up", vmnic="vmnic1"),  # a rotated vobd file's restored VOB
        ev(107.0, "link_down", vmnic="vmnic1"),  # it flaps again: a new transition
        ev(108.0, "link_up", vmnic="vmnic1"),
        ev(300.0, "link_up", vmnic="vmnic1"),  # minutes later, the down between lost: kept
    ]
    got = linkvob.collapse_links(evs)
    assert got == [evs[0], evs[2], evs[3], evs[4], evs[6], evs[7], evs[8]]

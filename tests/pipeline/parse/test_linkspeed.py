"""The speed a driver logged at link up (pipeline/parse/linkspeed.py): read in the shapes drivers write,
never from a link-down line or odd units, bounded on hostile lines; a port down since is unknown."""

from __future__ import annotations

import time

import pytest

from pipeline.parse.linkspeed import LinkSpeed, last_speeds, link_speed
from pipeline.parse.logs import LogEvent, event_of, parse_log

PREFIX = "cpu3:2097)"


@pytest.mark.parametrize(
    ("msg", "want"),
    [
        # the simulator's line (data/simulate/logs.py _link)
        ("ixgben: ixgben_CheckLink:1879: vmnic1: NIC Link is Up 1000 Mbps Full Duplex", ("vmnic1", 1000, True)),
        ("igbn: vmnic0: NIC Link is Up 1000 Mbps Full Duplex, Flow Control: RX/TX", ("vmnic0", 1000, True)),
        ("i40en: vmnic2: NIC Link is Up, 10 Gbps Full Duplex", ("vmnic2", 10000, True)),
        ("nmlx5_core: vmnic2: Link speed 25000 Mbps, full duplex", ("vmnic2", 25000, True)),
        ("nmlx5_core: vmnic3: Link speed 25000", ("vmnic3", 25000, None)),  # a bare number is Mb/s
        ("bnxtnet: vmnic4: link up, speed 25000 Mbps, full duplex", ("vmnic4", 25000, True)),
        ("e1000: vmnic5: NIC Link is Up 100 Mbps Half Duplex", ("vmnic5", 100, False)),
        ("ntg3: vmnic6: link is up, 1000Mb/s, duplex: half", ("vmnic6", 1000, False)),
    ],
)
def test_link_up_shapes(msg: str, want: tuple[str, float, bool | None]) -> None:
    assert link_speed(msg) == LinkSpeed(*want)
    ev = event_of(0.0, PREFIX + msg)
    assert ev is not None and ev.kind == "link_speed" and ev.vmnic == want[0]


@pytest.mark.parametrize(
    "msg",
    [
        "vmnic1: NIC Link is Down",
        "bnxtnet: vmnic4: link down, speed 25000 Mbps",  # the speed it had: down now
        "nmlx5_core: vmnic2: Link speed 25000 Kbps",  # odd units
        "nmlx5_core: vmnic2: Link speed 99999999 Mbps",  # past 400 Gb/s: not a link speed
        "nmlx5_core: vmnic2: Link speed 5 Mbps",  # under 10 Mb/s
        "igbn: NIC Link is Up 1000 Mbps Full Duplex",  # no vmnic named
        "vmnic1: NIC Link is Up",  # no speed
    ],
)
def test_not_a_speed(msg: str) -> None:
    assert link_speed(msg) is None


def test_a_transition_line_stays_a_transition() -> None:
    ev = event_of(0.0, PREFIX + "vmnic1 : 0000:04:00.1 Link Up")
    assert ev is not None and ev.kind == "link_up"


@pytest.mark.parametrize(
    "line",
    [
        "vmnic1: NIC Link is Up " + "1" * 1_000_000,
        "Link is Up " * 100_000 + " vmnic1",
        "vmnic1 " * 150_000 + "link up speed",
        "vmnic1: link up " + "1000 M" * 160_000,
        "vmnic1 link speed " + "full duplex " * 80_000,
    ],
)
def test_a_1mb_line_is_read_in_linear_time(line: str) -> None:
    t0 = time.process_time()
    link_speed(line)
    assert time.process_time() - t0 < 1.0


def _ev(t: float, kind: str, nic: str = "vmnic1", detail: str | None = None) -> LogEvent:
    return LogEvent(t, kind, vmnic=nic, detail=detail)


def test_the_last_speed_counts_and_a_port_down_since_is_unknown() -> None:
    evs = [
        _ev(1, "link_speed", detail="10000 Full"),
        _ev(5, "link_down"),
        _ev(6, "link_speed", detail="1000 Full"),  # renegotiated: this is its speed now
        _ev(2, "link_speed", "vmnic2", "25000 Full"),
        _ev(9, "link_down", "vmnic2"),  # went down after: no speed, not slow
        _ev(3, "link_speed", "vmnic3", "100 ?"),
        _ev(3, "link_down", "vmnic4"),  # only a down: nothing
    ]
    assert last_speeds(evs) == {"vmnic1": (1000.0, True), "vmnic3": (100.0, None)}


def test_parse_log_keeps_the_speed_event_with_its_detail() -> None:
    lines = [
        b"2026-01-01T00:00:00.000Z cpu1:100)vmnic1 : 0000:04:00.1 Link Down",
        b"2026-01-01T00:00:07.000Z cpu1:100)vmnic1 : 0000:04:00.1 Link Up",
        b"2026-01-01T00:00:07.001Z cpu1:100)ixgben: ixgben_CheckLink:1879: vmnic1: "
        b"NIC Link is Up 1000 Mbps Full Duplex",
    ]
    lf = parse_log(lines, "vmkernel")
    assert [e.kind for e in lf.events] == ["link_down", "link_up", "link_speed"]
    assert last_speeds(lf.events) == {"vmnic1": (1000.0, True)}

# ruff: noqa: E501 - tables are quoted verbatim
"""`esxcli network nic list` (nicinfo): a link-down port is down, not a 0 Mb/s half-duplex link (issue 17 item 5)."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from pipeline.parse import esxcli

REAL_LOGS = Path(__file__).resolve().parents[3] / ".." / "shared" / "samples" / "real" / "logs"
HEAD = (
    "Name    PCI Device    Driver  Admin Status  Link Status  Speed  Duplex  MAC Address         MTU  Description\n"
    "------  ------------  ------  ------------  -----------  -----  ------  -----------------  ----  -----------\n"
)


def _row(name: str, link: str, speed: str, duplex: str) -> str:
    return f"{name:<6}  0000:04:00.0  ixgben  Up            {link:<11}  {speed:>5}  {duplex:<6}  00:50:56:01:02:03  9000  Intel X550\n"


def _read(
    rows: list[tuple[str, str, str, str]], details: str = ""
) -> list[tuple[str, bool | None, float | None, bool | None]]:
    text = HEAD + "".join(_row(*r) for r in rows) + "\n" + details
    return [(r.name, r.link_up, r.speed_mbps, r.duplex_full) for r in esxcli.parse_nicinfo(text)]


def test_real_nic_list_with_down_ports() -> None:
    path = REAL_LOGS / "nicinfo_ports_down.txt"
    if not path.exists():
        pytest.skip(f"real sample {path} absent (../shared/samples/real/logs is not checked out here)")
    text = path.read_text()
    assert esxcli.sniff_nicinfo(text.encode()[:65536])
    rows = esxcli.parse_nicinfo(text)
    assert [(r.name, r.link_up, r.speed_mbps, r.duplex_full, r.mtu, r.driver) for r in rows] == [
        ("vmnic0", True, 10000, True, 1500, "ixgben"),
        ("vmnic1", False, None, None, 1500, "ixgben"),  # Down 0 Half: no negotiation, not a half-duplex link
        ("vmnic2", True, 1000, True, 1500, "igbn"),  # a 1 GbE port that is up stays 1 GbE
        ("vmnic3", False, None, None, 1500, "igbn"),
    ]
    # what each port was built for: "10-Gigabit" is 10 GbE; "Server Adapter I350-T2" names no rating
    assert [r.rated_mbps for r in rows] == [10000, 10000, None, None]


@pytest.mark.parametrize(
    ("description", "rated"),
    [
        ("Intel(R) Ethernet Controller X710 for 10GbE SFP+", 10000),
        ("Mellanox Technologies ConnectX-4 Lx EN NIC; 25GbE; dual-port SFP28", 25000),
        ("Mellanox Technologies ConnectX-6 Dx EN NIC; 100GbE; dual-port QSFP56", 100000),
        ("Intel Corporation I350 Gigabit Network Connection", 1000),
        ("Broadcom NetXtreme BCM5720 Gigabit Ethernet PCIe", 1000),
        ("Intel Corporation 82599EB 10-Gigabit SFI/SFP+ Network Connection", 10000),
        ("QLogic 57810 10 Gigabit Ethernet Adapter", 10000),
        ("Intel(R) Ethernet Controller X550 10GBASE-T", 10000),
        ("Broadcom BCM57414 NetXtreme-E 10Gb/25Gb RDMA Ethernet Controller", 25000),  # the fastest it names
        ("Chelsio T580 40GbE", 40000),
        ("HPE Ethernet 25G 2-port SFP28", 25000),
        ("Intel Corporation Ethernet Server Adapter I350-T2", None),  # model numbers are not rates
        ("Intel(R) Ethernet Controller E810-C for QSFP", None),
        ("Acme 7GbE", None),  # not an Ethernet rate
        ("", None),
        (None, None),
    ],
)
def test_rated_speed_from_the_description(description: str | None, rated: float | None) -> None:
    assert esxcli.rated_mbps(description) == rated


def test_a_1mb_description_stays_bounded() -> None:
    """A hostile cell: read to DESCRIPTION_CHARS only, in linear time, the row still parsed."""
    for junk in ("10GbE" * 200_000, "1" * 1_000_000 + " GbE", "Gigabit " * 125_000, "10 " * 333_333):
        t0 = time.process_time()
        text = HEAD + _row("vmnic0", "Up", "10000", "Full").replace("Intel X550", junk)
        (row,) = esxcli.parse_nicinfo(text)
        assert row.speed_mbps == 10000 and time.process_time() - t0 < 1.0


@pytest.mark.parametrize(
    ("speed", "duplex"), [("1000", "Full"), ("100", "Full"), ("1000", "Half"), ("100", "Half"), ("10", "Half")]
)
def test_degraded_links_that_are_up_keep_their_speed_and_duplex(speed: str, duplex: str) -> None:
    got = _read([("vmnic0", "Up", "10000", "Full"), ("vmnic1", "Up", speed, duplex)])
    assert got == [("vmnic0", True, 10000, True), ("vmnic1", True, float(speed), duplex == "Full")]


@pytest.mark.parametrize("duplex", ["Half", "Full", ""])
def test_down_port_has_no_speed_or_duplex(duplex: str) -> None:
    assert _read([("vmnic1", "Down", "0", duplex)]) == [("vmnic1", False, None, None)]


def test_link_detected_false_in_the_details_is_down() -> None:
    details = (
        "NIC:  vmnic0\n\nNICInfo:\n   Auto Negotiation: true\n   Link Detected: true\n   Name: vmnic0\n\n"
        "NIC:  vmnic1\n\nNICInfo:\n   Advertised Auto Negotiation: true\n   Driver: ixgben\n"
        "   Link Detected: false\n   Name: vmnic1\n\n"
        "NIC:  vmnic2\n\nNICInfo:\n   Link Detected: true\n   Link Status: Down\n\n"
    )
    rows = [("vmnic0", "Up", "10000", "Full"), ("vmnic1", "Up", "1000", "Half"), ("vmnic2", "Up", "100", "Full")]
    assert _read(rows, details) == [
        ("vmnic0", True, 10000, True),
        ("vmnic1", False, None, None),
        ("vmnic2", False, None, None),
    ]


def test_without_a_link_column_speed_zero_is_down_and_details_decide() -> None:
    text = (
        "Name    PCI Device    Driver  Speed  Duplex  MTU\n"
        "------  ------------  ------  -----  ------  ----\n"
        "vmnic0  0000:04:00.0  ixgben  10000  Full    9000\n"
        "vmnic1  0000:04:00.1  ixgben      0  Half    9000\n"
        "vmnic2  0000:04:00.2  ixgben   1000  Half    9000\n"
        "\nNIC:  vmnic2\n   Link Detected: true\n"
    )
    got = [(r.name, r.link_up, r.speed_mbps, r.duplex_full) for r in esxcli.parse_nicinfo(text)]
    assert got == [("vmnic0", None, 10000, True), ("vmnic1", False, None, None), ("vmnic2", True, 1000, False)]


def test_details_of_other_devices_are_ignored() -> None:
    details = "NIC:  vusb0\n   Link Detected: false\nNIC:\n   Link Detected: false\n   Link Detected: false\n"
    assert _read([("vmnic0", "Up", "10000", "Full")], details) == [("vmnic0", True, 10000, True)]


def test_a_later_section_does_not_inherit_the_last_nic() -> None:
    details = "NIC:  vmnic0\n\nNICInfo:\n   Link Detected: true\nPort statistics:\n   Link Status: Down\n"
    assert _read([("vmnic0", "Up", "10000", "Full")], details) == [("vmnic0", True, 10000, True)]


def test_the_simulators_descriptions_carry_their_rating() -> None:
    """data/simulate draws each NIC's description for its design speed (a renegotiated link keeps it)."""
    from data.simulate.ood import _NIC_100G, LINK_100G
    from data.simulate.topology import _NIC_HW

    for speed, (_drv, desc) in {**_NIC_HW, LINK_100G: _NIC_100G}.items():
        assert esxcli.rated_mbps(desc) == speed, desc

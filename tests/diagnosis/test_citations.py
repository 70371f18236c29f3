"""A finding cites the lines of its own component and of the event kinds that speak of its fault: at most
3 per kind (as kept when reading) and 12 in all, the most telling kinds kept first, in time order."""

from __future__ import annotations

from diagnosis.citations import FAULT_EVENTS, MAX_LINES, cited_lines
from pipeline.citations import Citation
from pipeline.tensors import BundleTensors
from vsandx.faults import FAULT_IDS

DISK = "disk:h1/naa.1"


def _bt(cites: dict[str, tuple[Citation, ...]]) -> BundleTensors:
    return BundleTensors("s", ("h1",), ("h1",), 0, 20, 1, 20, {}, citations=cites)


def _c(event: str, t: float, line: int = 1) -> Citation:
    return Citation("h/var/run/log/vmkernel.log", line, f"{t} {event}", event, t)


def test_every_fault_says_which_events_speak_of_it() -> None:
    assert set(FAULT_EVENTS) == set(FAULT_IDS)


def test_only_the_faults_kinds_and_the_components_lines() -> None:
    cites = (_c("scsi_fail_benign", 1), _c("deteriorated", 3), _c("scsi_fail_medium", 2), _c("link_down", 4))
    bt = _bt({DISK: cites, "disk:h1/naa.2": (_c("deteriorated", 0),)})
    got = cited_lines(bt, DISK, "disk.latency")
    assert [c["event"] for c in got] == ["scsi_fail_medium", "deteriorated"]  # time order; benign left out
    assert got[0] == {"file": "h/var/run/log/vmkernel.log", "line": 1, "text": "2 scsi_fail_medium",
                      "event": "scsi_fail_medium"}  # fmt: skip
    assert cited_lines(bt, DISK, "cluster.resync") == [] and cited_lines(bt, "disk:h9/x", "disk.latency") == []


def test_at_most_twelve_the_most_telling_kept() -> None:
    kinds = FAULT_EVENTS["disk.latency"]
    cites = tuple(_c(k, 100 - 10 * i - j) for i, k in enumerate(kinds) for j in range(3))  # 21, latest kinds first
    got = cited_lines(_bt({DISK: cites}), DISK, "disk.latency")
    assert len(got) == MAX_LINES
    assert {c["event"] for c in got} == set(kinds[: MAX_LINES // 3])  # the first kinds of the list
    times = [float(c["text"].split()[0]) for c in got]
    assert times == sorted(times)

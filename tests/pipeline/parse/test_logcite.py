"""The log lines kept to cite: numbered as the file's lines (blank and over-long skipped lines
included), the text as the file has it, and bounded per event key, per file and per bundle."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from pipeline.parse import logcite, logs
from pipeline.parse.textio import BoundedLines

REAL_LOGS = Path(__file__).resolve().parents[3] / ".." / "shared" / "samples" / "real" / "logs"
TS = "2026-03-02T10:00:{:02d}.000Z"
DOWN = " cpu1:2)vmnic{} : 0000:04:00.1 Link Down"


def _parse(text: str, max_line: int = 4096, budget: logs.EventBudget | None = None) -> logs.LogFile:
    lines = BoundedLines(io.BytesIO(text.encode()), max_line, 1 << 20)
    return logs.parse_log(lines, "vmkernel", budget, path="h/var/run/log/vmkernel.log")


def test_line_numbers_count_blank_and_skipped_lines() -> None:
    text = (
        "\n".join(
            [
                TS.format(0) + " cpu1:2)noise",
                "",  # 2: blank
                "x" * 200,  # 3: over-long, skipped unread by BoundedLines
                TS.format(4) + DOWN.format(3),  # 4
                "   ",  # 5
                TS.format(6) + DOWN.format(4) + "\r",  # 6
            ]
        )
        + "\n"
    )
    lf = _parse(text, max_line=120)
    assert lf.path == "h/var/run/log/vmkernel.log"
    got = {ev.vmnic: v for ev, v in lf.cited.items()}
    assert got == {"vmnic3": (4, TS.format(4) + DOWN.format(3)), "vmnic4": (6, TS.format(6) + DOWN.format(4))}


def test_cited_text_is_blanked_and_cut() -> None:
    assert logcite.cite_text(b"a\x1b[31mb\tc\r\n") == "a [31mb\tc"
    long = logcite.cite_text(b"y" * 5000)
    assert len(long) == logcite.CITE_CHARS and long.endswith("…")
    assert logcite.cite_text("é".encode() * 400)[:3] == "ééé"


def test_citations_are_bounded_per_key_file_and_bundle(monkeypatch: pytest.MonkeyPatch) -> None:
    same = "".join(f"{TS.format(i)}{DOWN.format(1)}\n" for i in range(10))
    lf = _parse(same)
    assert len(lf.events) == 10 and sorted(n for n, _ in lf.cited.values()) == [1, 2, 3]  # the first 3
    monkeypatch.setattr(logcite, "CITE_PER_FILE", 5)
    many = "".join(f"{TS.format(i)}{DOWN.format(i)}\n" for i in range(20))  # 20 vmnics: 20 keys
    assert len(_parse(many).cited) == 5
    budget = logs.EventBudget(cite_total=7)
    assert len(_parse(many, budget=budget).cited) == 5 and len(_parse(many, budget=budget).cited) == 2
    assert budget.cites == 7 and not _parse(many, budget=budget).cited


def test_real_vobd_uplink_flap_cites_its_lines() -> None:
    p = REAL_LOGS / "vobd_uplink_down_up.log"
    if not p.exists():
        pytest.skip(f"real sample {p} absent (../shared/samples/real/logs is not checked out here)")
    with open(p, "rb") as fh:
        lf = logs.parse_log(BoundedLines(fh, 4096, 1 << 20), "vobd", path="vobd.log")
    lines = p.read_text().split("\n")
    assert lf.cited and set(lf.cited) <= set(lf.events)
    for ev, (n, text) in lf.cited.items():
        assert lines[n - 1] == text
        if ev.kind in ("link_down", "link_up"):
            assert ev.vmnic == "vmnic6" and ("down" if ev.kind == "link_down" else "up") in text
    kinds = {ev.kind for ev in lf.cited}
    assert {"link_down", "link_up", "vob"} <= kinds


def test_real_nfs_lines_cite_nothing() -> None:
    """NFS datastore lines are no vSAN events (test_logs): nothing of them is kept to cite."""
    p = REAL_LOGS / "esxi8_vmkernel_vmkwarning_nfs.log"
    if not p.exists():
        pytest.skip(f"real sample {p} absent (../shared/samples/real/logs is not checked out here)")
    with open(p, "rb") as fh:
        lf = logs.parse_log(BoundedLines(fh, 4096, 1 << 20), "vmkernel", path="vmkernel.log")
    assert lf.events == [] and lf.cited == {}

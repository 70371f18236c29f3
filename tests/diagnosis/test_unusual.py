"""The "never seen this" check as text (diagnosis.unusual): nothing for a usual bundle or a model without the
check; for a flagged one, the heading with score and threshold, then a line per reason."""

from __future__ import annotations

from typing import Any

from diagnosis.unusual import MAX_REASONS, unusual_lines

FLAGGED: dict[str, Any] = {
    "flag": True,
    "score": 60.0,
    "threshold": 2.0,
    "reasons": [
        {"kind": "nic", "component": "nic:esx-01.lab.local/vmnic1", "components": 8, "channels": ["speed_gbps"],
         "score": 60.0, "why": "speed_gbps 100 above the training range 1-25"},
        {"kind": "cluster", "component": "cluster", "components": 1, "channels": ["n_hosts"], "score": 13.0,
         "why": "n_hosts 64 above the training range 3-16"},
    ],
}  # fmt: skip


def test_nothing_to_say_unless_flagged() -> None:
    assert unusual_lines({}) == []
    assert unusual_lines({"unusual": None}) == []  # a model without the check
    assert unusual_lines({"unusual": {**FLAGGED, "flag": False}}) == []
    assert unusual_lines({"unusual": "garbage"}) == []


def test_a_flagged_bundle_says_why() -> None:
    lines = unusual_lines({"unusual": FLAGGED})
    assert lines[0].startswith("Never seen this: ") and "score 60.0" in lines[0] and "above 2.0" in lines[0]
    assert lines[1:] == [
        "- nic nic:esx-01.lab.local/vmnic1 and 7 others: speed_gbps 100 above the training range 1-25",
        "- cluster cluster: n_hosts 64 above the training range 3-16",
    ]
    many = {**FLAGGED, "reasons": FLAGGED["reasons"] * 4}
    assert len(unusual_lines({"unusual": many})) == 1 + MAX_REASONS

"""The "never seen this" partial (templates/_unusual.html), rendered by the UI's own Jinja environment:
nothing for a usual bundle or a model without the check; a flagged bundle's score, threshold and one
row per reason, with names from the bundle escaped."""

from __future__ import annotations

import copy
from typing import Any

from service.api.ui import templates
from tests.diagnosis.test_unusual import FLAGGED


def _render(unusual: Any) -> str:
    return templates.env.get_template("_unusual.html").render(unusual=unusual)


def test_renders_nothing_unless_flagged() -> None:
    assert _render(None).strip() == ""
    assert _render({**FLAGGED, "flag": False}).strip() == ""


def test_a_flagged_bundle_shows_each_reason() -> None:
    html = _render(FLAGGED)
    assert 'id="unusual"' in html and "Never seen this" in html
    assert "60.0" in html and "2.0" in html
    assert html.count("<tr data-kind=") == 2
    assert 'data-kind="nic"' in html and "nic:esx-01.lab.local/vmnic1" in html and "and 7 more" in html
    assert "speed_gbps 100 above the training range 1-25" in html and "n_hosts" in html


def test_names_from_the_bundle_are_escaped() -> None:
    hostile = copy.deepcopy(FLAGGED)
    hostile["reasons"][0]["component"] = "nic:<script>alert(1)</script>/vmnic1"
    html = _render(hostile)
    assert "<script>" not in html and "&lt;script&gt;" in html

"""The diagnosis page's "What drove the verdict" block (templates/_drivers.html): the sources with
their shares, the span in UTC, escaped; nothing for a finding without drivers."""

from __future__ import annotations

from service.api.ui import templates
from tests.diagnosis.test_digest import DRIVERS


def test_the_page_shows_the_drivers_and_the_shaded_span() -> None:
    page = templates.env.get_template("_drivers.html").render(drivers=DRIVERS)
    assert "What drove the verdict" in page and "ev.scsi_fail_host" in page and "40 %" in page
    assert 'datetime="2026-03-12T03:40:00Z"' in page and "shaded on the charts" in page
    assert templates.env.get_template("_drivers.html").render(drivers=None).strip() == ""
    hostile = {**DRIVERS, "sources": [{"source": "<script>x</script>", "share": 1.0}]}
    assert "<script>x" not in templates.env.get_template("_drivers.html").render(drivers=hostile)

"""What the pages' functions put before the templates (service/api/pages.py)."""

from __future__ import annotations

import pytest

from service.api.pages import upload_limit_words


@pytest.mark.parametrize(
    ("n", "words"),
    [(512 << 20, "512 MB"), (3 << 19, "1.5 MB"), (900 * 1024, "900 KB"), (1 << 10, "1 KB"), (500, "500 bytes")],
)
def test_the_upload_form_states_its_limit_as_set(n: int, words: str) -> None:
    """A limit under a MiB used to read "up to 0 MB" (floored to whole MiB)."""
    assert upload_limit_words(n) == words

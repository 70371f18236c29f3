"""The "never seen this" check in words: the diagnosis document's `unusual` object (models.ood) as plain-text
lines for an email and a tracker comment (the web page renders the same object with
service/api/templates/_unusual.html).

    unusual_lines(doc)  # [] when the bundle is like the training data, or the model has no check

Component ids come from the bundle: a caller puts these lines where it puts the findings' ids (a
tracker comment keeps them inside its code block).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

MAX_REASONS = 5  # one per component kind at most


def unusual_lines(doc: Mapping[str, Any]) -> list[str]:
    """The heading line and one line per reason of a flagged bundle; [] otherwise (a document of a
    model without the check has `unusual` null or none at all)."""
    u = doc.get("unusual")
    if not isinstance(u, Mapping) or not u.get("flag"):
        return []
    lines = [
        f"Never seen this: the bundle lies outside what the model was trained on (score {float(u['score']):.1f}, "
        f"flagged above {float(u['threshold']):.1f}); its verdicts may not hold, check them by hand."
    ]
    for r in list(u.get("reasons") or [])[:MAX_REASONS]:
        n = int(r.get("components", 1))
        more = f" and {n - 1} other{'s' if n > 2 else ''}" if n > 1 else ""
        lines.append(f"- {r['kind']} {r['component']}{more}: {r['why']}")
    return lines

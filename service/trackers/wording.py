"""What vsandx says on a bug or an issue when it cannot diagnose: a bundle it did not take (in plain
words, for the engineers on the bug; the technical detail goes to the log) and the one request for a
bundle on a relevant bug or issue that has none."""

from __future__ import annotations

import logging
from typing import Literal

from service.trackers.base import TooLarge, TrackerError, TrackerHTTPError, size_words, too_big

log = logging.getLogger(__name__)
Tracker = Literal["bugzilla", "github"]
# where the bundle goes, in each tracker's words
_ATTACH = {
    "github": "Attach the bundle to the issue's description (edit the issue and drop the file in) or fix the link.",
    "bugzilla": "Attach the bundle to the bug again.",
}
_SMALLER = "Attach a smaller bundle instead: one host's vm-support archive, for example."
# how an engineer collects one, in a sentence (vSphere 7 and 8)
HOW_TO_COLLECT = (
    "Collect it on each ESXi host with `vm-support` (it prints where it wrote the .tgz), or in the vSphere "
    "Client: select the host, then Actions > Export System Logs."
)


def thing(tracker: Tracker, name: str, url: str = "") -> str:
    """How a refusal names the file: the link (with its address) or the attachment."""
    if tracker == "github":
        return f"The bundle link {name or url} ({url})" if url and url != name else f"The bundle link {name}"
    return f"The attachment {name}"


def refused_download(tracker: Tracker, name: str, e: TrackerError, url: str = "") -> str:
    """A download refused or failed, in words: what, why, and what to do. The technical message is logged."""
    log.warning("%s not diagnosed: %s", name or url, e)
    what = thing(tracker, name, url)
    reason = e.plain or ("the tracker's answer could not be read" if isinstance(e, TrackerHTTPError) else str(e))
    if isinstance(e, TooLarge) and e.over_limit:
        return f"{what} was not downloaded: {reason}. {_SMALLER}"
    return f"{what} could not be downloaded: {reason}. {_ATTACH[tracker]}"


def unreadable(tracker: Tracker, name: str, reason: str, url: str = "") -> str:
    """A download that is not a bundle the pipeline can read (`reason`: the pipeline's own words)."""
    log.warning("%s not diagnosed: cannot be read as a bundle: %s", name or url, reason)
    reason = reason.removeprefix(f"{name}: ") if name else reason
    return (f"{thing(tracker, name, url)} could not be read as a vSAN support bundle: {reason}. "
            f"Attach the support bundle itself (.tgz or .zip). {HOW_TO_COLLECT}")  # fmt: skip


def over_size(tracker: Tracker, name: str, size: int | None, limit: int) -> str:
    """An attachment refused from its metadata alone (Bugzilla's recorded size)."""
    log.warning("%s not downloaded: size %s, limit %d", name, size, limit)
    tail = _SMALLER if size is not None else _ATTACH[tracker]
    return f"{thing(tracker, name)} was not downloaded: {too_big(size, limit)}. {tail}"


def too_many(tracker: Tracker, name: str, most: int, url: str = "") -> str:
    where = "issue" if tracker == "github" else "bug"
    return f"{thing(tracker, name, url)} was not diagnosed: vsandx takes at most {most} bundles from one {where}."


def ask_for_bundle(tracker: Tracker, limit: int) -> str:
    """The one comment on a relevant bug or issue without a bundle: what to attach, how to collect it."""
    if tracker == "github":
        where = ("Attach it to the issue's description (edit the issue and drop the file in, or link to it): "
                 "vsandx reads the description again when the issue is edited and answers here.")  # fmt: skip
    else:
        where = "Attach it to this bug: vsandx diagnoses a new attachment and answers here."
    return (
        "vsandx diagnoses vSAN performance problems from a support bundle, and this "
        f"{'issue' if tracker == 'github' else 'bug'} has none yet.\n\n"
        f"Please attach a vSAN support bundle (a vm-support archive, .tgz or .zip, up to {size_words(limit)}) from "
        f"the hosts that show the problem, taken while or soon after it happens. {HOW_TO_COLLECT}\n\n{where}\n"
    )

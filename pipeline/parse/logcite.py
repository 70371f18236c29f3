"""The log lines a finding cites: for each event a log file yields, the line it came from (its 1-based
number in the file and its text), kept for the first few events of each kind and component only.

Bounded: the first CITE_PER_KEY lines of each event kind and component named (device, vmnic, UUID, VOB
id) in one file, at most CITE_PER_FILE per file and CITE_TOTAL per bundle (EventBudget.cite_total),
each cut to CITE_CHARS characters. A reader needs a few lines per kind; a file of a million distinct
devices costs at most these.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Final

if TYPE_CHECKING:
    from pipeline.parse.logs import EventBudget, LogEvent, LogFile

CITE_PER_KEY: Final = 3
CITE_PER_FILE: Final = 2048
CITE_TOTAL: Final = 20_000
CITE_CHARS: Final = 300
_CONTROL: Final = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")


def cite_text(raw: bytes) -> str:
    """A log line as a citation shows it: decoded, control characters blanked, cut to CITE_CHARS."""
    text = _CONTROL.sub(" ", raw[: CITE_CHARS * 4].decode("utf-8", "replace").rstrip("\r\n"))
    return text if len(text) <= CITE_CHARS else text[: CITE_CHARS - 1] + "…"


class Citer:
    """The lines one file keeps to cite (LogFile.cited), within the bounds above and the bundle's
    EventBudget.cite_total."""

    def __init__(self, out: LogFile, budget: EventBudget) -> None:
        self.out, self.budget = out, budget
        self.per_key: dict[tuple[str, str | None, str | None, str | None, str | None], int] = {}

    def keep(self, ev: LogEvent, line_no: int, raw: bytes) -> None:
        cited, budget = self.out.cited, self.budget
        if len(cited) >= CITE_PER_FILE or budget.cites >= budget.cite_total or ev in cited:
            return
        key = (ev.kind, ev.device, ev.vmnic, ev.uuid, ev.detail)
        n = self.per_key.get(key, 0)
        if n >= CITE_PER_KEY:
            return
        self.per_key[key] = n + 1
        budget.cites += 1
        cited[ev] = (line_no, cite_text(raw))

"""The attack corpus of issue 18: every crafted upload, by name. `tests/pipeline/test_attacks.py` runs
each through `vsandx parse`, `tests/service/api/test_attacks_upload.py` through the upload API and a
worker; both assert the outcome, the peak memory and the time.

Cases that test a content budget behind a highly compressible payload set `env` to lift the
compression-ratio limit: it is a separate defence, and an incompressible upload of the same content
(or a directory) would reach the parser without tripping it.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from tests.attacks import broke, held
from tests.attacks.build import Case

__all__ = ["CASES", "SLOW", "Case"]

CASES: dict[str, Callable[[Path], Case]] = {
    "cmmds_200k_disks": broke.cmmds_disks,
    "perf_json_240mb": broke.perf_json_flood,
    "perf_xml_250mb_line": broke.perf_xml_line,
    "perf_xml_250mb_entity": broke.perf_xml_giant_entity,
    "vmnic_log_1gib": broke.link_log,
    "zip_40k_records_one_entry": broke.zip_shared_entry,
    "esxtop_1m_columns": broke.esxtop_columns,
    "cmmds_250mb": broke.cmmds_250mb,
    "tar_with_450mb_zip": broke.tar_nested_zip,
    "link_regex_1mb_line": broke.link_regex_line,
    "symlink_and_device": broke.links_and_devices,
    **held.HELD,
}
SLOW = frozenset(
    {"vmnic_log_1gib", "cmmds_250mb", "tar_with_450mb_zip", "zip_40k_records_one_entry", "million_members"}
)

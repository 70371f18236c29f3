"""The diagnosis document's `coverage` (issue 20 item 6): hosts of the cluster with and without a
support bundle, esxtop and logs, from the host static features the pipeline sets."""

from __future__ import annotations

from diagnosis.coverage import coverage
from pipeline.channels import KIND_STATIC
from pipeline.tensors import SCHEMA_VERSION, BundleTensors, KindTensors


def _bundle(flags: dict[str, tuple[bool | None, bool | None, bool | None]]) -> BundleTensors:
    """Hosts named by `flags`: (has_bundle, has_esxtop, has_logs), None for unknown (masked)."""
    ids = tuple(sorted(f"host:{h}" for h in flags))
    kt = KindTensors.empty("host", ids, 4)
    for i, cid in enumerate(ids):
        for name, value in zip(("has_bundle", "has_esxtop", "has_logs"), flags[cid[5:]], strict=True):
            if value is not None:
                j = KIND_STATIC["host"].index(name)
                kt.static[i, j], kt.static_mask[i, j] = float(value), True
    return BundleTensors(SCHEMA_VERSION, tuple(sorted(flags)), (), 0, 60, 4, 20, {"host": kt})


def test_hosts_without_a_bundle_or_esxtop_are_named() -> None:
    bt = _bundle({"esx01": (True, True, True), "esx02": (True, False, True), "esx03": (False, False, False),
                  "esx04": (True, None, True)})  # fmt: skip
    assert coverage(bt) == {
        "hosts": 4,
        "with_bundle": 3,
        "without_bundle": ["esx03"],
        "with_esxtop": 1,
        "without_esxtop": ["esx02", "esx03", "esx04"],  # unknown counts as without
        "with_logs": 3,
        "without_logs": ["esx03"],
    }


def test_a_cluster_without_hosts() -> None:
    cov = coverage(_bundle({}))
    assert cov["hosts"] == 0 and cov["with_bundle"] == 0 and cov["without_esxtop"] == []

"""The log lines kept beside the tensors for findings to cite: each is that line of that file inside the
upload (rotated `.gz` logs numbered once decompressed), belongs to the component it is filed under, and
comes a few per component and event kind; the dataset cache never stores them."""

from __future__ import annotations

import gzip
from collections import Counter

from data.simulate.archive import tar_bytes
from data.simulate.generate import Bundle
from pipeline.api import load_bundle
from pipeline.citations import PER_KIND
from tests.pipeline.simbundles import pick, upload
from training import tensorstore


def _rotated_cites(b: Bundle) -> bool:
    return any(p.endswith(".gz") and "/var/run/log/vmkernel" in p for p in b.files) and b.plan.faults[0].onset > 0


def test_every_citation_is_its_files_line() -> None:
    b = pick("lab", 3, _rotated_cites, faults=("disk.latency",), causes=("disk.latency:medium_error",))
    files = upload(b.files)
    bt = load_bundle(tar_bytes(files))
    assert bt.citations
    from_gz = 0
    for cid, cites in bt.citations.items():
        assert cid in bt.component_ids
        assert all(n <= PER_KIND for n in Counter(c.event for c in cites).values())
        assert [c.t for c in cites] == sorted(c.t for c in cites)
        for c in cites:
            data = files[c.file]
            if c.file.endswith(".gz"):
                data, from_gz = gzip.decompress(data), from_gz + 1
            assert data.decode().split("\n")[c.line - 1] == c.text
            kind, _, name = cid.partition(":")
            if c.event.startswith(("scsi_", "link_")) or c.event in ("deteriorated", "improved"):
                assert name.rsplit("/", 1)[1] in c.text  # the device's or vmnic's own line (others name a UUID)
            assert c.file.startswith(f"esx-{name.split('/')[0]}-") if kind != "cluster" else True
    assert from_gz, "the bundle was picked for a rotated vmkernel log: some line must be cited from it"


def test_the_dataset_cache_leaves_citations_out() -> None:
    b = pick("lab", 3, lambda b: b.plan.faults[0].onset > 0, faults=("disk.latency",))
    bt = load_bundle(tar_bytes(upload(b.files)))
    assert bt.citations
    back, _ = tensorstore.loads(tensorstore.dumps(bt, {}))
    assert back.citations == {} and back.schema_version == bt.schema_version
    for k, kt in bt.kinds.items():
        assert (back.kinds[k].values == kt.values).all() and (back.kinds[k].mask == kt.mask).all()

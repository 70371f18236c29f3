"""Property-based fuzzing: random and mutated inputs never raise anything but the pipeline's own errors.

CI runs these briefly (max_examples below); `fuzz_atheris.py` beside this file is the long-running
coverage-guided harness for the same targets.
"""

from __future__ import annotations

import contextlib
import io
import tarfile
from functools import lru_cache

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from data.simulate.generate import simulate_bundle
from pipeline import BundleError, PipelineConfig, load_bundle
from pipeline.parse.bundle import parse_members
from pipeline.read import ReadReport, iter_members

FUZZ = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
# Small limits so that a mutation which inflates a size field fails fast instead of reading far.
CFG = PipelineConfig(max_members=2000, max_member_bytes=8 << 20, max_total_bytes=32 << 20, ratio_min_bytes=1 << 20)


@lru_cache(maxsize=1)
def _files() -> dict[str, bytes]:
    """A 4-host lab bundle from the simulator (labels.json left out: the pipeline never reads it)."""
    files = simulate_bundle("lab", seed=11, index=0).files
    return {k: v for k, v in files.items() if k != "labels.json"}


def _tar(files: dict[str, bytes], mode: str = "w:") -> bytes:
    b = io.BytesIO()
    with tarfile.open(fileobj=b, mode=mode) as tf:  # type: ignore[call-overload]
        for name, data in sorted(files.items()):
            ti = tarfile.TarInfo(name)
            ti.size = len(data)
            tf.addfile(ti, io.BytesIO(data))
    return b.getvalue()


@lru_cache(maxsize=2)
def _archive(mode: str) -> bytes:
    return _tar(_files(), mode)


def _only_our_errors(data: bytes) -> None:
    with contextlib.suppress(BundleError):
        load_bundle(data, CFG)


def _mutate(data: bytes, edits: list[tuple[int, int, bytes]]) -> bytes:
    buf = bytearray(data)
    for pos, cut, ins in edits:
        p = pos % (len(buf) + 1)
        buf[p : p + cut] = ins
    return bytes(buf)


EDITS = st.lists(st.tuples(st.integers(0, 1 << 24), st.integers(0, 64), st.binary(max_size=16)), min_size=1, max_size=8)


@FUZZ
@given(st.binary(max_size=4096))
def test_random_bytes(data: bytes) -> None:
    _only_our_errors(data)


@FUZZ
@given(st.sampled_from([b"\x1f\x8b", b"PK\x03\x04", b"BZh9", b"\xfd7zXZ\x00", b""]), st.binary(max_size=2048))
def test_random_bytes_behind_archive_magic(magic: bytes, rest: bytes) -> None:
    _only_our_errors(magic + rest)


@FUZZ
@given(EDITS, st.sampled_from(["w:", "w:gz"]))
def test_mutated_archives(edits: list[tuple[int, int, bytes]], mode: str) -> None:
    _only_our_errors(_mutate(_archive(mode), edits))


@FUZZ
@given(st.data())
def test_mutated_member_contents(data: st.DataObject) -> None:
    """Edits inside one source file (perf dump, CMMDS, logs, esxtop...): the rest of the bundle counts."""
    files = dict(_files())
    name = data.draw(st.sampled_from(sorted(files)))
    edits = data.draw(EDITS)
    files[name] = _mutate(files[name], edits)
    try:
        bt = load_bundle(_tar(files), CFG)
    except BundleError:
        return
    assert bt.kinds["cluster"].values.shape[0] == 1


@FUZZ
@given(st.sampled_from(sorted(_files())), st.text(max_size=3000))
def test_random_text_as_any_source(name: str, text: str) -> None:
    files = dict(_files())
    files[name] = text.encode("utf-8", "surrogatepass")
    try:
        pb = parse_members(iter_members(_tar(files), CFG, ReadReport()), "<f>", ReadReport())
    except BundleError:
        return
    assert pb.files

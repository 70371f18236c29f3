"""The safe reader: formats, limits, hostile archives (all built in memory here, never committed)."""

from __future__ import annotations

import gzip
import io
import os
import stat
import tarfile
import tracemalloc
import zipfile
import zlib
from collections.abc import Callable
from pathlib import Path

import pytest

from pipeline.config import PipelineConfig
from pipeline.errors import BundleError, CorruptArchive, LimitExceeded, NotABundle, UnsafeMember
from pipeline.read import ReadReport, iter_members
from tests.conftest import pipeline_env

MiB = 1024 * 1024


def tar_bytes(members: list[tarfile.TarInfo | tuple[str, bytes]], mode: str = "w:gz") -> bytes:
    b = io.BytesIO()
    with tarfile.open(fileobj=b, mode=mode) as tf:
        for m in members:
            if isinstance(m, tarfile.TarInfo):
                tf.addfile(m)
            else:
                ti = tarfile.TarInfo(m[0])
                ti.size = len(m[1])
                tf.addfile(ti, io.BytesIO(m[1]))
    return b.getvalue()


def zip_bytes(members: dict[str, bytes], method: int = zipfile.ZIP_DEFLATED) -> bytes:
    b = io.BytesIO()
    with zipfile.ZipFile(b, "w", method) as zf:
        for n, d in members.items():
            zf.writestr(n, d)
    return b.getvalue()


def read_all(src: object, cfg: PipelineConfig | None = None, rep: ReadReport | None = None) -> dict[str, bytes]:
    return {m.path: m.read() for m in iter_members(src, cfg, rep)}  # type: ignore[arg-type]


def drain(src: object, cfg: PipelineConfig | None = None, rep: ReadReport | None = None) -> int:
    """Read every member in chunks without keeping them: what a streaming parser does."""
    n = 0
    for m in iter_members(src, cfg, rep):  # type: ignore[arg-type]
        f = m.open()
        while chunk := f.read(256 * 1024):
            n += len(chunk)
    return n


def bounded(
    fn: Callable[[ReadReport], object], max_mib: float = 64, max_produced: int = 80 * MiB, max_headers: int = 100
) -> BaseException | None:
    """Run fn with a fresh ReadReport, return what it raised; assert that peak Python memory and the work
    the reader did stay bounded. Work is counted, not timed (a slow or busy machine cannot fail it, a
    fast one cannot hide a regression): uncompressed bytes produced and headers read, as the reader's
    own budget counts them, also when a limit ended the read. Time and RSS on a real process are
    tests/pipeline/test_attacks.py's."""
    rep = ReadReport()
    tracemalloc.start()
    err: BaseException | None = None
    try:
        fn(rep)
    except BaseException as e:
        err = e
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert peak < max_mib * MiB, f"peak {peak / MiB:.1f} MiB"
    assert rep.produced_bytes <= max_produced, f"produced {rep.produced_bytes / MiB:.1f} MiB"
    assert rep.headers <= max_headers, f"read {rep.headers} headers"
    return err


# ------------------------------------------------------------------ formats
@pytest.mark.parametrize("mode", ["w:gz", "w:", "w:bz2", "w:xz"])
def test_tar_variants(mode: str) -> None:
    data = tar_bytes([("a/b.txt", b"hello"), ("c.txt", b"x" * 1000)], mode)
    assert read_all(data) == {"a/b.txt": b"hello", "c.txt": b"x" * 1000}


def test_zip_with_nested_tgz_and_gz_member() -> None:
    inner = tar_bytes([("esx-h-2026-03-02--10.00-1/commands/x.txt", b"inner")])
    data = zip_bytes({"esx-h.tgz": inner, "logs/vmkernel.1.gz": gzip.compress(b"line\n"), "top.txt": b"t"})
    got = read_all(data)
    assert got == {
        "esx-h-2026-03-02--10.00-1/commands/x.txt": b"inner",
        "logs/vmkernel.1.gz": b"line\n",
        "top.txt": b"t",
    }


def test_directory_and_path_and_fileobj(tmp_path: Path) -> None:
    (tmp_path / "d" / "sub").mkdir(parents=True)
    (tmp_path / "d" / "sub" / "f.txt").write_bytes(b"abc")
    assert read_all(tmp_path / "d") == {"sub/f.txt": b"abc"}
    p = tmp_path / "x.tgz"
    p.write_bytes(tar_bytes([("f", b"1")]))
    assert read_all(p) == {"f": b"1"}
    with open(p, "rb") as fh:
        assert read_all(fh) == {"f": b"1"}


def test_not_a_bundle(tmp_path: Path) -> None:
    with pytest.raises(NotABundle):
        read_all(b"just some text, not an archive" * 30)
    with pytest.raises(NotABundle):
        read_all(tmp_path / "missing.tgz")
    with pytest.raises(NotABundle):
        read_all(gzip.compress(b"plain text inside gzip" * 50))


def test_truncated_archive_is_corrupt() -> None:
    data = tar_bytes([("f", os.urandom(200_000))])
    with pytest.raises(CorruptArchive):
        read_all(data[: len(data) // 2])


def test_members_are_streamed_and_head_is_available() -> None:
    data = tar_bytes([("big.bin", b"\x01" * (3 * MiB)), ("small", b"s")])
    seen = []
    for m in iter_members(data):
        seen.append((m.path, len(m.head)))  # not reading the rest: the reader skips it
    assert seen == [("big.bin", 64 * 1024), ("small", 1)]


# ------------------------------------------------------------------ limits, each naming limit + member
def test_limit_member_count() -> None:
    data = tar_bytes([(f"f{i}", b"") for i in range(30)])
    with pytest.raises(LimitExceeded) as ei:
        read_all(data, PipelineConfig(max_members=10))
    assert ei.value.limit == "max_members" and ei.value.member == "f10"
    assert "max_members" in str(ei.value) and "f10" in str(ei.value)


def test_limit_member_bytes_counted_on_bytes_read() -> None:
    data = tar_bytes([("ok", b"a" * 100), ("big", b"b" * 5000)])
    with pytest.raises(LimitExceeded) as ei:
        read_all(data, PipelineConfig(max_member_bytes=1000))
    assert (ei.value.limit, ei.value.member) == ("max_member_bytes", "big")


def test_limit_total_bytes() -> None:
    data = tar_bytes([(f"f{i}", os.urandom(4000)) for i in range(10)])
    with pytest.raises(LimitExceeded) as ei:
        read_all(data, PipelineConfig(max_total_bytes=20_000))
    assert ei.value.limit == "max_total_bytes" and ei.value.member.startswith("f")


def test_limit_ratio() -> None:
    data = tar_bytes([("zeros", bytes(8 * MiB))])
    with pytest.raises(LimitExceeded) as ei:
        read_all(data, PipelineConfig(max_ratio=50, ratio_min_bytes=MiB))
    assert (ei.value.limit, ei.value.member) == ("max_ratio", "zeros")


def test_zip_member_size_lies_in_header() -> None:
    """A zip whose headers understate a member's size: the limit sees the bytes produced."""
    payload = b"A" * 50_000
    raw = bytearray(zip_bytes({"m.txt": payload}, zipfile.ZIP_STORED))
    # patch the central directory's uncompressed size to 10 bytes; zipfile will refuse or stop early,
    # either way no more than the limit may come out
    cd = raw.rfind(b"PK\x01\x02")
    raw[cd + 24 : cd + 28] = (10).to_bytes(4, "little")
    try:
        got = read_all(bytes(raw), PipelineConfig(max_member_bytes=20_000))
    except BundleError:
        return
    assert all(len(v) <= 20_000 for v in got.values())


# ------------------------------------------------------------------ hostile names and types
@pytest.mark.parametrize(
    "name", ["../evil.txt", "a/../../evil", "/etc/passwd", "C:/win.ini", "..\\..\\x", "\\abs", "a/\x07b"]
)
def test_hostile_names_rejected_tar_and_zip(name: str) -> None:
    with pytest.raises(UnsafeMember):
        read_all(tar_bytes([(name, b"x")]))
    with pytest.raises(UnsafeMember):
        read_all(zip_bytes({name: b"x"}))


def test_symlinks_hardlinks_devices_skipped_and_reported() -> None:
    link = tarfile.TarInfo("esx/link")
    link.type, link.linkname = tarfile.SYMTYPE, "/etc/passwd"
    hard = tarfile.TarInfo("esx/hard")
    hard.type, hard.linkname = tarfile.LNKTYPE, "esx/real"
    dev = tarfile.TarInfo("esx/dev")
    dev.type = tarfile.CHRTYPE
    fifo = tarfile.TarInfo("esx/fifo")
    fifo.type = tarfile.FIFOTYPE
    rep = ReadReport()
    got = read_all(tar_bytes([("esx/real", b"r"), link, hard, dev, fifo]), rep=rep)
    assert got == {"esx/real": b"r"}
    assert rep.n_skipped == 4 and any("symlink" in s for s in rep.skipped)


def test_zip_symlink_skipped() -> None:
    b = io.BytesIO()
    with zipfile.ZipFile(b, "w") as zf:
        zi = zipfile.ZipInfo("link")
        zi.create_system = 3
        zi.external_attr = (stat.S_IFLNK | 0o777) << 16
        zf.writestr(zi, "/etc/passwd")
        zf.writestr("f", "x")
    rep = ReadReport()
    assert read_all(b.getvalue(), rep=rep) == {"f": b"x"}
    assert rep.skipped == ["link (symlink)"]


def test_directory_symlinks_not_followed(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret").write_bytes(b"s")
    d = tmp_path / "bundle"
    d.mkdir()
    (d / "f").write_bytes(b"f")
    (d / "lnk").symlink_to(outside / "secret")
    (d / "dirlnk").symlink_to(outside)
    rep = ReadReport()
    assert read_all(d, rep=rep) == {"f": b"f"}
    assert rep.n_skipped == 2


# ------------------------------------------------------------------ bombs, in bounded memory and time
def _gzip_bomb(size: int) -> bytes:
    """A .tgz whose one member inflates to `size` zero bytes: a multi-member gzip stream, built in ms."""
    ti = tarfile.TarInfo("esx/bomb.log")
    ti.size = size
    zeros = gzip.compress(bytes(MiB), compresslevel=9)
    tail = bytes(512 - size % 512 if size % 512 else 0) + bytes(1024)
    return gzip.compress(ti.tobuf()) + zeros * (size // MiB) + gzip.compress(tail)


def test_gzip_bomb_rejected_bounded() -> None:
    data = _gzip_bomb(1024 * MiB)  # ~1 MB of gzip -> 1 GiB
    err = bounded(lambda rep: drain(data, rep=rep), max_mib=48)  # refused once ratio_min_bytes (64 MiB) are out
    assert isinstance(err, LimitExceeded) and err.limit == "max_ratio"


def test_zip_bomb_rejected_bounded() -> None:
    # deflate of zeros: ~1000:1; 10 members of 100 MiB each, built from one compressed stream
    co = zlib.compressobj(9, zlib.DEFLATED, -15)
    comp = b"".join(co.compress(bytes(MiB)) for _ in range(100)) + co.flush()
    b = io.BytesIO()
    with zipfile.ZipFile(b, "w", zipfile.ZIP_STORED) as zf:
        for i in range(10):
            zi = zipfile.ZipInfo(f"part{i}.log")
            zf.writestr(zi, b"")
    # rebuild by hand: zipfile cannot write precompressed data, so write entries ourselves
    data = _raw_zip([(f"part{i}.log", comp, 100 * MiB, zlib.crc32(bytes(100 * MiB))) for i in range(3)])
    err = bounded(lambda rep: drain(data, rep=rep), max_mib=48)  # of 300 MiB
    assert isinstance(err, LimitExceeded) and err.limit in ("max_ratio", "max_total_bytes")


def _raw_zip(entries: list[tuple[str, bytes, int, int]]) -> bytes:
    import struct

    out = io.BytesIO()
    cd = []
    for name, comp, usize, crc in entries:
        off = out.tell()
        nb = name.encode()
        out.write(struct.pack("<IHHHHHIIIHH", 0x04034B50, 20, 0, 8, 0, 0, crc, len(comp), usize, len(nb), 0))
        out.write(nb)
        out.write(comp)
        cd.append(
            struct.pack(
                "<IHHHHHHIIIHHHHHII",
                0x02014B50,
                20,
                20,
                0,
                8,
                0,
                0,
                crc,
                len(comp),
                usize,
                len(nb),
                0,
                0,
                0,
                0,
                0,
                off,
            )
            + nb
        )
    start = out.tell()
    for c in cd:
        out.write(c)
    size = out.tell() - start
    out.write(struct.pack("<IHHHHIIH", 0x06054B50, 0, 0, len(cd), len(cd), size, start, 0))
    return out.getvalue()


def test_million_tiny_members_rejected_bounded() -> None:
    # 1,000,000 empty-file headers (512 MB of tar) streamed through gzip: ~1 MB upload
    ti = tarfile.TarInfo("esx/t")
    block = ti.tobuf()
    out = io.BytesIO()
    gz = gzip.GzipFile(fileobj=out, mode="wb", compresslevel=1)
    batch = block * 2000
    for _ in range(500):
        gz.write(batch)
    gz.close()
    data = out.getvalue()
    cfg = PipelineConfig(max_ratio=1e9)
    headers = cfg.max_members + 1  # of a million: 512 bytes each, and the chunk being read
    err = bounded(lambda rep: drain(data, cfg, rep), max_mib=64, max_produced=headers * 512 + MiB, max_headers=headers)
    assert isinstance(err, LimitExceeded) and err.limit == "max_members"


def test_zip_directory_announcing_a_million_members() -> None:
    import struct

    eocd = struct.pack("<IHHHHIIH", 0x06054B50, 0, 0, 0xFFFF, 0xFFFF, 0, 0, 0)
    z64 = struct.pack("<IQHHIIQQQQ", 0x06064B50, 44, 45, 45, 0, 0, 10**6, 10**6, 0, 0)
    loc = struct.pack("<IIQI", 0x07064B50, 0, 4, 1)
    data = b"PK\x03\x04" + z64 + loc + eocd
    with pytest.raises(LimitExceeded) as ei:
        read_all(data)
    assert ei.value.limit == "max_members"


def test_huge_pax_header_refused() -> None:
    ti = tarfile.TarInfo("x")
    ti.pax_headers = {"comment": "A" * (2 * MiB)}
    data = tar_bytes([ti], mode="w:gz")
    # tar_bytes used PAX only if format says so; build explicitly
    b = io.BytesIO()
    with tarfile.open(fileobj=b, mode="w:gz", format=tarfile.PAX_FORMAT) as tf:
        tf.addfile(ti)
    data = b.getvalue()
    with pytest.raises(LimitExceeded) as ei:
        read_all(data)
    assert ei.value.limit == "max_header_bytes"


def test_nesting_depth_limited() -> None:
    data = tar_bytes([("f", b"deep")])
    for i in range(5):
        data = tar_bytes([(f"n{i}.tgz", data)])
    got = read_all(data, PipelineConfig(max_depth=2))
    assert len(got) == 1 and next(iter(got)).endswith(".tgz")  # deeper levels are left unopened


def test_corrupt_nested_archive_is_a_warning() -> None:
    good = tar_bytes([("esx/x", b"1")])
    data = zip_bytes({"a.tgz": good[: len(good) // 2] + b"\0" * 10, "b.txt": b"b"})
    rep = ReadReport()
    got = read_all(data, rep=rep)
    assert got.get("b.txt") == b"b"
    assert rep.warnings


def test_large_esxtop_streams_in_bounded_memory() -> None:
    """A 16 MB, 2000-column capture inside a .tgz is read row by row, keeping only the used columns."""
    from pipeline.parse.bundle import parse_members

    used = [f'"\\\\h\\Physical Disk SCSI Device(naa.{i})\\Commands/sec"' for i in range(20)]
    unused = [f'"\\\\h\\Vcpu(1:system:{i}:idle)\\% Used"' for i in range(1980)]
    hdr = ",".join(['"(PDH-CSV 4.0) (UTC)(0)"', *used, *unused]) + "\n"
    row = ",".join(['"03/02/2026 10:00:00"'] + [f'"{i % 97}.5"' for i in range(2000)]) + "\n"
    body = (hdr + row * (16 * MiB // len(row))).encode()
    data = tar_bytes([("esx-h-2026-03-02--10.00-1/esxtop.csv", body)], mode="w:gz")
    del body
    got: list[object] = []
    size = len(hdr) + len(row) * (16 * MiB // len(row))

    def run(rep: ReadReport) -> None:
        got.append(parse_members(iter_members(data, None, rep), "<t>", rep))

    assert bounded(run, max_mib=16, max_produced=size + 64 * 1024) is None  # one pass over the capture
    pb = got[0]
    (cap,) = pb.folders["esx-h-2026-03-02--10.00-1"].esxtop  # type: ignore[attr-defined]
    assert len(cap.disk) == 20 and cap.columns == 2000 and len(cap.times) > 1000


def test_member_stream_opens_once() -> None:
    (m,) = list(iter_members(tar_bytes([("f", b"x")])))[:1]
    m.open()
    with pytest.raises(RuntimeError):
        m.open()


def test_limits_come_from_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    # the content budgets (max_components, max_line_bytes) come the same way as the archive limits
    with pipeline_env(monkeypatch, max_members=3, grid_steps=64, max_components=7, max_line_bytes=1000):
        cfg = PipelineConfig.from_settings()
    assert (cfg.max_members, cfg.grid_steps) == (3, 64)
    assert (cfg.max_components, cfg.max_line_bytes) == (7, 1000)
    with pytest.raises(LimitExceeded):
        read_all(tar_bytes([(f"f{i}", b"") for i in range(5)]), cfg)

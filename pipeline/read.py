"""Safe streaming reader: directories, .tar, .tgz/.tar.gz (also bz2/xz), .zip, nested archives.

Nothing is extracted to disk. Members are yielded one at a time as `Member` objects whose stream is
valid only until the next one is requested (tar is read in stream mode). Only regular files are
yielded; links, devices and the like are skipped and listed in `ReadReport.skipped`.
"""

from __future__ import annotations

import functools
import io
import os
import stat
import zipfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import BinaryIO, Final

from pipeline.config import PipelineConfig
from pipeline.errors import (
    BundleError,
    CorruptArchive,
    CorruptMember,
    LimitExceeded,
    NotABundle,
)
from pipeline.member import Member, ReadReport, safe_name
from pipeline.streams import (
    CHUNK,
    STREAM_ERRORS,
    Budget,
    Chain,
    CountingReader,
    compression_of,
    decompressor,
    looks_like_tar,
    read_head,
)
from pipeline.tarutil import next_entry, open_tar
from pipeline.ziputil import ConsumedFile, SliceFile, check_zip, zip_entry_count

HEAD_BYTES: Final = 64 * 1024
Source = str | os.PathLike[str] | bytes | BinaryIO


def _join(prefix: str, rel: str) -> str:
    return f"{prefix}/{rel}" if prefix and rel else prefix or rel


def _parent(path: str) -> str:
    return path.rsplit("/", 1)[0] if "/" in path else ""


class _Reader:
    def __init__(self, config: PipelineConfig, name: str, report: ReadReport) -> None:
        self.cfg = config
        self.budget = Budget(config, name)
        self.report = report

    # --------------------------------------------------------------- one member, maybe nested
    def member(
        self, path: str, raw: io.RawIOBase, depth: int, view: Callable[[], BinaryIO] | None = None
    ) -> Iterator[Member]:
        """`view`: the member's bytes in place, seekable (a stored entry of an outer zip)."""
        head = read_head(raw, HEAD_BYTES)
        comp = compression_of(head)
        if comp is not None and depth < self.cfg.max_depth:
            inner = decompressor(comp, Chain(head, raw))
            counted = CountingReader(inner.read, self.budget, path, total=True, member_limit=True, member_level=True)
            try:
                ihead = read_head(counted, HEAD_BYTES)
            except CorruptMember as e:
                self.report.warnings.append(str(e))
                return
            if looks_like_tar(ihead[:512]):
                yield from self._nested(path, lambda: self.tar(Chain(ihead, counted), _parent(path), depth + 1))
            else:
                self.report.members += 1
                yield Member(path, counted, ihead, decompressed=True)
            return
        if depth < self.cfg.max_depth and head.startswith(b"PK\x03\x04"):
            src = view() if view is not None else self._hold_zip(path, head, raw)
            yield from self._nested(path, lambda: self.zip(src, path, _parent(path), depth + 1))
            return
        if depth < self.cfg.max_depth and looks_like_tar(head[:512]):
            yield from self._nested(path, lambda: self.tar(Chain(head, raw), _parent(path), depth + 1))
            return
        self.report.members += 1
        yield Member(path, raw, head)

    def _hold_zip(self, path: str, head: bytes, raw: io.RawIOBase) -> BinaryIO:
        """A zip met inside a stream has its directory at the end: held in memory, within a budget."""
        limit = self.cfg.max_nested_zip_bytes
        buf = io.BytesIO()
        chunk = head
        while chunk:
            if buf.tell() + len(chunk) > limit:
                detail = f"a nested zip of more than {limit} bytes that cannot be read in place"
                raise LimitExceeded("max_nested_zip_bytes", path, detail)
            buf.write(chunk)
            chunk = raw.read(CHUNK) or b""
        buf.seek(0)
        return buf

    def _nested(self, path: str, make: object) -> Iterator[Member]:
        """A damaged nested archive is one malformed file: warn and go on with the rest."""
        try:
            yield from make()  # type: ignore[operator]
        except (CorruptArchive, CorruptMember) as e:
            self.report.warnings.append(f"{path}: nested archive unreadable ({e.reason})")

    # --------------------------------------------------------------- tar, streamed
    def tar(self, stream: io.RawIOBase, prefix: str, depth: int) -> Iterator[Member]:
        cfg = self.cfg
        where = prefix or self.budget.name
        tf = open_tar(stream, cfg, self.budget, where)
        with tf:
            while (ti := next_entry(tf, where)) is not None:
                path = _join(prefix, safe_name(ti.name, cfg, where))
                self.budget.add_member(path)
                if ti.isdir():
                    continue
                if not ti.isreg():
                    self.report.skip(
                        path, "symlink" if ti.issym() else "hard link" if ti.islnk() else "not a regular file"
                    )
                    continue
                if ti.sparse is not None:
                    self.report.skip(path, "sparse file")
                    continue
                fobj = tf.extractfile(ti)
                if fobj is None:
                    continue
                raw = CountingReader(fobj.read, self.budget, path, total=False, member_limit=True)
                yield from self.member(path, raw, depth)

    # --------------------------------------------------------------- zip, random access
    def zip(self, f: BinaryIO, where: str, prefix: str, depth: int) -> Iterator[Member]:
        cfg = self.cfg
        n = zip_entry_count(f)
        if n is None:
            raise CorruptArchive(where, "zip without an end-of-central-directory record")
        if self.budget.members + n > cfg.max_members:
            raise LimitExceeded("max_members", where, f"zip directory lists {n} members")
        try:
            zf = zipfile.ZipFile(f)
            infos = zf.infolist()
            data_at = check_zip(f, zf, where)
        except BundleError:
            raise
        except STREAM_ERRORS as e:
            raise CorruptArchive(where, f"not a readable zip ({type(e).__name__}: {e})") from None
        with zf:
            for zi in infos:
                path = _join(prefix, safe_name(zi.filename, cfg, where))
                self.budget.add_member(path)
                mode = zi.external_attr >> 16
                if zi.is_dir() or stat.S_ISDIR(mode):
                    continue
                if mode and stat.S_IFMT(mode) and not stat.S_ISREG(mode):
                    self.report.skip(path, "symlink" if stat.S_ISLNK(mode) else "not a regular file")
                    continue
                if zi.flag_bits & 0x1:
                    self.report.skip(path, "encrypted")
                    continue
                try:
                    fobj = zf.open(zi)
                except STREAM_ERRORS as e:
                    self.report.warnings.append(f"{path}: unreadable zip member ({e})")
                    continue
                raw = CountingReader(fobj.read, self.budget, path, total=True, member_limit=True, member_level=True)
                view = None
                if zi.compress_type == zipfile.ZIP_STORED:
                    view = functools.partial(SliceFile, f, data_at[zi.header_offset], zi.file_size)
                try:
                    yield from self.member(path, raw, depth, view)  # type: ignore[arg-type]
                except CorruptMember as e:
                    self.report.warnings.append(str(e))

    # --------------------------------------------------------------- plain directory
    def directory(self, top: str) -> Iterator[Member]:
        for root, dirs, files in os.walk(top, followlinks=False):
            dirs.sort()
            rel_root = os.path.relpath(root, top).replace(os.sep, "/")
            rel_root = "" if rel_root == "." else rel_root
            for d in list(dirs):
                if os.path.islink(os.path.join(root, d)):
                    self.report.skip(_join(rel_root, d), "symlink")
                    dirs.remove(d)
            for fn in sorted(files):
                path = _join(rel_root, fn)
                full = os.path.join(root, fn)
                self.budget.add_member(path)
                try:
                    st = os.lstat(full)
                    if not stat.S_ISREG(st.st_mode):
                        self.report.skip(path, "symlink" if stat.S_ISLNK(st.st_mode) else "not a regular file")
                        continue
                    fd = os.open(full, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
                except OSError as e:
                    self.report.warnings.append(f"{path}: cannot open ({e.strerror})")
                    continue
                with open(fd, "rb") as fh:
                    raw = CountingReader(
                        fh.read,
                        self.budget,
                        path,
                        total=True,
                        member_limit=True,
                        consumed=True,
                        member_level=True,
                    )
                    try:
                        yield from self.member(path, raw, 0)
                    except CorruptMember as e:
                        self.report.warnings.append(str(e))

    # --------------------------------------------------------------- a file or bytes
    def archive(self, f: BinaryIO, name: str) -> Iterator[Member]:
        src = CountingReader(f.read, self.budget, name, total=False, member_limit=False, consumed=True)
        head = read_head(src, 1024)
        if head.startswith((b"PK\x03\x04", b"PK\x05\x06")):
            if not f.seekable():
                raise NotABundle(name, "a zip upload must be seekable")
            f.seek(0)
            self.budget.consumed = 0
            yield from self.zip(ConsumedFile(f, self.budget), name, "", 0)  # type: ignore[arg-type]
            return
        comp = compression_of(head)
        if comp is not None:
            inner = decompressor(comp, Chain(head, src))
            counted = CountingReader(inner.read, self.budget, name, total=True, member_limit=False)
            first = read_head(counted, 512)
            if not looks_like_tar(first):
                raise NotABundle(name, f"{comp}-compressed, but not a tar archive inside")
            yield from self.tar(Chain(first, counted), "", 0)
            return
        if looks_like_tar(head[:512]):
            counted = CountingReader(Chain(head, src).read, self.budget, name, total=True, member_limit=False)
            yield from self.tar(counted, "", 0)
            return
        raise NotABundle(name, "not a directory, tar, tgz or zip archive")


def iter_members(
    source: Source, config: PipelineConfig | None = None, report: ReadReport | None = None, name: str | None = None
) -> Iterator[Member]:
    """Every regular file of the upload, nested archives expanded in place, within the limits. An
    archive file is streamed from disk, never read whole. `name`: what errors call the upload (by
    default its path, or the file object's name)."""
    cfg = config or PipelineConfig()
    rep = report if report is not None else ReadReport()
    if isinstance(source, bytes | bytearray):
        label = name or "<upload>"
    elif isinstance(source, str | os.PathLike):
        label = name or str(Path(source))
    else:
        label = name or str(getattr(source, "name", "<upload>"))
    rd = _Reader(cfg, label, rep)
    try:
        if isinstance(source, bytes | bytearray):
            yield from rd.archive(io.BytesIO(source), label)
        elif isinstance(source, str | os.PathLike):
            p = Path(source)
            if p.is_dir():
                yield from rd.directory(str(p))
            elif p.is_file():
                with open(p, "rb") as fh:
                    yield from rd.archive(fh, label)
            else:
                raise NotABundle(label, "no such file or directory")
        else:
            yield from rd.archive(source, label)
    finally:  # the work done, also when a limit ended it
        rep.produced_bytes, rep.headers = rd.budget.produced, rd.budget.members


__all__ = ["Member", "ReadReport", "iter_members", "safe_name"]

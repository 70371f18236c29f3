"""The crafted uploads the parser already withstood (issue 18's "Held" list), kept in the corpus so
that they keep holding: hostile member names, header and member-count bombs, ratio bombs, damaged
and random files, CMMDS literal bombs."""

from __future__ import annotations

import gzip
import io
import os
import tarfile
import zlib
from pathlib import Path

from tests.attacks.build import NO_RATIO, Big, Case, MiB, _base, _header, _pad, write_tgz


def _hostile(name: str, member: str, expect: str, where: str = ""):  # type: ignore[no-untyped-def]
    def make(d: Path) -> Case:
        files, _top = _base()
        extra = _header(member, 1) + b"x" + _pad(1)
        return Case(name, write_tgz(d / f"{name}.tgz", files, extra=extra), "reject", expect, where=where or member)

    return make


def pax_header_bomb(d: Path) -> Case:
    ti = tarfile.TarInfo("esx-a/x.log")
    ti.pax_headers = {"comment": "A" * (64 * MiB)}
    path = d / "pax-bomb.tgz"
    with tarfile.open(path, "w:gz", format=tarfile.PAX_FORMAT) as tf:
        tf.addfile(ti)
    return Case("pax_header_bomb", path, "reject", "max_header_bytes", where=path.name)


def gnu_longname_bomb(d: Path) -> Case:
    ti = tarfile.TarInfo("esx-a/" + "n" * (64 * MiB))
    path = d / "gnu-longname.tgz"
    with tarfile.open(path, "w:gz", format=tarfile.GNU_FORMAT) as tf:
        tf.addfile(ti)
    return Case("gnu_longname_bomb", path, "reject", "max_header_bytes", where=path.name)


def million_members(d: Path) -> Case:
    block = tarfile.TarInfo("esx-a/t").tobuf() * 2000  # 1,000,000 empty members: 512 MB of tar
    path = d / "million.tgz"
    with open(path, "wb") as out:
        packed = gzip.compress(block, 9)
        for _ in range(500):
            out.write(packed)
        out.write(gzip.compress(b"\0" * 1024))
    return Case("million_members", path, "reject", "max_members", NO_RATIO, where="esx-a/t")


def tar_ratio_bomb(d: Path) -> Case:
    files, top = _base()
    path = write_tgz(d / "ratio.tgz", files, {f"{top}/var/run/log/vmkernel.log": Big(b"", b"\0" * MiB, 1024)})
    return Case("tar_ratio_bomb", path, "reject", "max_ratio", where="vmkernel.log")


def _zip(entries: list[tuple[str, bytes]], method: int = zlib.DEFLATED) -> bytes:
    import zipfile

    b = io.BytesIO()
    with zipfile.ZipFile(b, "w", zipfile.ZIP_DEFLATED if method else zipfile.ZIP_STORED) as zf:
        for name, data in entries:
            zf.writestr(name, data)
    return b.getvalue()


def nested_zip_bomb(d: Path) -> Case:
    files, top = _base()
    files[f"{top}/var/run/log/vmkernel.log"] = b"2026-03-02T10:05:00.000Z cpu1:1)ScsiDeviceIO: 0\n" * (3 * MiB)
    inner = _zip(sorted(files.items()))
    path = d / "nested.zip"
    path.write_bytes(_zip([("inner.zip", inner)], 0))
    return Case("nested_zip_bomb", path, "warn", "max_log_bytes")


def tgz_in_zip_bomb(d: Path) -> Case:
    files, top = _base()
    tgz = write_tgz(d / "inner.tgz", files, {f"{top}/var/run/log/vmkernel.log": Big(b"", b"\0" * MiB, 512)})
    path = d / "tgz-in.zip"
    path.write_bytes(_zip([("bundle.tgz", tgz.read_bytes())], 0))
    tgz.unlink()
    return Case("tgz_in_zip_bomb", path, "reject", "max_ratio", where="vmkernel.log")


def truncated(d: Path) -> Case:
    files, _top = _base()
    whole = write_tgz(d / "whole.tgz", files).read_bytes()
    path = d / "truncated.tgz"
    path.write_bytes(whole[: len(whole) // 2])
    (d / "whole.tgz").unlink()
    return Case("truncated_tgz", path, "reject", "damaged", where=path.name)


def random_bytes(d: Path) -> Case:
    path = d / "random.tgz"
    path.write_bytes(os.urandom(256 * 1024))
    return Case("random_bytes", path, "reject", "not a directory, tar, tgz or zip archive", where=path.name)


def _cmmds(name: str, body: bytes, outcome: str, expect: str):  # type: ignore[no-untyped-def]
    def make(d: Path) -> Case:
        files, top = _base()
        files[f"{top}/commands/cmmds-tool_find--f-python.txt"] = body
        return Case(name, write_tgz(d / f"{name}.tgz", files), outcome, expect, where="cmmds-tool_find")

    return make


HELD = {
    "name_traversal": _hostile("name_traversal", "esx-a/../../evil.txt", "escapes the bundle"),
    "name_absolute": _hostile("name_absolute", "/etc/passwd", "absolute member path"),
    "name_drive_letter": _hostile("name_drive_letter", "C:/win.ini", "absolute member path"),
    "name_control_char": _hostile("name_control_char", "esx-a/\x1b[31mred", "control character", "esx-a/"),
    "pax_header_bomb": pax_header_bomb,
    "gnu_longname_bomb": gnu_longname_bomb,
    "million_members": million_members,
    "tar_ratio_bomb": tar_ratio_bomb,
    "nested_zip_bomb": nested_zip_bomb,
    "tgz_in_zip_bomb": tgz_in_zip_bomb,
    "truncated_tgz": truncated,
    "random_bytes": random_bytes,
    "cmmds_deep_nesting": _cmmds(
        "cmmds_deep_nesting",
        b"[{'uuid': 'a', 'type': 'NODE'}, " + b"[" * 5_000_000 + b"]" * 5_000_001,
        "warn",
        "no HOSTNAME or DISK entry",
    ),
    "cmmds_power_literal": _cmmds(
        "cmmds_power_literal", b"[{'uuid': 9**9**9, 'type': 'DISK'}]\n", "warn", "1 CMMDS entries unreadable"
    ),
}

"""Write a bundle's files as a .tgz, a plain directory, or a vCenter-style .zip of per-host .tgz
files, byte-for-byte reproducibly (fixed mtimes, owners and member order)."""

from __future__ import annotations

import gzip
import io
import tarfile
import zipfile
from pathlib import Path

MTIME = 1700000000  # fixed so that the same seed gives identical bytes


def _add_all(tar: tarfile.TarFile, files: dict[str, bytes]) -> None:
    dirs: set[str] = set()
    for path in sorted(files):
        parts = path.split("/")[:-1]
        for i in range(1, len(parts) + 1):
            d = "/".join(parts[:i])
            if d not in dirs:
                dirs.add(d)
                info = tarfile.TarInfo(d)
                info.type, info.mode, info.mtime = tarfile.DIRTYPE, 0o755, MTIME
                tar.addfile(info)
        data = files[path]
        info = tarfile.TarInfo(path)
        info.size, info.mode, info.mtime = len(data), 0o644, MTIME
        info.uname = info.gname = "root"
        tar.addfile(info, io.BytesIO(data))


def _tar_bytes(files: dict[str, bytes], level: int) -> bytes:
    raw = io.BytesIO()
    with (
        gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0, compresslevel=level) as gz,
        tarfile.open(fileobj=gz, mode="w", format=tarfile.GNU_FORMAT) as tar,
    ):
        _add_all(tar, files)
    return raw.getvalue()


def tar_bytes(files: dict[str, bytes]) -> bytes:
    """An uncompressed .tar of the bundle in memory: the cheapest upload to hand to the pipeline."""
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.GNU_FORMAT) as tar:
        _add_all(tar, files)
    return raw.getvalue()


def write_bundle(name: str, files: dict[str, bytes], out: Path, fmt: str, level: int = 1) -> Path:
    out.mkdir(parents=True, exist_ok=True)
    if fmt == "tgz":
        path = out / f"{name}.tgz"
        path.write_bytes(_tar_bytes(files, level))
    elif fmt == "dir":
        path = out / name
        for rel, data in files.items():
            target = path / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(data)
    elif fmt == "zip":
        path = out / f"{name}.zip"
        hosts: dict[str, dict[str, bytes]] = {}
        loose: dict[str, bytes] = {}
        for rel, data in files.items():
            top = rel.split("/", 1)[0]
            if top.startswith("esx-") and "/" in rel:
                hosts.setdefault(top, {})[rel] = data
            else:
                loose[rel] = data
        with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_STORED) as zf:
            for top in sorted(hosts):
                zf.writestr(
                    zipfile.ZipInfo(f"{top}.tgz", date_time=(2023, 11, 14, 22, 13, 20)), _tar_bytes(hosts[top], level)
                )
            for rel in sorted(loose):
                zi = zipfile.ZipInfo(rel, date_time=(2023, 11, 14, 22, 13, 20))
                zi.compress_type = zipfile.ZIP_DEFLATED
                zf.writestr(zi, loose[rel])
    else:
        raise ValueError(f"unknown format {fmt!r}")
    return path

"""Bundles by sha256: an upload spooled and hashed chunk by chunk, kept once by content, and its bytes
purged by retention (the `bundles` table and the files under VSANDX_DATA_DIR/bundles).

Every function takes the session first; none raises HTTP errors (service.api.diagnoses turns results
into those).
"""

from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
import time
from datetime import datetime, timedelta
from pathlib import Path
from typing import BinaryIO

from sqlalchemy import select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from service.store.db import raced
from service.store.tables import Bundle, Feedback, Job, utcnow
from vsandx.settings import ServiceSettings

CHUNK = 1 << 20


class UploadTooLarge(ValueError):
    def __init__(self, limit: int) -> None:
        super().__init__(f"upload larger than the limit of {limit} bytes")
        self.limit = limit


def _bundle_file(settings: ServiceSettings, sha256: str) -> Path:
    return settings.bundles_dir / sha256[:2] / sha256


def bundle_path(settings: ServiceSettings, sha256: str) -> Path | None:
    """Where an upload's bytes are kept, or None (unknown, or purged by retention)."""
    if len(sha256) != 64 or not all(c in "0123456789abcdef" for c in sha256):
        return None
    p = _bundle_file(settings, sha256)
    return p if p.is_file() else None


def spool_upload(settings: ServiceSettings, src: BinaryIO, max_bytes: int) -> tuple[Path, str, int]:
    """Copy an upload stream to a temporary file next to the store, hashing it; (path, sha256, size).
    Raises UploadTooLarge past `max_bytes` (the partial file is removed)."""
    tmp_dir = settings.bundles_dir / "tmp"
    tmp_dir.mkdir(parents=True, exist_ok=True)
    h, size = hashlib.sha256(), 0
    fd, name = tempfile.mkstemp(dir=tmp_dir)
    try:
        with os.fdopen(fd, "wb") as out:
            while chunk := src.read(CHUNK):
                size += len(chunk)
                if size > max_bytes:
                    raise UploadTooLarge(max_bytes)
                h.update(chunk)
                out.write(chunk)
    except BaseException:
        Path(name).unlink(missing_ok=True)
        raise
    return Path(name), h.hexdigest(), size


SPOOL_STALE_S = 3600  # a spool file untouched this long belongs to an upload whose API process died


def sweep_spool(settings: ServiceSettings, now: float | None = None) -> int:
    """Remove spool files of uploads that never finished (the API process was killed mid-upload): an
    upload in progress writes every chunk, so its file is never this old. Returns how many went."""
    tmp_dir, now = settings.bundles_dir / "tmp", now if now is not None else time.time()
    gone = 0
    for p in tmp_dir.glob("*") if tmp_dir.is_dir() else ():
        try:
            if p.is_file() and now - p.stat().st_mtime > SPOOL_STALE_S:
                p.unlink()
                gone += 1
        except FileNotFoundError:  # kept or removed by its own upload meanwhile
            continue
    return gone


def keep_bundle(db: Session, settings: ServiceSettings, spooled: Path, sha256: str, size: int, filename: str) -> Bundle:
    """Move a spooled upload to its place by content and record it (a known sha256 only refreshes
    its retention clock). Commits."""
    final = _bundle_file(settings, sha256)
    final.parent.mkdir(parents=True, exist_ok=True)
    if final.is_file():
        spooled.unlink(missing_ok=True)
    else:
        shutil.move(spooled, final)  # same filesystem: an atomic rename
    now = utcnow()
    row = db.get(Bundle, sha256)
    if row is None:
        row = Bundle(sha256=sha256, size=size, filename=filename[:255], first_seen=now, last_seen=now)
        db.add(row)
        try:
            db.commit()
        except IntegrityError:  # the same bytes uploaded concurrently
            db.rollback()
            row = raced(db.get(Bundle, sha256), f"bundle {sha256}")
    if row.last_seen != now:
        row.last_seen, row.purged_at = now, None
        db.commit()
    return row


def purge_expired(db: Session, settings: ServiceSettings, now: datetime | None = None) -> list[str]:
    """Delete the bytes of bundles not uploaded again within the retention period, with no unfinished
    job and no engineer feedback (they are training data); their rows, jobs and diagnoses stay.
    Returns the purged sha256s."""
    if settings.retention_days <= 0:
        return []
    cutoff = (now or utcnow()) - timedelta(days=settings.retention_days)
    busy = select(Job.sha256).where(Job.status.in_(("queued", "running")))
    labelled = select(Feedback.sha256)
    rows = db.scalars(
        select(Bundle).where(
            Bundle.last_seen < cutoff,
            Bundle.purged_at.is_(None),
            Bundle.sha256.not_in(busy),
            Bundle.sha256.not_in(labelled),
        )
    ).all()
    for row in rows:
        _bundle_file(settings, row.sha256).unlink(missing_ok=True)
        row.purged_at = now or utcnow()
    db.commit()
    return [r.sha256 for r in rows]

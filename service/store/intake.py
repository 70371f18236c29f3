"""Accepting an upload: stream it to the store by sha256 (size-limited), check that it opens as a
bundle, and queue a job. Nothing is extracted; a refused upload leaves nothing behind. Bundles a
bug tracker holds go through the same `store_upload` (service.queue.webhook_jobs)."""

from __future__ import annotations

from pathlib import Path, PurePosixPath, PureWindowsPath
from typing import BinaryIO

from sqlalchemy.orm import Session

from pipeline.config import PipelineConfig
from pipeline.errors import BundleError
from pipeline.read import iter_members
from service.store import bundle_store, job_store
from service.store.tables import Job
from vsandx.settings import ServiceSettings


class UnreadableBundle(ValueError):
    """The upload is not a bundle the pipeline can open; the message names the file and the reason."""


def clean_filename(name: str | None) -> str:
    base = PureWindowsPath(PurePosixPath(name or "").name).name.strip()
    return "".join(c for c in base if c.isprintable())[:200] or "upload"


def check_opens(path: Path, filename: str, config: PipelineConfig | None = None) -> None:
    """Read the archive's first member only (cheap): not an archive, corrupt, unsafe → UnreadableBundle."""
    try:
        with open(path, "rb") as fh:
            if next(iter(iter_members(fh, config or PipelineConfig.from_settings())), None) is None:
                raise UnreadableBundle(f"{filename}: the archive holds no files")
    except BundleError as e:
        raise UnreadableBundle(e.for_upload(filename, path)) from e


def accept_upload(db: Session, settings: ServiceSettings, src: BinaryIO, filename: str | None,
                  config: PipelineConfig | None = None) -> Job:  # fmt: skip
    """Store the upload by content and queue its diagnosis; raises UploadTooLarge or UnreadableBundle.
    `config`: the service's pipeline configuration (else resolved from the settings now)."""
    sha256, name = store_upload(db, settings, src, filename, config)
    return job_store.create_job(db, sha256, name)


def store_upload(db: Session, settings: ServiceSettings, src: BinaryIO, filename: str | None,
                 config: PipelineConfig | None = None) -> tuple[str, str]:  # fmt: skip
    """Store a bundle by content once it is known to open; (sha256, cleaned file name). Raises
    UploadTooLarge or UnreadableBundle, leaving nothing behind. Uploads and tracker attachments."""
    name = clean_filename(filename)
    spooled, sha256, size = bundle_store.spool_upload(settings, src, settings.max_upload_bytes)
    try:
        if size == 0:
            raise UnreadableBundle(f"{name}: the upload is empty")
        check_opens(spooled, name, config)
    except BaseException:
        spooled.unlink(missing_ok=True)
        raise
    bundle_store.keep_bundle(db, settings, spooled, sha256, size, name)
    return sha256, name

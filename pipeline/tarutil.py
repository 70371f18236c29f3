"""Tar helpers: a tar stream opened in tarfile's stream mode within the limits, and its entries read one
at a time, every tarfile error a CorruptArchive.

Apart from read.py, as ziputil.py is for zip: what tarfile itself needs guarding against (it reads pax
and GNU long-name headers whole, and in stream mode keeps every TarInfo it has read).
"""

from __future__ import annotations

import io
import tarfile

from pipeline.config import PipelineConfig
from pipeline.errors import BundleError, CorruptArchive, LimitExceeded
from pipeline.streams import STREAM_ERRORS, Budget


def open_tar(stream: io.RawIOBase, cfg: PipelineConfig, budget: Budget, where: str) -> tarfile.TarFile:
    """`stream` as a tar read in stream mode; each extended header counts as a member of `budget`."""

    class _TarInfo(tarfile.TarInfo):
        # tarfile reads pax and GNU long-name headers whole: refuse huge ones before it does.
        def _proc_member(self, tf: tarfile.TarFile) -> tarfile.TarInfo:
            if self.type in (
                tarfile.XHDTYPE,
                tarfile.XGLTYPE,
                tarfile.SOLARIS_XHDTYPE,
                tarfile.GNUTYPE_LONGNAME,
                tarfile.GNUTYPE_LONGLINK,
            ):
                budget.add_member(f"{where}:<header>")
                if self.size > cfg.max_header_bytes:
                    raise LimitExceeded(
                        "max_header_bytes",
                        f"{where}:{self.name[:200]}",
                        f"extended header of {self.size} bytes",
                    )
            return super()._proc_member(tf)  # type: ignore[misc]

    try:
        return tarfile.open(fileobj=stream, mode="r|", tarinfo=_TarInfo, bufsize=256 * 1024)
    except BundleError:
        raise
    except STREAM_ERRORS as e:
        raise CorruptArchive(where, f"not a readable tar stream ({e})") from None


def next_entry(tf: tarfile.TarFile, where: str) -> tarfile.TarInfo | None:
    """The stream's next entry, None at its end. The entries before it are not kept."""
    try:
        ti = tf.next()
    except BundleError:
        raise
    except STREAM_ERRORS as e:
        raise CorruptArchive(where, f"damaged tar stream ({type(e).__name__}: {e})") from None
    if ti is not None:
        tf.members.clear()  # type: ignore[attr-defined]  # stream mode keeps every TarInfo otherwise: O(members) memory
    return ti

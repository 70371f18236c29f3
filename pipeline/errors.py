"""The pipeline's own errors: everything it raises on bad input is a BundleError.

Each names the file or archive member it concerns (`path`) and why (`reason`), so the CLI can print
one line and the service can show it to the user unchanged.
"""

from __future__ import annotations


class BundleError(Exception):
    """A bundle (or a member of it) cannot be read as a diagnosis bundle."""

    def __init__(self, path: str, reason: str) -> None:
        super().__init__(f"{path}: {reason}")
        self.path = path
        self.reason = reason

    def for_upload(self, name: str, stored: object = None) -> str:
        """The message for the user who uploaded `name`: the member inside it, where the error is about
        one, and the reason; never the server's path of the stored file (`stored`)."""
        where = self.path
        if stored is not None and where.startswith(f"{stored}:"):
            where = where[len(str(stored)) + 1 :]  # "<archive>:<member>": the member
        if not where or where == str(stored) or where.startswith("/") or where == name:
            return f"{name}: {self.reason}"
        return f"{name}: {where}: {self.reason}"


class NotABundle(BundleError):
    """The upload is neither a directory nor a tar/tgz/zip archive."""


class CorruptArchive(BundleError):
    """The container itself is damaged (truncated gzip, bad tar header, broken zip directory)."""


class UnsafeMember(BundleError):
    """A member name tries to leave the bundle (absolute path, `..`, NUL, drive letter)."""


class LimitExceeded(BundleError):
    """A configured reading limit was breached; `limit` is the setting's name, `member` the culprit."""

    def __init__(self, limit: str, member: str, detail: str) -> None:
        super().__init__(member, f"limit {limit} exceeded ({detail})")
        self.limit = limit
        self.member = member


class SeveralClusters(BundleError):
    """The upload holds the bundles of more than one vSAN cluster (by the perf dump's cluster UUIDs)."""


class NoPerfData(BundleError):
    """The upload holds no vSAN performance service data at all."""

    def __init__(self, path: str) -> None:
        super().__init__(path, f"no vSAN performance data found in {path}")


class CorruptMember(BundleError):
    """One compressed member (a rotated `.gz` log) is damaged; callers report it as a warning."""

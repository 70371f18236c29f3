"""What a user who uploaded a bundle is told: the member inside it and the reason, never the path
the service stored the upload under."""

from __future__ import annotations

from pipeline.errors import BundleError, LimitExceeded, NotABundle


def test_for_upload_names_the_member_not_the_stored_path() -> None:
    stored = "/srv/vsandx/bundles/ab/ab12"
    e = LimitExceeded("max_components", "esx-a/commands/cmmds-tool_find--f-python.txt", "more than 4096 disks")
    assert e.for_upload("case.tgz", stored) == (
        "case.tgz: esx-a/commands/cmmds-tool_find--f-python.txt: limit max_components exceeded (more than 4096 disks)"
    )
    assert NotABundle(stored, "not a directory, tar, tgz or zip archive").for_upload("x.tgz", stored) == (
        "x.tgz: not a directory, tar, tgz or zip archive"
    )
    assert BundleError("/tmp/spool123", "damaged").for_upload("y.zip") == "y.zip: damaged"  # never a server path
    assert BundleError("y.zip", "damaged").for_upload("y.zip") == "y.zip: damaged"
    bad = BundleError(f"{stored}:esx-a/../../evil.txt", "member path escapes the bundle ('..')")
    assert bad.for_upload("z.tgz", stored) == "z.tgz: esx-a/../../evil.txt: member path escapes the bundle ('..')"

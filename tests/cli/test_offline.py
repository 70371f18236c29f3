"""`vsandx diagnose` without --json prints what a tracker comment says: the verdict, each finding with
its evidence, onset and cited log lines, then the bundle and the timings."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cli.main import main


def test_diagnose_prints_the_report(model_dir: Path, bundles: list[Path], capsys: pytest.CaptureFixture[str]) -> None:
    bundle = bundles[0]
    assert main(["diagnose", str(bundle), "--json", "--model", str(model_dir)]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert main(["diagnose", str(bundle), "--model", str(model_dir)]) == 0
    out = capsys.readouterr().out
    assert out.startswith("vsandx diagnosis: ")
    f = doc["findings"][0]  # the fixture's bundles each hold a finding of the small model
    assert f"[{f['fault']}]" in out and f"Component: {f['component']}" in out
    for line in f["evidence"]:
        assert line in out
    # onsets and cited lines, over every finding: at least one of them must be there to be checked
    shown = [g["onset"]["words"] for g in doc["findings"] if g.get("onset")]
    shown += [f"line {c['line']}" for g in doc["findings"] for c in g.get("cited_lines", [])[:3]]
    assert shown, "the fixture's findings carry neither an onset nor a cited line: nothing checked"
    for text in shown:
        assert text in out
    assert f"sha256 {doc['bundle']['sha256'][:12]}" in out and "timing    read" in out

"""Coverage-guided fuzzing of the readers and parsers (atheris); not collected by pytest.

    .venv/bin/pip install atheris
    .venv/bin/python tests/pipeline/fuzz_atheris.py -max_total_time=600 [corpus_dir]

Any exception other than pipeline.errors.BundleError is a finding.
"""

from __future__ import annotations

import contextlib
import sys
from pathlib import Path

import atheris

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

with atheris.instrument_imports():
    from pipeline import BundleError, PipelineConfig, load_bundle

CFG = PipelineConfig(max_members=2000, max_member_bytes=8 << 20, max_total_bytes=32 << 20, ratio_min_bytes=1 << 20)


def one_input(data: bytes) -> None:
    with contextlib.suppress(BundleError):
        load_bundle(data, CFG)


if __name__ == "__main__":
    atheris.Setup(sys.argv, one_input)
    atheris.Fuzz()

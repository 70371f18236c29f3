"""The `vsandx` entry point: subcommands, exit codes, what `simulate` prints and records."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from cli.main import main


def test_help_is_instant_and_lists_simulate() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "cli.main", "--help"], capture_output=True, text=True, check=True, timeout=30
    )
    assert "simulate" in out.stdout
    # --help must not import the heavy areas
    probe = "import sys, cli.main as c; c.build_parser(); print('data.simulate.generate' in sys.modules)"
    assert (
        subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout.strip()
        == "False"
    )


@pytest.mark.parametrize(
    "argv",
    [
        ["simulate", "--profile", "cloud", "-n", "1", "--out", "x"],
        ["simulate", "--profile", "lab", "-n", "0", "--out", "x"],
        ["simulate", "--profile", "lab", "-n", "1"],
        ["simulate", "--profile", "lab", "-n", "1", "--out", "x", "--issue-rate", "1.5"],
        ["frobnicate"],
    ],
)
def test_bad_invocations_exit_2(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as e:
        main(argv)
    assert e.value.code == 2
    assert capsys.readouterr().err


def test_simulate_writes_bundles_and_a_manifest(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rc = main(["simulate", "--profile", "lab", "-n", "3", "--out", str(tmp_path), "--seed", "5", "-q"])
    assert rc == 0
    out = capsys.readouterr().out
    assert "wrote 3 bundles" in out
    assert len(list(tmp_path.glob("lab-s5-*.tgz"))) == 3
    manifest = json.loads((tmp_path / "simulation-lab-s5.json").read_text())
    assert manifest["schema"] == "vsandx.simulation/1"
    assert manifest["profile"] == "lab" and manifest["seed"] == 5 and manifest["issue_rate"] == 0.5
    assert [b["path"] for b in manifest["bundles"]] == [f"lab-s5-{i:06d}.tgz" for i in range(3)]


def test_simulate_dir_format(tmp_path: Path) -> None:
    assert main(["simulate", "--profile", "field", "-n", "1", "--out", str(tmp_path), "--format", "dir", "-q"]) == 0
    (bundle,) = [p for p in tmp_path.iterdir() if p.is_dir()]
    assert (bundle / "labels.json").exists()
    assert any(p.name.startswith("esx-") for p in bundle.iterdir())


def test_version_and_every_option_has_help(capsys: pytest.CaptureFixture[str]) -> None:
    import argparse

    from cli.main import build_parser

    with pytest.raises(SystemExit) as e:
        main(["--version"])
    assert e.value.code == 0 and capsys.readouterr().out.startswith("vsandx ")
    sub = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    for name, p in sub.choices.items():
        for a in p._actions:
            assert a.help, f"vsandx {name} {a.option_strings or a.dest}: no help text"
        text = p.format_help()
        for a in p._actions:  # a default worth knowing is shown
            if a.default not in (None, False, argparse.SUPPRESS) and not a.required and a.help:
                assert "(default:" in text, f"vsandx {name}: defaults not shown"


def test_train_with_no_training_bundles_exits_2_before_any_work(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("VSANDX_DATA_DIR", str(tmp_path))
    assert main(["train", "--quick", "--lab", "0", "--varied", "0", "-q"]) == 2
    assert "lab, varied and every source are 0" in capsys.readouterr().err
    assert main(["train", "--quick", "--sweep-minutes", "-1", "-q"]) == 2
    assert "sweep_minutes must be at least 0" in capsys.readouterr().err
    assert main(["train", "--quick", "--run-minutes", "nan", "-q"]) == 2
    assert "run_minutes and tail_minutes must be at least 0" in capsys.readouterr().err
    assert not any(tmp_path.iterdir())  # nothing simulated, no MLflow store


def test_train_help_states_the_presets_as_they_are() -> None:
    from cli.main import TRAIN_PRESETS
    from training.config import TrainConfig

    for preset in ("smoke", "quick", "standard", "full"):
        c = TrainConfig.preset(preset)
        row = next(line.split() for line in TRAIN_PRESETS.splitlines() if line.strip().startswith(preset))
        assert row[1:] == [str(v) for v in (c.lab, c.varied, c.focus_n, c.val, c.test, c.samples)] + [
            ",".join(c.families),
            str(c.seed),
            f"{c.sweep_minutes:g}",
            ",".join(f"{k}={v}" for k, v in c.sources.items()) or "-",
        ]
        assert (c.run_minutes, c.tail_minutes) == ((60, 16) if preset == "standard" else (0, 0))
    text = " ".join(TRAIN_PRESETS.split())
    assert "the standard preset's 60, 16 of them kept; the others' 0, none" in text
    from training.curve import AFTER_CURVE_S

    assert f"whose refits end {AFTER_CURVE_S / 60:g} minutes before the budget" in text


def test_diagnose_rejects_a_bad_path_before_any_model_loads(tmp_path: Path) -> None:
    text = tmp_path / "notes.txt"
    text.write_text("not a bundle\n" * 100)
    for target, reason in ((tmp_path / "missing.tgz", "no such file"), (text, "not a directory, tar")):
        # a model URI that would fail loudly if anything tried to resolve it
        args = [sys.executable, "-m", "cli.main", "diagnose", str(target), "--model", "models:/nothing@here"]
        got = subprocess.run(args, capture_output=True, text=True, timeout=60, cwd=tmp_path)
        assert got.returncode == 1 and reason in got.stderr and str(target) in got.stderr, got.stderr
        assert not (tmp_path / "var").exists()  # nothing resolved, nothing created (speed: bench_cli.py)


def test_train_takes_another_authors_bundles_by_name() -> None:
    import argparse

    from cli.main import _source

    assert _source("outsider=40") == ("outsider", 40)
    for bad in ("outsider", "=4", "outsider=-1"):
        with pytest.raises(argparse.ArgumentTypeError):
            _source(bad)

"""fetch_model: every model URI form resolved, each version downloaded once, a cached champion loaded
without MLflow, and a clear error when there is no model."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.training.registry_kit import registered, saved_model
from training.model_fetch import fetch_model
from training.model_files import NoModel
from training.tracking import CHAMPION


def test_fetch_model_resolves_every_uri_form_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    data = Path("var")  # relative, as the default ./var: the download is absolute inside, never mixed
    tr = registered(tmp_path, data)
    tr.client.set_registered_model_alias("vsandx-test", CHAMPION, "1")
    champ = fetch_model(None, data, default_name="vsandx-test")
    assert (champ.name, champ.version) == ("vsandx-test", "1") and champ.folder.is_absolute()
    assert json.loads((champ.folder / "config.json").read_text()) == {"marker": "a"}
    assert (tmp_path / "var" / "models" / "vsandx-test" / "1" / ".complete").is_file()
    pinned = fetch_model("models:/vsandx-test/2", data)
    assert pinned.version == "2" and json.loads((pinned.folder / "config.json").read_text()) == {"marker": "b"}
    assert fetch_model("models:/vsandx-test@champion", data).folder == champ.folder  # downloaded once
    tr.client.set_registered_model_alias("vsandx-test", CHAMPION, "2")  # the alias moves: seen at once
    assert fetch_model(None, data, default_name="vsandx-test").version == "2"
    plain = fetch_model(str(saved_model(tmp_path, "c")), data)
    assert plain.ref is None and plain.version.startswith("file:")
    for bad, why in (("models:/vsandx-test/9", "version 9"), ("models:/vsandx-test@nope", "@nope"),
                     ("models:/vsandx-test", "expected models:/"), (str(tmp_path), "no config.json")):  # fmt: skip
        with pytest.raises(NoModel, match=why):
            fetch_model(bad, data)


def test_a_cached_champion_loads_without_mlflow(tmp_path: Path) -> None:
    data = tmp_path / "var"
    registered(tmp_path, data, ("a",)).client.set_registered_model_alias("vsandx-test", CHAMPION, "1")
    probe = (
        "import sys; from pathlib import Path; from training.model_fetch import fetch_model;"
        f"got = fetch_model(None, Path({str(data)!r}), default_name='vsandx-test');"
        "print(got.version, 'mlflow' in sys.modules)"
    )
    run = lambda: subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)  # noqa: E731
    first = run()
    assert first.stdout.split() == ["1", "True"] and "%|" not in first.stderr  # asked the registry, no progress bar
    assert run().stdout.split() == ["1", "False"]  # the store has not changed since: no MLflow at all


def test_no_registry_is_a_clear_error_that_creates_nothing(tmp_path: Path) -> None:
    with pytest.raises(NoModel, match="vsandx train --quick"):
        fetch_model(None, tmp_path / "var")
    assert not (tmp_path / "var").exists()

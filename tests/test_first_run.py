"""The path a newcomer takes, exactly as they meet it: a fresh working folder, no `VSANDX_*` variable,
no `.env`, so every default holds (the data folder is the relative `./var`). Train the smoke champion,
simulate bundles, diagnose one from the command line, serve, upload one through the API and get every
component back. Every other test passes absolute temporary folders; this one must not.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

VSANDX = str(Path(sys.executable).with_name("vsandx"))  # the console script `make` installs


def _env() -> dict[str, str]:
    """The environment of a newcomer's shell: no vsandx setting of ours leaks into it."""
    return {k: v for k, v in os.environ.items() if not k.startswith("VSANDX_")}


def _run(cwd: Path, *args: str, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    return subprocess.run([VSANDX, *args], cwd=cwd, env=_env(), capture_output=True, text=True, timeout=timeout)


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _ready(url: str) -> httpx.Response | None:
    try:
        return httpx.get(f"{url}/ready", timeout=5)
    except httpx.HTTPError:
        return None


@pytest.fixture(scope="module")
def newcomer(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A working folder where `vsandx train --smoke` and `vsandx simulate` ran with every default."""
    cwd = tmp_path_factory.mktemp("newcomer")
    assert not (cwd / ".env").exists()
    done = _run(cwd, "train", "--smoke", "--quiet", timeout=1200)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "promoted to champion" in done.stdout
    assert (cwd / "var" / "mlflow.db").is_file()  # the relative default, under the working folder
    # every training set the quick preset builds was built here too, the focus set of hot spots among
    # them, and the sweep's one training folder holds it (linked under the relative default)
    (mix,) = [json.loads(p.read_text()) for p in (cwd / "var" / "datasets").glob("mix-*/dataset.json")]
    focus = [part for part in mix["parts"] if part.get("causes")]
    assert [(p["profile"], p["n"], p["causes"]) for p in focus] == [("field", 4, ["disk.hotspot"])], mix["parts"]
    assert len(list((cwd / "var" / "datasets").glob("mix-*/*.npz"))) == sum(p["n"] for p in mix["parts"])
    sim = _run(cwd, "simulate", "--profile", "field", "-n", "2", "--out", "sim", "--seed", "1", "--quiet")
    assert sim.returncode == 0, sim.stderr[-3000:]
    return cwd


def _components(cwd: Path, bundle: Path) -> int:
    parsed = _run(cwd, "parse", str(bundle.relative_to(cwd)), "--json")
    assert parsed.returncode == 0, parsed.stderr
    return sum(c["count"] for c in json.loads(parsed.stdout)["components"].values())


@pytest.mark.slow
def test_cli_diagnose_with_every_default(newcomer: Path) -> None:
    bundle = sorted((newcomer / "sim").glob("*.tgz"))[0]
    got = _run(newcomer, "diagnose", str(bundle.relative_to(newcomer)), "--json")
    assert got.returncode == 0, got.stderr[-3000:]
    doc = json.loads(got.stdout)
    assert doc["model"]["version"] == "1" and len(doc["components"]) == _components(newcomer, bundle)
    assert "%|" not in got.stderr  # no MLflow download progress bars on stderr
    # the model was fetched once, under the relative default: absolute inside, never mixed
    assert (newcomer / "var" / "models" / "vsandx-diagnoser" / "1" / ".complete").is_file()


@pytest.mark.slow
def test_serve_with_every_default(newcomer: Path) -> None:
    port = _port()
    url = f"http://127.0.0.1:{port}"
    log = newcomer / "serve.log"
    with open(log, "wb") as out:
        p = subprocess.Popen(
            [VSANDX, "serve", "--port", str(port), "--workers", "1"],
            cwd=newcomer,
            env=_env(),
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        deadline, r = time.monotonic() + 120, None
        while time.monotonic() < deadline and p.poll() is None:
            r = _ready(url)
            if r is not None and r.status_code == 200:
                break
            time.sleep(0.5)
        assert r is not None and r.status_code == 200, (r.text if r else "no answer") + log.read_text()[-3000:]
        assert r.json()["model"]["version"] == "1" and r.json()["reason"] is None
        bundle = sorted((newcomer / "sim").glob("*.tgz"))[1]
        up = httpx.post(
            f"{url}/api/v1/diagnoses?wait=true&timeout=60",
            files={"bundle": (bundle.name, bundle.read_bytes())},
            timeout=90,
        )
        assert up.status_code == 201, up.text
        doc = up.json()["diagnosis"]
        assert doc["schema"] == "vsandx.diagnosis/1" and doc["model"]["version"] == "1"
        assert len(doc["components"]) == _components(newcomer, bundle)
    finally:
        p.send_signal(signal.SIGTERM)
        p.wait(30)
    text = log.read_text()
    assert p.returncode == 0, text[-3000:]
    assert "model not served" not in text and "is not in the subpath" not in text


def test_no_champion_says_how_and_creates_nothing(tmp_path: Path) -> None:
    bundle = tmp_path / "x.tgz"
    bundle.write_bytes(_tiny_tgz())
    got = _run(tmp_path, "diagnose", "x.tgz")
    assert got.returncode == 1 and "vsandx train --quick" in got.stderr, got.stderr
    assert not (tmp_path / "var" / "mlflow.db").exists()  # asking for a champion created no registry


def _tiny_tgz() -> bytes:
    import io
    import tarfile

    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tf:
        data = b"hello"
        ti = tarfile.TarInfo("host/readme.txt")
        ti.size = len(data)
        tf.addfile(ti, io.BytesIO(data))
    return buf.getvalue()

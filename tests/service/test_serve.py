"""`vsandx serve` end to end on the embedded defaults: it prints its URL, answers on loopback, its
worker process diagnoses, and it stops its workers when it stops."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from tests.service.kit import answers, bundles, model_dir, serving, until

__all__ = ["bundles", "model_dir"]  # fixtures


def test_serve_runs_api_and_workers(tmp_path: Path, model_dir: Path, bundles: list[Path]) -> None:
    env = {
        "VSANDX_DATA_DIR": str(tmp_path / "var"),
        "VSANDX_MODEL_URI": str(model_dir),
        "VSANDX_EMBEDDED_WORKERS": "0",
        "VSANDX_WORKER_PROCESSES": "1",
    }
    log = tmp_path / "serve.log"
    with serving(env, log=log) as (url, p):
        until(lambda: answers(f"{url}/ready"), timeout=60, every=0.3)
        until(lambda: "1 worker process(es)" in httpx.get(f"{url}/ready").json()["queue"], timeout=30)
        assert f"vsandx serving on {url}" in log.read_text()
        children = _children(p.pid)
        assert len(children) == 1  # the embedded worker process
        r = httpx.post(
            f"{url}/api/v1/diagnoses?wait=true", files={"bundle": ("a.tgz", bundles[0].read_bytes())}, timeout=60
        )
        assert r.status_code == 201 and r.json()["diagnosis"]["schema"] == "vsandx.diagnosis/1", r.text
    assert p.returncode == 0, log.read_text()[-2000:]  # stopped by SIGTERM
    assert not any(Path(f"/proc/{c}").exists() for c in children)  # stopped and reaped


def _children(pid: int) -> list[int]:
    return [int(c) for c in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]


def test_cli_parses_serve_and_worker() -> None:
    from vsandx.cli import build_parser

    a = build_parser().parse_args(["serve"])
    assert (a.host, a.port) == ("127.0.0.1", 8000)
    a = build_parser().parse_args(["worker", "--queues", "training", "--concurrency", "2"])
    assert (a.queues, a.concurrency, a.pool) == ("training", 2, "prefork")
    with pytest.raises(SystemExit):
        build_parser().parse_args(["worker", "--pool", "eventlet"])

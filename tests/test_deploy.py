"""docker-compose.yml and the Dockerfile are consistent with the package (no engine runs here)."""

from __future__ import annotations

import tomllib

import yaml

from tests.conftest import REPO
from vsandx.cli import build_parser

INFRA = {"redis", "postgres"}  # third-party images the vsandx services talk to


def test_compose_services_use_the_image_and_valid_commands() -> None:
    doc = yaml.safe_load((REPO / "docker-compose.yml").read_text())
    services = doc["services"]
    assert {"api", "worker", "train-worker"} <= set(services)
    parser = build_parser()
    for name, svc in services.items():
        if name in INFRA:
            image = svc["image"]
            assert ":" in image and not image.endswith(":latest"), f"{name}: pin the image's version"
            continue
        assert svc.get("build") == "." and svc.get("image") == "vsandx:latest", name
        assert any(v.endswith(":/var/lib/vsandx") for v in svc["volumes"]), name
        parser.parse_args(svc["command"])  # raises SystemExit on a command the CLI would refuse
        env = svc["environment"]
        assert env["VSANDX_BROKER_URL"].startswith("redis://redis:") and "@postgres:" in env["VSANDX_DATABASE_URL"]
    assert set(doc["volumes"]) >= {"vsandx-data"}


def test_dockerfile_copies_every_package() -> None:
    text = (REPO / "Dockerfile").read_text()
    include = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"]["find"]["include"]
    for pattern in include:
        assert f"COPY {pattern.rstrip('*')} " in text
    assert 'ENTRYPOINT ["vsandx"]' in text

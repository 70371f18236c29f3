"""docker-compose.yml and the Dockerfile are consistent with the package (no engine runs here)."""

from __future__ import annotations

import re
import tomllib

import yaml

from tests.conftest import REPO
from vsandx.cli import build_parser

INFRA = {"redis", "postgres", "mailpit"}  # third-party images the vsandx services talk to


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


def test_compose_mail_catcher_for_development() -> None:
    """Mailpit catches the emailed reports in development only (profile dev), on the SMTP port the
    development block of .env.example points at, its web UI on loopback."""
    services = yaml.safe_load((REPO / "docker-compose.yml").read_text())["services"]
    mail = services["mailpit"]
    assert mail["profiles"] == ["dev"] and mail["image"].startswith("axllent/mailpit:v")
    assert "127.0.0.1:8025:8025" in mail["ports"] and "127.0.0.1:1025:1025" in mail["ports"]
    example = (REPO / ".env.example").read_text()
    for line in ("VSANDX_SMTP_HOST=mailpit", "VSANDX_SMTP_PORT=1025", "VSANDX_SMTP_STARTTLS=false"):
        assert re.search(rf"^#? ?{line}$", example, re.M), line
    # no vsandx service needs it (a production `docker compose up` does not start it)
    assert not any("mailpit" in str(svc.get("depends_on", "")) for svc in services.values())


def test_env_example_names_real_settings() -> None:
    """Every VSANDX_* name in .env.example is a setting (a typo there is a setting silently ignored), and
    every tracker and SMTP setting is documented there."""
    from service.notify import NotifySettings
    from service.trackers import TrackerSettings
    from vsandx.settings import PipelineSettings, ServiceSettings

    classes = (ServiceSettings, PipelineSettings, TrackerSettings, NotifySettings)
    known = {f"VSANDX_{name.upper()}" for cls in classes for name in cls.model_fields}
    named = set(re.findall(r"^#? ?(VSANDX_[A-Z0-9_]+)=", (REPO / ".env.example").read_text(), re.M))
    assert named and named <= known, sorted(named - known)
    wanted = {f"VSANDX_{name.upper()}" for cls in (TrackerSettings, NotifySettings) for name in cls.model_fields}
    assert wanted <= named, sorted(wanted - named)

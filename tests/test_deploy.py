"""docker-compose.yml and the Dockerfile are consistent with the package (no engine runs here)."""

from __future__ import annotations

import re
import tomllib

import yaml

from cli.main import build_parser
from tests.conftest import REPO

INFRA = {"redis", "postgres", "mailpit"}  # third-party images the vsandx services talk to
ROLES = {"api", "worker", "train-worker", "beat", "mlflow"}  # long-running services of the vsandx image


def _compose() -> dict:
    return yaml.safe_load((REPO / "docker-compose.yml").read_text())


def test_compose_services_use_the_image_and_valid_commands() -> None:
    doc = _compose()
    services = doc["services"]
    assert set(services) >= ROLES | INFRA
    parser = build_parser()
    for name, svc in services.items():
        if name in INFRA:
            image = svc["image"]
            assert ":" in image and not image.endswith(":latest"), f"{name}: pin the image's version"
            continue
        assert svc.get("build") == "." and svc.get("image") == "vsandx:latest", name  # one image
        if name == "mlflow":
            continue  # its own entrypoint: test_compose_mlflow_server
        assert any(v.endswith(":/var/lib/vsandx") for v in svc["volumes"]), name
        parser.parse_args(svc["command"])  # raises SystemExit on a command the CLI would refuse
        env = svc["environment"]
        assert env["VSANDX_BROKER_URL"].startswith("redis://redis:") and "@postgres:" in env["VSANDX_DATABASE_URL"]
        assert env["VSANDX_MLFLOW_TRACKING_URI"] == "http://mlflow:5000"
        assert env["VSANDX_HOUSEKEEPING_IN_API"] == "false"  # beat schedules it
    assert services["beat"]["command"] == ["beat"]
    assert {"training"} == set(
        services["train-worker"]["command"][services["train-worker"]["command"].index("--queues") + 1].split(",")
    )
    assert set(doc["volumes"]) >= {"vsandx-data", "mlflow-data"}


def test_compose_healthchecks_and_start_order() -> None:
    """Every long-running service but beat has a healthcheck whose vsandx command the CLI accepts;
    services wait for the health of what they need."""
    services = _compose()["services"]
    parser = build_parser()
    for name in (ROLES | INFRA) - {"beat"}:
        test = services[name]["healthcheck"]["test"]
        assert test[0] in ("CMD", "CMD-SHELL"), name
        if test[1] == "vsandx":
            parser.parse_args(test[2:])
    assert services["worker"]["healthcheck"]["test"][1:] == ["vsandx", "worker", "--ping"]
    waits = {(name, dep): cond for name, svc in services.items() for dep, cond in svc.get("depends_on", {}).items()}
    for (name, dep), cond in waits.items():
        assert "healthcheck" in services[dep], f"{name} waits for {dep}, which has no healthcheck"
        assert cond["condition"] == "service_healthy", (name, dep)
    assert {"redis", "postgres", "mlflow"} <= set(services["api"]["depends_on"])


def test_compose_mlflow_server() -> None:
    """The tracking server runs from the vsandx image with arguments its installed CLI accepts, and
    answers on the host name the other services use."""
    from mlflow.cli import cli

    svc = _compose()["services"]["mlflow"]
    assert svc["entrypoint"] == ["mlflow"] and svc["command"][0] == "server"
    args = svc["command"][1:]
    ctx = cli.commands["server"].make_context("server", list(args))  # parses only; raises on a bad option
    assert ctx.params["serve_artifacts"] and ctx.params["port"] == 5000
    assert "mlflow:5000" in ctx.params["allowed_hosts"]
    assert any(v.endswith(":/var/lib/mlflow") for v in svc["volumes"])


def test_dockerfile_copies_every_package() -> None:
    text = (REPO / "Dockerfile").read_text()
    include = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"]["find"]["include"]
    for pattern in include:
        assert f"COPY {pattern.rstrip('*')} " in text
    assert 'ENTRYPOINT ["vsandx"]' in text
    # every role's dependencies: the API and workers need these extras, mlflow its server
    (extras,) = re.findall(r"pip install --no-cache-dir '\.\[([a-z,]+)\]'", text)
    assert {"pipeline", "models", "training", "service"} <= set(extras.split(","))


def test_compose_mail_catcher_for_development() -> None:
    """Mailpit catches the emailed reports in development only (profile dev), on the SMTP port the
    development block of .env.example points at, its web UI on loopback."""
    services = _compose()["services"]
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
    from service.trackers.base import TrackerSettings
    from service.trackers.notify import NotifySettings
    from vsandx.settings import PipelineSettings, ServiceSettings

    classes = (ServiceSettings, PipelineSettings, TrackerSettings, NotifySettings)
    known = {f"VSANDX_{name.upper()}" for cls in classes for name in cls.model_fields}
    named = set(re.findall(r"^#? ?(VSANDX_[A-Z0-9_]+)=", (REPO / ".env.example").read_text(), re.M))
    assert named and named <= known, sorted(named - known)
    wanted = {
        f"VSANDX_{name.upper()}"
        for cls in (TrackerSettings, NotifySettings, PipelineSettings)
        for name in cls.model_fields
    }
    assert wanted <= named, sorted(wanted - named)


def test_env_example_gives_the_pipeline_defaults() -> None:
    """The reading limits in .env.example are PipelineConfig's defaults (one place holds the numbers)."""
    from pipeline.config import PipelineConfig

    text = (REPO / ".env.example").read_text()
    shown = dict(re.findall(r"^# (VSANDX_PIPELINE_[A-Z0-9_]+)=(\S+)$", text, re.M))
    cfg = PipelineConfig()
    for env, value in shown.items():
        assert float(value) == float(getattr(cfg, env.removeprefix("VSANDX_PIPELINE_").lower())), env

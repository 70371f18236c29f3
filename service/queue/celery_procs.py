"""The Celery worker and beat processes (`vsandx worker` / `vsandx beat` with VSANDX_BROKER_URL set), and
the ping a container's healthcheck runs; the app and its tasks are service.queue.celery_app's."""

from __future__ import annotations

import os

from service.queue.celery_app import app_for, make_celery
from vsandx.settings import ServiceSettings


def run_worker(settings: ServiceSettings, queues: str, concurrency: int, pool: str, loglevel: str = "INFO") -> None:
    """`vsandx worker` with a broker: a Celery worker on the given queues."""
    app = app_for(settings)
    app.worker_main(
        [
            "worker",
            "-Q",
            queues,
            "-c",
            str(concurrency),
            "-P",
            pool,
            "-l",
            loglevel,
            "-n",
            f"vsandx-{queues.replace(',', '-')}-{os.getpid()}@%h",  # unique: several workers per host
            "--without-gossip",
            "--without-mingle",
        ]
    )


def run_beat(settings: ServiceSettings, loglevel: str = "INFO") -> None:
    """`vsandx beat`: the Celery beat scheduler (housekeeping every housekeeping_s). Run exactly one per
    deployment; its schedule state lives in <data_dir>/run/celerybeat-schedule."""
    app = app_for(settings)
    state = settings.data_dir / "run"
    state.mkdir(parents=True, exist_ok=True)
    app.start(["beat", "-l", loglevel, "-s", str(state / "celerybeat-schedule")])


def ping_local_workers(settings: ServiceSettings, timeout: float = 5.0) -> list[str]:
    """The Celery workers of this host that answer a ping (`vsandx worker --ping`, a container's
    healthcheck: each container has its own host name)."""
    import socket

    app = make_celery(settings)
    try:
        replies = app.control.ping(timeout=timeout) or []
    finally:
        app.pool.force_close_all()
    host = socket.gethostname()
    return sorted(name for r in replies for name in r if name.endswith(f"@{host}"))

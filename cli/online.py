"""The service's processes: `vsandx serve` (API, UI and, on the embedded queue, its worker processes),
`vsandx worker` and `vsandx beat`. Each imports the service when it runs."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from vsandx.settings import ServiceSettings


class _Stopped(Exception):
    """SIGTERM/SIGINT reached `vsandx serve` (uvicorn re-raises it after its graceful shutdown)."""


def _stopped(signum: int, _frame: object) -> None:
    raise _Stopped(signum)


def _die_with_parent() -> None:
    """In a worker child of `vsandx serve`: SIGTERM when serve dies, even by SIGKILL (Linux)."""
    import contextlib
    import ctypes
    import signal

    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG


def serve(args: argparse.Namespace) -> int:
    import os
    import signal

    import uvicorn

    from service.app import create_app
    from service.queue.supervise import WorkerPool
    from vsandx.settings import get_service_settings

    settings = get_service_settings()
    n = settings.worker_processes if args.workers is None else args.workers
    n = (os.cpu_count() or 1) if n is None else n
    if n > 0 and not settings.broker_url and "embedded_workers" not in settings.model_fields_set:
        # the diagnoses run in worker processes: one per core, no GIL shared with the API
        settings = settings.model_copy(update={"embedded_workers": 0})
    signal.signal(signal.SIGTERM, _stopped)
    signal.signal(signal.SIGINT, _stopped)
    pool: WorkerPool | None = None
    try:
        app = create_app(settings)  # migrates the database before any worker starts
        if not settings.broker_url and n > 0:
            worker = [sys.executable, "-m", "cli.main", "worker", "--concurrency", "1", "--log-level", args.log_level]
            pool = WorkerPool(worker, n, preexec=_die_with_parent)  # reaped and respawned when one dies
            pool.start()
        where = "embedded queue" if not settings.broker_url else f"Celery broker {settings.broker_url}"
        print(
            f"vsandx serving on http://{args.host}:{args.port}  (API docs /docs; {where}; data {settings.data_dir})",
            flush=True,
        )
        uvicorn.run(app, host=args.host, port=args.port, log_level=args.log_level)
    except _Stopped:
        pass
    finally:
        if pool is not None:
            pool.stop(10)
    return 0


def worker(args: argparse.Namespace) -> int:
    import logging

    from vsandx.settings import get_service_settings

    settings = get_service_settings()
    if args.ping:
        return _ping_workers(settings)
    logging.basicConfig(level=args.log_level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    if settings.broker_url:
        from service.queue.celery_procs import run_worker

        run_worker(settings, args.queues, args.concurrency or 1, args.pool, args.log_level.upper())
        return 0
    from service.queue.worker import run_embedded_worker

    return run_embedded_worker(settings, args.concurrency or 1)


def _ping_workers(settings: ServiceSettings) -> int:
    """Exit 0 when a Celery worker of this host answers (a healthcheck); embedded: the database opens."""
    if settings.broker_url:
        from service.queue.celery_procs import ping_local_workers

        alive = ping_local_workers(settings)
        print(", ".join(alive) or "no Celery worker of this host answered", file=sys.stderr)
        return 0 if alive else 1
    from sqlalchemy import text

    from service.store.db import database_for

    with database_for(settings.sqlalchemy_url).session() as db:
        db.execute(text("SELECT 1"))
    return 0


def beat(args: argparse.Namespace) -> int:
    import logging

    from vsandx.settings import get_service_settings

    settings = get_service_settings()
    logging.basicConfig(level=args.log_level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    if not settings.broker_url:
        print("vsandx beat: needs VSANDX_BROKER_URL (the embedded queue's API process does housekeeping)",
              file=sys.stderr)  # fmt: skip
        return 2
    from service.queue.celery_procs import run_beat

    run_beat(settings, args.log_level.upper())
    return 0

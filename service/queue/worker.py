"""`vsandx worker` on the embedded queue: threads claiming jobs (diagnoses, tracker deliveries) from the
database until SIGTERM/SIGINT."""

from __future__ import annotations

import logging
import signal
import sys
import threading
from types import FrameType

from diagnosis.serving import ModelHolder
from service.queue.diagnosis_jobs import Notifier, worker_name
from service.queue.doorbell import Doorbell
from service.queue.embedded import work_loop
from service.queue.webhook_jobs import WebhookWorker
from service.store.db import database_for
from vsandx.settings import ServiceSettings

log = logging.getLogger(__name__)


def run_embedded_worker(settings: ServiceSettings, threads: int = 1) -> int:
    database = database_for(settings.sqlalchemy_url)
    holder = ModelHolder(settings)
    if not holder.refresh() and not holder.current_model_info()["ready"]:
        log.warning("no model yet (%s); waiting for one", holder.current_model_info()["error"])
    webhooks = WebhookWorker(database, settings, holder)  # tracker deliveries: VSANDX_BUGZILLA_* etc.
    stop = threading.Event()

    def _stop(signum: int, _frame: FrameType | None) -> None:
        log.info("signal %d: finishing the current job and stopping", signum)
        stop.set()

    signal.signal(signal.SIGTERM, _stop)
    signal.signal(signal.SIGINT, _stop)
    print(
        f"vsandx worker: embedded queue on {database.engine.url.render_as_string()}, {threads} thread(s)",
        file=sys.stderr,
        flush=True,
    )
    wake = Notifier()
    notifier: Notifier | None = wake
    doorbell: Doorbell | None = None
    try:  # the API rings when it accepts a job; we ring it when one is done
        doorbell = Doorbell(settings.data_dir / "run", "worker")
        doorbell.listen(lambda _job: wake.submitted())
    except OSError as e:
        log.warning("no doorbell (%s): polling every %.2f s", e, settings.poll_s)
        notifier = None
    workers = [
        threading.Thread(
            target=work_loop,
            args=(database, settings, holder, stop, notifier, worker_name(f"w{i}"), doorbell, webhooks),
            name=f"vsandx-worker-{i}",
        )
        for i in range(threads)
    ]
    for t in workers:
        t.start()
    while any(t.is_alive() for t in workers):
        stop.wait(1.0)
        if stop.is_set():
            break
    if notifier is not None:
        notifier.wake_all()
    for t in workers:
        t.join()
    if doorbell is not None:
        doorbell.close()
    return 0

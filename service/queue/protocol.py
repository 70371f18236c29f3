"""What the API process asks of a job queue: the `Queue` protocol, met by the embedded queue
(service.queue.embedded.EmbeddedQueue: jobs in the database, worker threads and processes of this machine)
and by Celery (service.queue.celery_queue.CeleryQueue: a broker, Celery workers).

Every method exists on both; what one of them cannot do it refuses with `NoTrainingQueue` (training
runs need a Celery worker on the training queue), never by lacking the method.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol


class NoTrainingQueue(RuntimeError):
    """Training runs go to a Celery worker's training queue; this queue has none (the API answers 409)."""


class RetrainQueue(Protocol):
    """Where a queued retrain (service.queue.retraining) is sent: the training queue, or a thread here."""

    def submit_retrain(self, retrain_id: int) -> str:
        """Start retrain `retrain_id` (its row is queued); returns a task or thread id."""
        ...


class Queue(RetrainQueue, Protocol):
    name: str

    def start(self) -> None: ...
    def stop(self, timeout: float = 10.0) -> None: ...

    def submit(self, job_id: str) -> None:
        """Hand diagnosis job `job_id` (a queued row) to a worker; best effort, the row is the truth."""
        ...

    def submit_webhook(self, job: Mapping[str, Any]) -> str:
        """Queue a tracker delivery's work (service.queue.webhook_jobs); raises when it cannot be recorded."""
        ...

    def wait(self, job_id: str, timeout: float) -> str:
        """Block until the job is done or failed, or `timeout` passes; its last status."""
        ...

    def submit_training(self, preset: str) -> str:
        """Send a training run to the training queue; its task id. Raises NoTrainingQueue."""
        ...

    def training_status(self, task_id: str) -> dict[str, Any]:
        """A training run's state (PENDING, STARTED, SUCCESS with the version, FAILURE). Raises NoTrainingQueue."""
        ...

    def reap(self) -> list[str]:
        """Re-send jobs the queue lost (a broker's dropped messages); the ids re-sent."""
        ...

    def ping(self) -> str: ...

    def unready(self) -> str | None:
        """Why an accepted job would not run now (None when it would)."""
        ...

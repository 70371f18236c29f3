"""Settings: environment variables prefixed VSANDX_ (and an optional .env)."""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import Annotated, Literal

from pydantic import Field, field_validator
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="VSANDX_", env_file=".env", extra="ignore")

    # Every embedded default lives here: SQLite, MLflow store, uploads, cached datasets.
    data_dir: Path = Path("./var")
    # Simulator: worker processes (0 = one per core).
    sim_workers: int = 0
    # MLflow: tracking and registry URI (default: SQLite and an artifact folder under data_dir).
    mlflow_tracking_uri: str | None = None
    mlflow_experiment: str = "vsandx"
    # Copies of each engineer-confirmed bundle in a retrain's training set (they are few, and real):
    # measured by benchmarks/bench_feedback_loop.py --weights (README, "The feedback loop").
    retrain_feedback_weight: int = Field(default=3, ge=1, le=100)
    registered_model: str = "vsandx-diagnoser"
    # Intra-op threads of a served model per process (torch): `vsandx diagnose`, evaluate and the
    # service's workers; parallelism comes from worker processes.
    model_threads: int = 1
    # Coverage of the conformal sets a calibrated model answers (models.conformal): a component whose set
    # at this coverage holds several labels is reported as needing review. Applied at prediction time.
    review_coverage: float = Field(default=0.95, gt=0.0, lt=1.0)
    # Path points of the integrated gradients that say what drove each finding of a model with CNN members
    # (diagnosis.drivers; 0 = none computed). 32: a median integration error of 3 % of the attributed push.
    attribution_steps: int = Field(default=32, ge=0, le=256)
    # Ray: an existing cluster to run sweeps on (like RAY_ADDRESS); None starts a local one.
    ray_address: str | None = None

    @field_validator("data_dir", mode="after")
    @classmethod
    def _absolute(cls, v: Path) -> Path:
        """Resolved once, here: downstream code (MLflow's artifact paths above all) mixes relative and
        absolute paths badly, and a later chdir must not move the data."""
        return v.expanduser().resolve()


@lru_cache(maxsize=1)
def get_settings() -> Settings:
    return Settings()


class PipelineSettings(BaseSettings):
    """Bundle reading limits and tensor grid (pipeline.config.PipelineConfig); env VSANDX_PIPELINE_*."""

    model_config = SettingsConfigDict(env_prefix="VSANDX_", env_file=".env", extra="ignore")

    # None: PipelineConfig's own default (one place holds the numbers)
    pipeline_max_members: int | None = None
    pipeline_max_member_bytes: int | None = None
    pipeline_max_total_bytes: int | None = None
    pipeline_max_ratio: float | None = None
    pipeline_ratio_min_bytes: int | None = None
    pipeline_max_depth: int | None = None
    pipeline_max_name_len: int | None = None
    pipeline_max_header_bytes: int | None = None
    pipeline_max_nested_zip_bytes: int | None = None
    pipeline_max_components: int | None = None
    pipeline_max_perf_entities: int | None = None
    pipeline_max_samples: int | None = None
    pipeline_max_perf_values: int | None = None
    pipeline_max_entity_bytes: int | None = None
    pipeline_max_source_bytes: int | None = None
    pipeline_max_table_bytes: int | None = None
    pipeline_max_log_bytes: int | None = None
    pipeline_max_line_bytes: int | None = None
    pipeline_max_events: int | None = None
    pipeline_max_events_total: int | None = None
    pipeline_max_esxtop_columns: int | None = None
    pipeline_grid_steps: int | None = None
    pipeline_max_step_s: int | None = None


@lru_cache(maxsize=1)
def get_pipeline_settings() -> PipelineSettings:
    return PipelineSettings()


class ServiceSettings(Settings):
    """The web service and its workers (`vsandx serve`, `vsandx worker`); env VSANDX_*.

    Embedded defaults run everything on one machine: SQLite under data_dir, jobs queued in that
    database and run by worker threads of the API process (and any `vsandx worker` processes).
    Setting `broker_url` (e.g. redis://127.0.0.1:6379/0) hands the jobs to Celery instead.
    """

    # SQLAlchemy URL; None = SQLite at <data_dir>/vsandx.db. PostgreSQL: postgresql+psycopg://…
    database_url: str | None = None
    # Celery broker and result backend; None = the embedded queue (no broker process needed).
    broker_url: str | None = None
    result_backend: str | None = None  # None = the broker URL
    # Prefix of every Redis key Celery uses (several deployments or test runs on one Redis).
    redis_key_prefix: str = ""
    # API keys accepted on write endpoints (X-API-Key header); empty = open. Env: comma-separated.
    api_keys: Annotated[list[str], NoDecode] = []
    max_upload_bytes: int = 512 * 1024 * 1024
    # Request bodies of every other route (JSON: feedback, retrains), refused with 413 while streaming.
    max_json_bytes: int = 64 * 1024
    # The UI's feedback form: one field per component (thousands in a large cluster).
    max_form_bytes: int = 1024 * 1024
    # `?wait=true`: how long a request may wait for its diagnosis before answering 202.
    wait_timeout_s: float = 10.0
    # Uploaded bundles are kept this many days after their last upload (0 = forever).
    retention_days: float = 30.0
    # Model served: None = the registry's champion of `registered_model`; or a folder / models:/ URI.
    model_uri: str | None = None
    # How often the champion alias is checked for a move (seconds).
    model_poll_s: float = 30.0
    # Worker threads the API process runs on the embedded queue (0 = only separate workers). `vsandx
    # serve` sets it to 0 when it starts worker processes, unless it is given explicitly.
    embedded_workers: int = 1
    # Worker processes `vsandx serve` starts on the embedded queue (None = one per core, 0 = none).
    worker_processes: int | None = None
    # Idle embedded workers look for new jobs this often (seconds).
    poll_s: float = 0.02
    # A diagnosis is killed after this many seconds (Celery: soft limit 5 s earlier). Must stay below
    # the broker's visibility timeout and the lease, so a live job is never taken for a dead one.
    task_time_limit_s: float = 120.0
    # A diagnosis whose worker grows by more than this (resident MiB above what it held when the job
    # began) is failed with the reason and not retried; a worker process then exits and is replaced.
    job_memory_limit_mb: int = 1024
    # A running job whose worker went silent is picked up again after its lease expires.
    lease_s: float = 150.0
    # Redis visibility timeout: an unacknowledged Celery message is redelivered after this long.
    visibility_timeout_s: float = 3600.0
    # A job whose worker died this many times is failed instead of being retried again.
    max_attempts: int = 3
    # Retries (with exponential backoff) for transient errors only: database or broker hiccups.
    max_retries: int = 5
    # Engineer feedback: a retrain is queued once this many feedbacks no retrain used yet have come in
    # (0 = only on demand). It trains with the preset below (smoke | quick | full).
    retrain_min_feedback: int = 20
    retrain_preset: Literal["smoke", "quick", "full"] = "quick"
    # Share of feedback-labelled bundles (chosen by sha256) kept out of training to judge candidates on.
    retrain_feedback_holdout: float = 0.25
    # A queued or running retrain older than this no longer blocks a new one (its worker died).
    retrain_timeout_s: float = 3600.0
    # Housekeeping (bundle retention, the feedback retrain check: service.queue.housekeeping) this often. It
    # runs in the API process unless housekeeping_in_api is false; `vsandx beat` schedules it on Celery.
    housekeeping_s: float = 3600.0
    housekeeping_in_api: bool = True

    @field_validator("api_keys", mode="before")
    @classmethod
    def _split_keys(cls, v: object) -> object:
        if isinstance(v, str):
            return [k.strip() for k in v.split(",") if k.strip()]
        return v

    @property
    def sqlalchemy_url(self) -> str:
        return self.database_url or f"sqlite:///{self.data_dir / 'vsandx.db'}"

    @property
    def bundles_dir(self) -> Path:
        return self.data_dir / "bundles"


@lru_cache(maxsize=1)
def get_service_settings() -> ServiceSettings:
    return ServiceSettings()

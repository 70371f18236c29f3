"""Settings: environment variables prefixed VSANDX_ (and an optional .env)."""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

from pydantic_settings import BaseSettings, SettingsConfigDict


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="VSANDX_", env_file=".env", extra="ignore")

    # Every embedded default lives here: SQLite, MLflow store, uploads, cached datasets.
    data_dir: Path = Path("./var")
    # Simulator: worker processes (0 = one per core).
    sim_workers: int = 0
    # MLflow: tracking and registry URI (default: SQLite and an artifact folder under data_dir).
    mlflow_tracking_uri: str | None = None
    mlflow_experiment: str = "vsandx"
    registered_model: str = "vsandx-diagnoser"
    # Ray: an existing cluster to run sweeps on (like RAY_ADDRESS); None starts a local one.
    ray_address: str | None = None


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
    pipeline_grid_steps: int | None = None
    pipeline_max_step_s: int | None = None


@lru_cache(maxsize=1)
def get_pipeline_settings() -> PipelineSettings:
    return PipelineSettings()

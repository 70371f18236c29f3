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


@lru_cache(maxsize=1)
def get_settings() -> Settings:
    return Settings()


class PipelineSettings(BaseSettings):
    """Bundle reading limits and tensor grid (pipeline.config.PipelineConfig); env VSANDX_PIPELINE_*."""

    model_config = SettingsConfigDict(env_prefix="VSANDX_", env_file=".env", extra="ignore")

    pipeline_max_members: int = 50_000
    pipeline_max_member_bytes: int = 1024 * 1024 * 1024
    pipeline_max_total_bytes: int = 4096 * 1024 * 1024
    pipeline_max_ratio: float = 250.0
    pipeline_ratio_min_bytes: int = 64 * 1024 * 1024
    pipeline_max_depth: int = 2
    pipeline_max_name_len: int = 1024
    pipeline_max_header_bytes: int = 1024 * 1024
    pipeline_grid_steps: int = 180
    pipeline_max_step_s: int = 300


@lru_cache(maxsize=1)
def get_pipeline_settings() -> PipelineSettings:
    return PipelineSettings()

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

"""Engine and sessions. SQLite (default, under VSANDX_DATA_DIR) in WAL mode so API and workers share
it; PostgreSQL by URL. Migrations (alembic, service/store/migrations) run when the engine is first made."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from functools import lru_cache
from pathlib import Path
from typing import Any, TypeVar

from sqlalchemy import Engine, create_engine, event
from sqlalchemy.orm import Session, sessionmaker

from vsandx.settings import ServiceSettings

MIGRATIONS = Path(__file__).resolve().parent / "migrations"
T = TypeVar("T")


def make_engine(url: str, **kw: Any) -> Engine:
    if url.startswith("sqlite"):
        path = url.split("///", 1)[-1]
        if path and path != ":memory:":
            Path(path).parent.mkdir(parents=True, exist_ok=True)
        engine = create_engine(url, connect_args={"timeout": 30, "check_same_thread": False}, **kw)

        @event.listens_for(engine, "connect")
        def _pragmas(dbapi_conn: Any, _record: Any) -> None:
            cur = dbapi_conn.cursor()
            cur.execute("PRAGMA journal_mode=WAL")
            cur.execute("PRAGMA synchronous=NORMAL")
            cur.execute("PRAGMA foreign_keys=ON")
            cur.close()

        return engine
    return create_engine(url, pool_pre_ping=True, **kw)


def migrate(engine: Engine) -> None:
    """Bring the schema to the newest revision (idempotent; safe from several processes)."""
    from alembic import command
    from alembic.config import Config

    logging.getLogger("alembic").setLevel(logging.WARNING)

    cfg = Config()
    cfg.set_main_option("script_location", str(MIGRATIONS))
    with engine.begin() as conn:
        cfg.attributes["connection"] = conn
        command.upgrade(cfg, "head")


class Database:
    """One engine and its session factory, migrated on creation."""

    def __init__(self, url: str, run_migrations: bool = True, **engine_kw: Any) -> None:
        self.url = url
        self.engine = make_engine(url, **engine_kw)
        if run_migrations:
            migrate(self.engine)
        self.sessions = sessionmaker(self.engine, expire_on_commit=False)

    def session(self) -> Session:
        return self.sessions()

    def dispose(self) -> None:
        self.engine.dispose()


@lru_cache(maxsize=8)
def database_for(url: str) -> Database:
    return Database(url)


def get_database(settings: ServiceSettings) -> Database:
    return database_for(settings.sqlalchemy_url)


def session_scope(db: Database) -> Iterator[Session]:
    with db.session() as session:
        yield session


class Vanished(RuntimeError):
    """A row another writer created while this one tried to (an IntegrityError) is gone again."""


def raced(row: T | None, what: str) -> T:
    """The row a concurrent writer created first (looked up after the IntegrityError), or Vanished."""
    if row is None:
        raise Vanished(f"{what} was created concurrently and is gone again")
    return row

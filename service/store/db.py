"""Engine and sessions. SQLite (default, under VSANDX_DATA_DIR) in WAL mode so API and workers share
it; PostgreSQL by URL. Migrations (alembic, service/store/migrations) run when the engine is first made."""

from __future__ import annotations

import fcntl
import logging
from collections.abc import Iterator
from contextlib import contextmanager
from functools import lru_cache
from pathlib import Path
from typing import Any, TypeVar

from sqlalchemy import URL, Engine, create_engine, event, make_url
from sqlalchemy.orm import Session, sessionmaker

from vsandx.settings import ServiceSettings

MIGRATIONS = Path(__file__).resolve().parent / "migrations"
MIGRATION_LOCK_KEY = 0x7653414E  # PostgreSQL advisory lock held while one process migrates
T = TypeVar("T")


def _sqlite_path(url: str | URL) -> Path | None:
    """The file of a SQLite database URL (its query string apart); None for an in-memory one or another
    database."""
    u = make_url(url)
    return Path(u.database) if u.get_backend_name() == "sqlite" and u.database not in (None, "", ":memory:") else None


def make_engine(url: str, **kw: Any) -> Engine:
    u = make_url(url)
    if u.get_backend_name() == "sqlite":
        if (path := _sqlite_path(u)) is not None:
            path.parent.mkdir(parents=True, exist_ok=True)
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


@contextmanager
def _sqlite_migration_lock(url: URL) -> Iterator[None]:
    """An exclusive lock on a file beside the database while one process migrates it. pysqlite opens no
    transaction before a SELECT or a CREATE, so two processes starting on a new database (the API and
    its workers) both read "no revision" and the second CREATE TABLE failed ("table bundles already
    exists"); SQLite databases are local files, so a file lock orders them."""
    path = _sqlite_path(url)
    if path is None:
        yield
        return
    with open(path.with_name(path.name + ".migrate-lock"), "a+b") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def migrate(engine: Engine) -> None:
    """Bring the schema to the newest revision (idempotent; processes starting together on one database
    take turns: a file lock on SQLite, a transaction-scoped advisory lock on PostgreSQL)."""
    from alembic import command
    from alembic.config import Config

    logging.getLogger("alembic").setLevel(logging.WARNING)

    cfg = Config()
    cfg.set_main_option("script_location", str(MIGRATIONS))
    with _sqlite_migration_lock(engine.url), engine.begin() as conn:
        if engine.dialect.name == "postgresql":
            conn.exec_driver_sql(f"SELECT pg_advisory_xact_lock({MIGRATION_LOCK_KEY})")
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

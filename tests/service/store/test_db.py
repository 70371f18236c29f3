"""Processes starting together on a new database (the API and its workers under `make run`) migrate
it once between them: none fails on a table another has just created."""

from __future__ import annotations

import multiprocessing as mp
from pathlib import Path

import pytest
from sqlalchemy import inspect

from service.store.db import Database
from tests.service.kit import pg_schema

PROCESSES, ROUNDS = 6, 4


def _migrate(url: str, start: mp.synchronize.Barrier, errors: mp.Queue[str]) -> None:
    start.wait()  # every process past its imports: they reach the empty database together
    try:
        Database(url).dispose()
    except Exception as e:  # reported to the parent
        errors.put(f"{type(e).__name__}: {e}"[:300])


def _migrate_together(url: str) -> list[str]:
    ctx = mp.get_context("fork")
    start, errors = ctx.Barrier(PROCESSES), ctx.Queue()
    procs = [ctx.Process(target=_migrate, args=(url, start, errors)) for _ in range(PROCESSES)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(120)
    found = []
    while not errors.empty():
        found.append(errors.get())
    assert all(p.exitcode == 0 for p in procs)
    return found


def _tables(url: str) -> set[str]:
    db = Database(url, run_migrations=False)
    try:
        return set(inspect(db.engine).get_table_names())
    finally:
        db.dispose()


@pytest.mark.parametrize("round_", range(ROUNDS))
def test_processes_starting_together_on_a_new_sqlite_database(tmp_path: Path, round_: int) -> None:
    url = f"sqlite:///{tmp_path / 'var' / 'vsandx.db'}"
    assert _migrate_together(url) == []
    assert {"bundles", "jobs", "diagnoses", "alembic_version"} <= _tables(url)


def test_processes_starting_together_on_a_new_postgresql_schema() -> None:
    with pg_schema() as url:
        assert _migrate_together(url) == []
        assert {"bundles", "jobs", "diagnoses", "alembic_version"} <= _tables(url)


def test_the_migration_lock_sits_beside_the_database_file_only(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The lock (and the folder made for the database) follow the URL's file, not its text: a query
    string is no part of the name, and an in-memory database leaves no file in the working directory."""
    monkeypatch.chdir(tmp_path)
    Database("sqlite://").dispose()
    Database("sqlite:///var/vsandx.db?timeout=5").dispose()  # relative, as the default ./var is
    assert sorted(p.name for p in tmp_path.iterdir()) == ["var"]
    assert sorted(p.name for p in (tmp_path / "var").iterdir()) == ["vsandx.db", "vsandx.db.migrate-lock"]

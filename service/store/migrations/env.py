"""Alembic environment: run with a connection handed in by service.store.db.migrate, or a URL
(`alembic -x url=… upgrade head` with script_location = service/store/migrations)."""

from __future__ import annotations

from alembic import context
from sqlalchemy import Connection, create_engine

from service.store.tables import Base

config = context.config
target_metadata = Base.metadata


def _run(connection: Connection) -> None:
    context.configure(connection=connection, target_metadata=target_metadata, render_as_batch=True)
    with context.begin_transaction():
        context.run_migrations()


def run_migrations_online() -> None:
    connection = config.attributes.get("connection")
    if connection is not None:
        _run(connection)
        return
    url = context.get_x_argument(as_dictionary=True).get("url") or config.get_main_option("sqlalchemy.url")
    if not url:
        raise SystemExit("give the database: alembic -x url=sqlite:///var/vsandx.db upgrade head")
    with create_engine(url).connect() as conn:
        _run(conn)
        conn.commit()


if context.is_offline_mode():
    context.configure(url=config.get_main_option("sqlalchemy.url"), target_metadata=target_metadata)
    with context.begin_transaction():
        context.run_migrations()
else:
    run_migrations_online()

"""SQL backings of the two "did this happen already" records: `trackers.DeliveryLedger` (webhook
deliveries admitted) and `notify.SentLog` (emails and tracker comments that went out).

They work on any SQLAlchemy table with the columns named below, so the tables themselves live with
the service's other tables and migrations:

    webhook_deliveries: key String(80) primary key, source String(16), subject String(255) indexed,
                        event_time datetime (UTC), received_at datetime (UTC)
    sent_messages:      key String(255) primary key, sent_at datetime (UTC)

Uniqueness is the database's: a claim is an INSERT, and a duplicate key (a concurrent replay on
another worker) loses with an IntegrityError, which reads as "already there".
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime

from sqlalchemy import Table, delete, func, insert, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from service.trackers.base import Delivery


def _utc(t: datetime | None) -> datetime | None:
    if t is None:
        return None
    return t.replace(tzinfo=UTC) if t.tzinfo is None else t.astimezone(UTC)


class SqlDeliveryLedger:
    """trackers.DeliveryLedger on a `webhook_deliveries`-shaped table."""

    def __init__(self, sessions: Callable[[], Session], table: Table) -> None:
        self.sessions, self.t = sessions, table

    def seen(self, key: str) -> bool:
        with self.sessions() as db:
            return db.execute(select(self.t.c.key).where(self.t.c.key == key)).first() is not None

    def newest(self, subject: str) -> datetime | None:
        with self.sessions() as db:
            got = db.execute(select(func.max(self.t.c.event_time)).where(self.t.c.subject == subject)).scalar()
        return _utc(got)

    def claim(self, delivery: Delivery) -> bool:
        """Every key of the delivery in one transaction: all recorded, or none."""
        now = datetime.now(UTC)
        rows = [{"key": key, "source": delivery.source, "subject": delivery.subject, "event_time": delivery.time,
                 "received_at": now} for key in delivery.keys]  # fmt: skip
        with self.sessions() as db:
            try:
                for row in rows:
                    db.execute(insert(self.t).values(**row))
                db.commit()
            except IntegrityError:
                db.rollback()
                return False
        return True

    def forget(self, key: str) -> None:
        with self.sessions() as db:
            db.execute(delete(self.t).where(self.t.c.key == key))
            db.commit()


class SqlSentLog:
    """notify.SentLog on a `sent_messages`-shaped table (keys: Message-IDs and `comment:…` keys)."""

    def __init__(self, sessions: Callable[[], Session], table: Table) -> None:
        self.sessions, self.t = sessions, table

    def was_sent(self, key: str) -> bool:
        with self.sessions() as db:
            return db.execute(select(self.t.c.key).where(self.t.c.key == key)).first() is not None

    def mark_sent(self, key: str) -> None:
        with self.sessions() as db:
            try:
                db.execute(insert(self.t).values(key=key, sent_at=datetime.now(UTC)))
                db.commit()
            except IntegrityError:  # marked by a concurrent run: the fact is recorded either way
                db.rollback()

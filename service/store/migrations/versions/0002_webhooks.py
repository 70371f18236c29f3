"""Webhook deliveries and sent messages (bug-tracker webhooks, emailed reports).

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-23
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None

TS = sa.DateTime(timezone=True)


def upgrade() -> None:
    op.create_table(
        "webhook_deliveries",
        sa.Column("key", sa.String(80), primary_key=True),
        sa.Column("source", sa.String(16), nullable=False),
        sa.Column("subject", sa.String(255), nullable=False),
        sa.Column("event_time", TS, nullable=True),
        sa.Column("received_at", TS, nullable=False),
    )
    op.create_index("ix_webhook_deliveries_subject", "webhook_deliveries", ["subject"])
    op.create_table(
        "sent_messages",
        sa.Column("key", sa.String(512), primary_key=True),
        sa.Column("sent_at", TS, nullable=False),
    )


def downgrade() -> None:
    op.drop_table("sent_messages")
    op.drop_table("webhook_deliveries")

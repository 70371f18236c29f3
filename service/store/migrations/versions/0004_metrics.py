"""Histogram buckets that worker processes observe into (diagnosis latency, service.store.metric_store).

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-26
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "metric_buckets",
        sa.Column("metric", sa.String(64), primary_key=True),
        sa.Column("labels", sa.String(255), primary_key=True),
        sa.Column("le", sa.String(16), primary_key=True),
        sa.Column("count", sa.BigInteger(), nullable=False),
        sa.Column("total", sa.Float(), nullable=False),
    )


def downgrade() -> None:
    op.drop_table("metric_buckets")

"""Engineer feedback on diagnoses and the retrain decisions it leads to.

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-24
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None

TS = sa.DateTime(timezone=True)


def upgrade() -> None:
    op.create_table(
        "retrain_decisions",
        sa.Column("id", sa.Integer(), primary_key=True, autoincrement=True),
        sa.Column("trigger", sa.String(16), nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("requested_by", sa.String(255), nullable=True),
        sa.Column("feedback_count", sa.Integer(), nullable=False),
        sa.Column("champion_version", sa.String(64), nullable=True),
        sa.Column("candidate_version", sa.String(64), nullable=True),
        sa.Column("metrics", sa.JSON(), nullable=False),
        sa.Column("promoted", sa.Boolean(), nullable=True),
        sa.Column("reason", sa.Text(), nullable=True),
        sa.Column("mlflow_run_id", sa.String(64), nullable=True),
        sa.Column("error", sa.Text(), nullable=True),
        sa.Column("created_at", TS, nullable=False),
        sa.Column("started_at", TS, nullable=True),
        sa.Column("finished_at", TS, nullable=True),
    )
    op.create_index("ix_retrain_decisions_status", "retrain_decisions", ["status"])
    op.create_table(
        "feedback",
        sa.Column("id", sa.Integer(), primary_key=True, autoincrement=True),
        sa.Column("sha256", sa.String(64), sa.ForeignKey("bundles.sha256"), nullable=False),
        sa.Column("diagnosis_id", sa.Integer(), sa.ForeignKey("diagnoses.id"), nullable=False),
        sa.Column("author", sa.String(255), nullable=False),
        sa.Column("labels", sa.JSON(), nullable=False),
        sa.Column("comment", sa.Text(), nullable=True),
        sa.Column("created_at", TS, nullable=False),
        sa.Column("retrain_id", sa.Integer(), sa.ForeignKey("retrain_decisions.id"), nullable=True),
    )
    op.create_index("ix_feedback_sha256", "feedback", ["sha256"])
    op.create_index("ix_feedback_diagnosis_id", "feedback", ["diagnosis_id"])
    op.create_index("ix_feedback_created_at", "feedback", ["created_at"])
    op.create_index("ix_feedback_retrain_id", "feedback", ["retrain_id"])


def downgrade() -> None:
    op.drop_table("feedback")
    op.drop_table("retrain_decisions")

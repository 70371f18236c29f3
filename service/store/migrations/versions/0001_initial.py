"""Bundles, diagnoses, jobs.

Revision ID: 0001
Revises:
Create Date: 2026-11-22
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None

TS = sa.DateTime(timezone=True)


def upgrade() -> None:
    op.create_table(
        "bundles",
        sa.Column("sha256", sa.String(64), primary_key=True),
        sa.Column("size", sa.BigInteger(), nullable=False),
        sa.Column("filename", sa.String(255), nullable=False),
        sa.Column("first_seen", TS, nullable=False),
        sa.Column("last_seen", TS, nullable=False),
        sa.Column("purged_at", TS, nullable=True),
    )
    op.create_table(
        "diagnoses",
        sa.Column("id", sa.Integer(), primary_key=True, autoincrement=True),
        sa.Column("sha256", sa.String(64), sa.ForeignKey("bundles.sha256"), nullable=False),
        sa.Column("model_name", sa.String(255), nullable=False),
        sa.Column("model_version", sa.String(1024), nullable=False),
        sa.Column("faults", sa.Text(), nullable=False),
        sa.Column("document", sa.JSON(), nullable=False),
        sa.Column("created_at", TS, nullable=False),
        sa.UniqueConstraint("sha256", "model_name", "model_version", name="uq_diagnosis_bundle_model"),
    )
    op.create_index("ix_diagnoses_sha256", "diagnoses", ["sha256"])
    op.create_table(
        "jobs",
        sa.Column("id", sa.String(36), primary_key=True),
        sa.Column("kind", sa.String(16), nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("sha256", sa.String(64), sa.ForeignKey("bundles.sha256"), nullable=False),
        sa.Column("filename", sa.String(255), nullable=False),
        sa.Column("created_at", TS, nullable=False),
        sa.Column("started_at", TS, nullable=True),
        sa.Column("finished_at", TS, nullable=True),
        sa.Column("attempts", sa.Integer(), nullable=False),
        sa.Column("lease_owner", sa.String(255), nullable=True),
        sa.Column("lease_until", TS, nullable=True),
        sa.Column("error", sa.Text(), nullable=True),
        sa.Column("diagnosis_id", sa.Integer(), sa.ForeignKey("diagnoses.id"), nullable=True),
    )
    op.create_index("ix_jobs_queue", "jobs", ["kind", "status", "created_at"])
    op.create_index("ix_jobs_sha256", "jobs", ["sha256"])
    op.create_index("ix_jobs_created_at", "jobs", ["created_at"])
    op.create_index("ix_jobs_diagnosis_id", "jobs", ["diagnosis_id"])


def downgrade() -> None:
    op.drop_table("jobs")
    op.drop_table("diagnoses")
    op.drop_table("bundles")

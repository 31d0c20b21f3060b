"""Pre-images of approved writes, for undo (issue 15): pre_images.

Revision ID: 0003_pre_images
Revises: 0002_conversation_summaries
Create Date: 2026-12-02

A new table, empty at first: writes made before this revision have no pre-image, so they
cannot be undone (the undo says so). No existing row changes.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
import sqlmodel
from alembic import op

revision: str = "0003_pre_images"
down_revision: str | None = "0002_conversation_summaries"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "pre_images",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("audit_id", sa.Integer(), nullable=False),
        sa.Column("tool", sqlmodel.sql.sqltypes.AutoString(length=64), nullable=False),
        sa.Column("env_id", sqlmodel.sql.sqltypes.AutoString(length=64), nullable=True),
        sa.Column("kind", sqlmodel.sql.sqltypes.AutoString(length=16), nullable=False),
        sa.Column("object_id", sa.Integer(), nullable=True),
        sa.Column("object_uuid", sqlmodel.sql.sqltypes.AutoString(length=64), nullable=True),
        sa.Column("existed", sa.Boolean(), nullable=False),
        sa.Column("fields", sa.JSON(), nullable=True),
        sa.Column("bundle", sa.LargeBinary(), nullable=True),
        sa.Column("after", sa.JSON(), nullable=True),
        sa.Column("undone_by", sa.Integer(), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index("ix_pre_images_audit", "pre_images", ["audit_id"], unique=True)


def downgrade() -> None:
    op.drop_index("ix_pre_images_audit", table_name="pre_images")
    op.drop_table("pre_images")

"""A message counter on each conversation (issue 16 item 6): conversations.last_seq.

Revision ID: 0004_message_seq_counter
Revises: 0003_pre_images
Create Date: 2026-12-03

Messages were numbered `max(seq) + 1`, a read that two appenders could make at once (the
second then failed on the unique key). They are numbered from this counter now, bumped with
`UPDATE … RETURNING`. Existing conversations start from their newest message's seq.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0004_message_seq_counter"
down_revision: str | None = "0003_pre_images"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.add_column("conversations", sa.Column("last_seq", sa.Integer(), nullable=False,
                                             server_default="0"))
    op.execute("UPDATE conversations SET last_seq = COALESCE((SELECT max(messages.seq) FROM "
               "messages WHERE messages.conversation_id = conversations.id), 0)")


def downgrade() -> None:
    # Not a batch copy on SQLite: dropping the old table would cascade to every message.
    # SQLite has had DROP COLUMN since 3.35, as it has had RETURNING.
    op.drop_column("conversations", "last_seq")

"""Alembic environment: runs on the connection `storage.migrate` hands it.

`storage.migrate` opens the connection, takes the migration lock on it and begins the
transaction, so this file never builds an engine of its own and never reads a URL.
"""

from __future__ import annotations

from alembic import context
from sqlmodel import SQLModel

import storage  # noqa: F401  (registers every table on SQLModel.metadata)

connection = context.config.attributes["connection"]
context.configure(
    connection=connection,
    target_metadata=SQLModel.metadata,
    compare_type=True,
    # SQLite cannot ALTER most things in place; batch mode copies the table instead.
    render_as_batch=connection.dialect.name == "sqlite",
)
with context.begin_transaction():
    context.run_migrations()

"""Alembic revisions of the schema (`versions/`), run by `storage.migrate`.

`HEAD` names the newest revision so that a start on a database already there costs one
SELECT and no Alembic import; `tests/storage/test_migrations.py` checks it is the head.
"""

HEAD = "0004_message_seq_counter"

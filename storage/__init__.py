"""Persistence: SQLModel tables, the engine factory and repository functions.

Imports none of the app's other packages. Importing this package registers every table on
`SQLModel.metadata`, so `create_schema()` creates all of them.
"""

from storage.db import Database, make_engine
from storage import models  # noqa: F401  (registers the tables)
from storage import migrations_log  # noqa: F401  (registers migration_records)
from storage import side_models  # noqa: F401  (registers the side-question tables)
from storage import confirmation_models  # noqa: F401  (registers confirmations)
from storage import audit_models  # noqa: F401  (registers audit_log)

__all__ = ["Database", "make_engine"]

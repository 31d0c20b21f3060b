"""Persistence: SQLModel tables, the engine factory and repository functions.

Imports none of the app's other packages. Importing this package registers every table on
`SQLModel.metadata`, which the migrations are checked against (`storage.migrate`).
"""

from storage import (
    audit_models,  # noqa: F401  (registers audit_log)
    confirmation_models,  # noqa: F401  (registers confirmations)
    login_failures,  # noqa: F401  (registers login_failures)
    migrations_log,  # noqa: F401  (registers migration_records)
    models,  # noqa: F401  (registers the tables)
    pre_images,  # noqa: F401  (registers pre_images)
    prompt_summaries,  # noqa: F401  (registers conversation_summaries)
    run_leases,  # noqa: F401  (registers run_leases)
    side_models,  # noqa: F401  (registers the side-question tables)
)
from storage.db import Database, make_engine, off_loop, use_worker_threads

__all__ = ["Database", "make_engine", "off_loop", "use_worker_threads"]

"""`python -m storage upgrade|current|downgrade REVISION|revision MESSAGE`: migrations by hand.

The app upgrades at start on its own (`Database.create_schema`); this is for operators who
want to migrate before a deploy, see where a database is, or step back after a bad release.
The database is `DATABASE_URL`, with the app's default when it is unset.
"""

from __future__ import annotations

import argparse
import os
import sys

from storage import migrate
from storage.db import make_engine

DEFAULT_DATABASE_URL = "sqlite:///./data/agent.db"  # agent/settings.py's default


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m storage", description=__doc__.split("\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("upgrade", help="bring the schema to the newest revision")
    commands.add_parser("current", help="print the revision the database is at")
    down = commands.add_parser("downgrade", help="go back to REVISION ('base' drops every table)")
    down.add_argument("revision")
    new = commands.add_parser("revision", help="autogenerate the next revision from the models")
    new.add_argument("message")
    args = parser.parse_args(argv)
    if args.command == "revision":
        print(migrate.new_revision(args.message))
        return 0

    engine = make_engine(os.environ.get("DATABASE_URL") or DEFAULT_DATABASE_URL)
    try:
        if args.command == "upgrade":
            migrate.upgrade(engine)
        elif args.command == "downgrade":
            migrate.downgrade(engine, args.revision)
        at = migrate.current(engine)
        print(f"{at or 'none'} (head {migrate.head()})")
    finally:
        engine.dispose()
    return 0


if __name__ == "__main__":
    sys.exit(main())

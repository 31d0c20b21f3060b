"""Command line: `python -m superset_demo reset|serve|info [--db PATH]`.

`reset` re-seeds every demo environment; `serve` runs the demo alone over HTTP (uvicorn),
e.g. to point a real Superset client or curl at `http://127.0.0.1:8088/ss-dev`.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

from superset_demo.server import DemoSuperset


def _default_db() -> Path:
    return Path(os.environ.get("DATA_DIR", "./data")) / "demo_superset.db"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m superset_demo", description=__doc__)
    parser.add_argument("command", choices=["reset", "serve", "info"])
    parser.add_argument("--db", type=Path, default=_default_db())
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8088)
    args = parser.parse_args(argv)
    faults = json.loads(os.environ.get("DEMO_FAULTS") or "{}")
    demo = DemoSuperset(args.db, faults=faults)
    if args.command == "reset":
        demo.reset()
        print(f"re-seeded {', '.join(demo.environments)} in {args.db}")
    elif args.command == "info":
        print(json.dumps({"db": str(args.db), "environments": demo.environments,
                          "faults": demo.get_faults()}))
    else:
        import uvicorn

        uvicorn.run(demo.app, host=args.host, port=args.port, log_level="info")
    return 0


if __name__ == "__main__":
    sys.exit(main())

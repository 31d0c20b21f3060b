"""Every benchmark in turn, then one table of all their figures and bench/results/all.json.

    python bench/all.py [--short] [--only turn side] [--out-dir bench/results]

`--short` passes --short to each script (small counts, one round) and lets scripts share
server processes whose settings match: a check that everything runs and reports, for CI,
in a few minutes; its numbers are not worth quoting. Each script also writes its own JSON
into the output directory.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # `python bench/all.py`
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import Servers
from bench.report import RESULTS, format_rows, machine_load

SCRIPTS = ("startup", "turn", "side", "history", "concurrency", "memory")


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(prog="bench/all.py", description=__doc__.splitlines()[0])
    parser.add_argument("--short", action="store_true")
    parser.add_argument("--only", nargs="+", choices=SCRIPTS, default=list(SCRIPTS))
    parser.add_argument("--out-dir", type=Path, default=RESULTS)
    options = parser.parse_args(argv)
    combined: dict[str, Any] = {"short": options.short, "load_before": machine_load(),
                                "scripts": {}, "figures": {}}
    with Servers() if options.short else contextlib.nullcontext() as shared:
        for name in options.only:
            print(f"\n== bench/{name}.py", flush=True)
            script = importlib.import_module(f"bench.{name}")
            result = script.main([*(["--short"] if options.short else []),
                                  "--out", str(options.out_dir / f"{name}.json")],
                                 shared)
            combined["scripts"][name] = {key: result[key] for key in (
                "commit", "rounds", "extra", "load_before", "load_after")}
            combined["figures"].update(result["figures"])
    combined["load_after"] = machine_load()
    print("\n== all figures (median (min–max) over alternating rounds)")
    print("\n".join(format_rows(combined["figures"])))
    print(f"load: before {combined['load_before']['uptime']}\n"
          f"      after  {combined['load_after']['uptime']}")
    out = options.out_dir / "all.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(combined, indent=1, default=str))
    print(f"wrote {out}")
    return combined


if __name__ == "__main__":
    main()

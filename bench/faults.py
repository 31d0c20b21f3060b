"""Fault rounds: `python app.py` killed (-9, or SIGTERM with a write outlasting the 5 s grace)
while an approved write is in flight, behind the demo Superset's `hold_after_ms` fault (the
write lands, its answer is held), then started again as the same replica.

Each round checks what issue 12 asks: the call shows "status unknown — check Superset", the
audit has `approved`, `executing`, `executed (status unknown)`, the approval carries the
outcome, nothing is left `running`, and a second approval is refused (nothing runs twice).
Prints a table and writes bench/results/faults.json.

    python bench/faults.py [--rounds 10] [--signal kill|term|both]
"""

from __future__ import annotations

import argparse
import json
import signal
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.test_crash_records import (  # noqa: E402  (after the path setup)
    HOLD,
    App,
    _approve_a_delete_and_wait_until_it_landed,
)


def one_round(sig: int, pk: int) -> dict[str, object]:
    with tempfile.TemporaryDirectory() as tmp:
        app = App(Path(tmp))
        try:
            app.start(DEMO_FAULTS=json.dumps(HOLD))
            user = app.token("admin")
            conv, call_id, confirmation_id = _approve_a_delete_and_wait_until_it_landed(
                app, pk, user)
            started = time.monotonic()
            app.kill(sig)
            app.start()
            recovered_s = time.monotonic() - started
            (result,) = app.rows("SELECT content FROM messages WHERE tool_call_id=?", call_id)
            actions = [a for (a,) in app.rows("SELECT action FROM audit_log WHERE "
                                              "confirmation_id=? ORDER BY id", confirmation_id)]
            running = app.rows("SELECT 1 FROM runs WHERE status='running'")
            try:
                app.client().predict(conv, *user, confirmation_id, "approve",
                                     api_name="/confirm_tool")
                twice = True
            except Exception:
                twice = False
            return {"status_unknown": result[0].startswith("Error: status unknown"),
                    "audit": actions, "left_running": bool(running), "ran_twice": twice,
                    "restart_s": round(recovered_s, 1)}
        finally:
            app.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--signal", choices=["kill", "term", "both"], default="both")
    options = parser.parse_args()
    signals = {"kill": [signal.SIGKILL], "term": [signal.SIGTERM],
               "both": [signal.SIGKILL, signal.SIGTERM]}[options.signal]
    rows = []
    for sig in signals:
        for index in range(options.rounds):
            outcome = one_round(sig, pk=1 + index % 6)
            ok = (outcome["status_unknown"] and outcome["audit"] == [
                "approved", "executing", "executed"] and not outcome["left_running"]
                and not outcome["ran_twice"])
            rows.append({"signal": sig.name, "round": index + 1, "ok": ok, **outcome})
            print(f"{sig.name:8} round {index + 1:2}: {'ok ' if ok else 'BAD'} "
                  f"restart {outcome['restart_s']:5.1f} s  audit {outcome['audit']}")
    good = sum(row["ok"] for row in rows)
    print(f"\n{good}/{len(rows)} rounds with true records, nothing run twice")
    out = ROOT / "bench" / "results" / "faults.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"rounds": rows, "ok": good, "total": len(rows)}, indent=1))
    sys.exit(0 if good == len(rows) else 1)


if __name__ == "__main__":
    main()

"""Routing accuracy of the offline model over a set of cases (tests/agent/offline_heldout.py).

It uses only the app's public pieces (the tool catalog and selection, the system prompt,
truncation and `decide`), imported from whichever checkout is first on `sys.path`, so the
same cases measure another branch's brain:

    python tests/agent/offline_measure.py --code /path/to/other/checkout
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = ["Score", "judge", "measure"]


@dataclass
class Score:
    right: int = 0
    total: int = 0
    wrong: list[str] = field(default_factory=list)

    @property
    def accuracy(self) -> float:
        return self.right / self.total if self.total else 0.0


def _tools(role: str, page: str | None) -> list[dict[str, Any]]:
    from agent.tools.catalog import all_tools
    from agent.tools.registry import ToolRegistry, select_tools

    registry = ToolRegistry(all_tools())
    return [spec.openai_schema for spec in select_tools(registry, role=role, object_type=page)]


def _messages(case: Any) -> list[dict[str, Any]]:
    from agent.prompts import build_system_prompt
    from agent.truncation import truncate

    ctx = {"objectType": case.page, "objectId": case.object_id, "objectName": None,
           "envId": "ss-dev", "envTier": "dev", "role": case.role, "mode": "main"}
    history: list[dict[str, Any]] = []
    if case.after is not None:
        name, args, result = case.after
        history = [{"role": "user", "content": "earlier request"},
                   {"role": "assistant", "content": None, "tool_calls": [
                       {"id": "call_0", "type": "function",
                        "function": {"name": name, "arguments": json.dumps(args)}}]},
                   {"role": "tool", "tool_call_id": "call_0", "name": name,
                    "content": truncate(result, 4000)[0]},
                   {"role": "assistant", "content": "Here they are."}]
    return [{"role": "system", "content": build_system_prompt(ctx)}, *history,
            {"role": "user", "content": case.text}]


def judge(case: Any) -> tuple[bool, str]:
    """Whether the first step is right, and what it was."""
    from agent.offline.brain import decide

    decision = decide(_messages(case), _tools(case.role, case.page))
    if not decision.tool_calls:
        ok = case.tool is None and re.search(case.says, decision.text) is not None
        return ok, f"no call: {decision.text[:90]!r}"
    name, raw = decision.tool_calls[0]
    args = json.loads(raw)
    ok = name == case.tool and all(args.get(k) == v for k, v in case.args.items())
    return ok, f"{name} {args}"


def measure(cases: list[Any]) -> Score:
    score = Score()
    for case in cases:
        score.total += 1
        ok, got = judge(case)
        if ok:
            score.right += 1
        else:
            want = f"{case.tool} {case.args}" if case.tool else f"no call /{case.says}/"
            score.wrong.append(f"row {case.row} {case.text[:60]!r}: want {want}; got {got}")
    return score


def _load_cases() -> list[Any]:
    path = Path(__file__).with_name("offline_heldout.py")
    spec = importlib.util.spec_from_file_location("offline_heldout_cases", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses resolve their module by name
    spec.loader.exec_module(module)
    return module.CASES


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--code", default=str(Path(__file__).resolve().parents[2]),
                        help="the checkout whose agent/ package is measured")
    parser.add_argument("--quiet", action="store_true", help="only the score")
    options = parser.parse_args()
    sys.path.insert(0, options.code)
    score = measure(_load_cases())
    print(f"{options.code}: {score.right}/{score.total} = {score.accuracy:.1%}")
    if not options.quiet:
        for line in score.wrong:
            print("  " + line)


if __name__ == "__main__":
    main()

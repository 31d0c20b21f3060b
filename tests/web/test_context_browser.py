"""Chromium journeys of the page's object (issue 11, item 6): a bad link gives a notice
before anything is sent, the pill shows Superset's name, and the object follows its uuid
to another environment or is dropped with a notice. Every wait is on the DOM."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.web.conftest import LiveServer, sqlite_server
from tests.web.journey_support import VIEWPORTS, Watched

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def live_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    yield from sqlite_server(tmp_path_factory)


@pytest.mark.parametrize("query, says", [
    ("envId=qa", "qa"),
    ("objectType=chart&objectId=3", "objectType must be dashboard, dataset or migration"),
    ("objectType=dashboard&objectId=abc", "objectId"),
])
def test_a_bad_page_link_gives_a_notice_before_anything_is_sent(
        browser, live_server: LiveServer, query: str, says: str) -> None:  # type: ignore[no-untyped-def]
    """Issue 11, item 6: `?envId=qa` used to fill the selector and fail only when a tool ran;
    a bad object type or id was dropped without a word."""
    context = browser.new_context(viewport=VIEWPORTS["desktop"])
    page = context.new_page()
    page.goto(f"{live_server.agent_url}?{query}")
    notice = page.locator("#context-notice")
    notice.get_by_text("was not used as given").wait_for(timeout=60_000)
    assert says in notice.inner_text()
    env = page.locator("#env-select input").input_value()
    assert env != "qa" and env in {e.name for e in live_server.runtime.settings
                                   .superset_environments}
    context.close()


def test_a_good_page_link_gives_no_notice(browser, live_server: LiveServer) -> None:  # type: ignore[no-untyped-def]
    watched = Watched(browser, live_server, VIEWPORTS["desktop"],
                      "?objectType=dashboard&objectId=3&envId=prod")
    assert not watched.page.locator("#context-notice").is_visible()
    assert watched.page.locator("#env-select input").input_value() == "prod"
    watched.close("good-link")


def test_the_pill_shows_supersets_name_and_the_object_follows_its_uuid_across_envs(
        browser, live_server: LiveServer) -> None:  # type: ignore[no-untyped-def]
    """Issue 11, item 6: the link's objectName is anyone's text; Superset's name replaces
    it. Ids differ between environments, uuids do not: switching finds the same object by
    its uuid under another id (and says so), drops it where there is none (and says so),
    and switching back brings the original back."""
    store = live_server.runtime.demo_superset.store
    original = store.get("ss-dev", "dashboard", 3)
    title = original["dashboard_title"]
    twin = next((d for d in store.all("staging", "dashboard")
                 if d["uuid"] == original["uuid"]), None)  # an import may have put it there
    if twin is None:  # staging has it, under another id
        twin = store.put("staging", "dashboard", {**original, "id": 77})
    twin_id = twin["id"]
    assert twin_id != 3
    watched = Watched(browser, live_server, VIEWPORTS["desktop"],
                      "?objectType=dashboard&objectId=3&objectName=Wrong%20name&envId=ss-dev")
    page = watched.page
    pill = page.locator("#context-pill")
    notice = page.locator("#context-notice")
    pill.get_by_text(title).wait_for(timeout=30_000)
    assert "Wrong name" not in pill.inner_text()

    page.locator("#env-select input").click()
    page.get_by_role("option", name="staging", exact=True).click()
    notice.get_by_text(f"is #{twin_id} in staging").wait_for(timeout=30_000)
    page.wait_for_function("(id) => document.querySelector('#context-pill').innerText"
                           ".includes('#' + id)", arg=twin_id, timeout=30_000)
    assert title in pill.inner_text() and "#3 " not in pill.inner_text()

    page.locator("#env-select input").click()
    page.get_by_role("option", name="ss-dev", exact=True).click()
    page.wait_for_function("() => document.querySelector('#context-pill').innerText"
                           ".includes('#3')", timeout=30_000)
    notice.wait_for(state="hidden", timeout=30_000)
    watched.close("context-pill")


def test_switching_back_while_the_lookup_is_slow_still_ends_on_the_original(
        browser, live_server: LiveServer) -> None:  # type: ignore[no-untyped-def]
    """A person who switches to staging and straight back while staging's lookup is slow
    ends on dev's dashboard #3. Gradio's default trigger mode ("once") dropped the second
    lookup while the first was in flight, so the late answer from staging won: the pill
    showed staging's #77 under ss-dev, and a tool would have used the wrong id."""
    demo = live_server.runtime.demo_superset
    store = demo.store
    original = store.get("ss-dev", "dashboard", 3)
    twin = next((d for d in store.all("staging", "dashboard")
                 if d["uuid"] == original["uuid"]), None)
    twin_id = (twin or store.put("staging", "dashboard", {**original, "id": 77}))["id"]
    watched = Watched(browser, live_server, VIEWPORTS["desktop"],
                      "?objectType=dashboard&objectId=3&envId=ss-dev")
    page = watched.page
    page.locator("#context-pill").get_by_text(original["dashboard_title"]).wait_for(
        timeout=30_000)
    page.evaluate("""() => {  // every text the pill shows, in order
        const pill = document.querySelector('#context-pill');
        window.pillTexts = [pill.innerText];
        new MutationObserver(() => window.pillTexts.push(pill.innerText)).observe(
            pill, {subtree: true, childList: true, characterData: true});
    }""")
    demo.set_faults("staging", {"status": 502, "count": 0, "methods": ["GET"],
                                "latency_ms": 2_000})
    try:
        page.locator("#env-select input").click()
        page.get_by_role("option", name="staging", exact=True).click()
        page.locator("#env-select input").click()
        page.get_by_role("option", name="ss-dev", exact=True).click()
        # staging's slow answer arrives (its twin shows) and the later choice wins after it
        page.wait_for_function("""(twin) => {
            const texts = window.pillTexts;
            const at = texts.findIndex(t => t.includes('#' + twin + ' '));
            return at >= 0 && texts.slice(at + 1).some(t => t.includes('#3 '));
        }""", arg=twin_id, timeout=30_000)
    finally:
        demo.set_faults("staging", None)
    page.wait_for_function("() => document.querySelector('#context-pill').innerText"
                           ".includes('#3')", timeout=30_000)
    page.locator("#context-notice").wait_for(state="hidden", timeout=30_000)
    assert page.locator("#env-select input").input_value() == "ss-dev"
    watched.close("context-switch-back")


def test_an_object_with_no_twin_in_the_new_env_is_dropped_with_a_notice(
        browser, live_server: LiveServer) -> None:  # type: ignore[no-untyped-def]
    """Dashboard 12 is not in the demo's prod (no object with its uuid there)."""
    watched = Watched(browser, live_server, VIEWPORTS["desktop"],
                      "?objectType=dashboard&objectId=12&envId=ss-dev")
    page = watched.page
    pill = page.locator("#context-pill")
    page.wait_for_function("() => document.querySelector('#context-pill').innerText"
                           ".includes('#12')", timeout=30_000)
    page.locator("#env-select input").click()
    page.get_by_role("option", name="prod", exact=True).click()
    page.locator("#context-notice").get_by_text("prod has no dashboard with its uuid").wait_for(
        timeout=30_000)
    page.wait_for_function("() => { const t = document.querySelector('#context-pill')"
                           ".innerText; return t.includes('prod') && !t.includes('#12'); }",
                           timeout=30_000)
    assert "#12" not in pill.inner_text()
    watched.close("context-no-twin")


def test_an_object_missing_in_its_environment_gives_a_notice(
        browser, live_server: LiveServer) -> None:  # type: ignore[no-untyped-def]
    watched = Watched(browser, live_server, VIEWPORTS["desktop"],
                      "?objectType=dashboard&objectId=9999&envId=ss-dev")
    watched.page.locator("#context-notice").get_by_text("There is no dashboard #9999").wait_for(
        timeout=30_000)
    assert "#9999" not in watched.page.locator("#context-pill").inner_text()
    watched.close("context-missing")

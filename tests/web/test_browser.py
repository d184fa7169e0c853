"""A real headless browser plays one full deal of every game by clicking, and checks the deal-end scoring the
page shows against the engine's deal report.

Chromium and chromedriver come from the OS packages (``apt-get install chromium chromium-driver``; .ci/run
installs them); nothing is downloaded. Without them the test is skipped with the reason.
"""

from __future__ import annotations

import json
import random
import re
import time

import pytest

from kahve.scripts.web.tables import make_game

from tests.helpers import HANG_S

from .helpers import CHROMEDRIVER, CHROMIUM, chromium_driver, close_driver

pytest.importorskip("selenium", reason="the browser test drives Chromium with selenium (the test extra)")
if CHROMIUM is None or CHROMEDRIVER is None:
    pytest.skip("Chromium or chromedriver is not installed (apt-get install chromium chromium-driver)",
                allow_module_level=True)

from selenium.common.exceptions import StaleElementReferenceException  # noqa: E402
from selenium.webdriver.common.by import By  # noqa: E402

#: game, settings typed into the form, table seed, the special controls that must have been used
DEALS = [
    ("pasur", {}, 2, {"capture"}),
    ("pishti", {"players": "2"}, 1, {"card"}),
    ("pis_yedili", {"players": "2"}, 2, {"jack", "suit"}),
    ("pishe_pasha", {}, 1, {"place", "keep"}),
    ("ish", {"players": "3", "card_selection": "agent"}, 1, {"bet", "slot", "call"}),
]
#: the kinds of move a scripted person prefers when offered (at random among them), so that every special
#: control gets used
PREFER = ("suit", "capture", "jack", "place", "keep", "give", "slot", "call", "silent", "bet")


@pytest.fixture(scope="module")
def browser():
    driver = chromium_driver()
    driver.set_page_load_timeout(HANG_S)
    yield driver
    close_driver(driver)


def wait_state(driver, states, timeout=HANG_S):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        state = driver.execute_script("return document.body.dataset.state")
        if state in states:
            return state
        time.sleep(0.02)
    raise AssertionError(f"the page stayed in state {state!r} (waiting for {states})")


def wait_for(driver, script, *args):
    """Poll the page until ``script`` (JavaScript that returns a value, with ``args``) returns something truthy;
    an AssertionError naming it at the hang guard."""
    deadline = time.monotonic() + HANG_S
    while not driver.execute_script(script, *args):
        assert time.monotonic() < deadline, f"the page never answered true to: {script}"
        time.sleep(0.05)


def set_field(driver, name, value):
    driver.execute_script(
        """const e = document.getElementById('set-' + arguments[0]);
           if (e.type === 'checkbox') e.checked = arguments[1] === 'true';
           else if (e.tagName === 'SELECT')
             e.value = JSON.stringify(isNaN(arguments[1]) ? arguments[1] : Number(arguments[1]));
           else e.value = arguments[1];
           e.dispatchEvent(new Event('change'));""", name, value)


def start_table(driver, server, game, settings, seed, opponent="heuristic"):
    driver.get(f"{server.url}/static/cards.js")        # same origin, no page script: forget the last table
    driver.execute_script("sessionStorage.clear()")
    driver.get(f"{server.url}/?fast=1&seed={seed}&game={game}")
    wait_state(driver, ("setup",))
    for k, v in settings.items():
        set_field(driver, k, v)
    # the form is checked with the server as it changes; wait for the opponent list of this table
    players = make_game(game, {k: json.loads(v) if v.isdigit() else v for k, v in settings.items()}).num_players
    deadline = time.monotonic() + HANG_S
    while time.monotonic() < deadline:
        ok = driver.execute_script(
            "const s = document.getElementById('opponent-select');"
            "return !document.getElementById('start').disabled"
            " && [...s.options].some(o => o.value === arguments[0] && !o.disabled)"
            " && document.getElementById('seat-select').options.length === arguments[1];", opponent, players)
        if ok:
            break
        time.sleep(0.05)
    driver.execute_script("document.getElementById('opponent-select').value = arguments[0]", opponent)
    driver.find_element(By.ID, "start").click()
    return wait_state(driver, ("ready", "deal-end", "over"))


def click_a_move(driver, rng):
    moves = [m for m in driver.find_elements(By.CSS_SELECTOR, ".move:not(.inert)") if m.is_displayed()]
    assert moves, "the person is to move but the page shows no move"
    preferred = [m for m in moves if m.get_attribute("data-kind") in PREFER
                 and (m.get_attribute("data-kind") != "bet" or rng.random() < 0.3)
                 or (m.get_attribute("title") or "").startswith("play ")]    # a Pâsur card with a choice
    choice = rng.choice(preferred or moves)
    kind = choice.get_attribute("data-kind")
    choice.click()
    return kind


def engine_report(server, table_id):
    """The engine's report of the table's first deal, from a replay of its seed and actions."""
    table = server.manager.tables[table_id]
    st = table.game.new_state(table.seed)
    for a in table.actions:
        st.apply(a)
        if st.deals_completed:
            return st.deal_report, st
    raise AssertionError("the first deal has not ended")


def inert_everywhere_else(driver):
    """Only the legal moves react: no card outside the moves is clickable (the cursor tells)."""
    bad = driver.execute_script(
        "return [...document.querySelectorAll('#felt .card')].filter(e => !e.closest('.move')).filter("
        "e => getComputedStyle(e).cursor === 'pointer').length")
    assert bad == 0


@pytest.mark.parametrize("game, settings, seed, special", DEALS, ids=[d[0] for d in DEALS])
def test_a_full_deal_by_clicking(server, browser, game, settings, seed, special):
    rng = random.Random(seed)
    state = start_table(browser, server, game, settings, seed)
    table_id = browser.execute_script("return sessionStorage.getItem('kahve.table')")
    used = set()
    clicks = 0
    while state == "ready":
        inert_everywhere_else(browser)
        try:
            used.add(click_a_move(browser, rng))
        except StaleElementReferenceException:   # the page re-rendered under the click; look again
            pass
        clicks += 1
        assert clicks < 400, "the deal did not end"
        state = wait_state(browser, ("ready", "deal-end", "over"))
    assert state == "deal-end", f"the page ended in state {state!r} without showing the deal's scoring"
    assert special <= used, f"{game}: the controls {special - used} were not used"
    # issue 58: behind the scoring, the table is still the deal that ended, not the next one
    head = browser.find_element(By.CSS_SELECTOR, "#scoreboard .score-head").text
    assert re.search(r"(deal|round) 1\b", head), head

    report, st = engine_report(server, table_id)
    n = st.num_players
    shown_keys = set()
    for td in browser.find_elements(By.CSS_SELECTOR, "#breakdown td[data-key]"):
        key, seat = td.get_attribute("data-key"), int(td.get_attribute("data-seat"))
        value = json.loads(td.get_attribute("data-value"))
        assert value == report["breakdown"][key][seat], (key, seat)
        if isinstance(value, int) and not isinstance(value, bool):
            assert td.text == str(value)
        shown_keys.add(key)
    for fact in browser.find_elements(By.CSS_SELECTOR, "#deal-facts .fact"):
        key = fact.get_attribute("data-key")
        assert json.loads(fact.get_attribute("data-value")) == report["breakdown"][key]
        shown_keys.add(key)
    assert shown_keys == set(report["breakdown"]), "every part of the breakdown is shown"
    points = [json.loads(td.get_attribute("data-value"))
              for td in browser.find_elements(By.CSS_SELECTOR, "#deal-points td")]
    totals = [json.loads(td.get_attribute("data-value"))
              for td in browser.find_elements(By.CSS_SELECTOR, "#deal-scores td")]
    assert points == report["deal_points"] and totals == report["scores"] and len(points) == n
    assert [td.text for td in browser.find_elements(By.CSS_SELECTOR, "#deal-points td")] == [str(p) for p in points]

    # every move of every seat was shown: the log lists the engine's move log, as this seat sees it
    browser.find_element(By.ID, "deal-continue").click()
    state = wait_state(browser, ("ready", "over"))
    table = server.manager.tables[table_id]
    logged = browser.execute_script(
        "return [...document.querySelectorAll('#log li')].map(li => li.textContent)")
    texts = table.state.move_texts(table.seat)
    assert len(logged) == len(texts)
    if state == "over":
        assert browser.find_element(By.ID, "match-end").is_displayed()
        assert browser.find_element(By.ID, "match-result").text == table.view()["result"]
    errors = [e for e in browser.get_log("browser") if e["level"] == "SEVERE"]
    assert not errors, errors[:5]          # no script error, nothing the page's content policy refused


def test_match_end_new_match_and_record(server, browser, tmp_path):
    """Pishe Pasha is one deal: the match ends, the result is shown, the record downloads (and replays), and
    "new match" deals a fresh table."""
    import httpx

    from kahve.agents.evaluation.records import load_records

    rng = random.Random(7)
    state = start_table(browser, server, "pishe_pasha", {"max_turns": "40"}, 7, opponent="random")
    while state in ("ready", "deal-end"):
        if state == "deal-end":
            browser.find_element(By.ID, "deal-continue").click()
        else:
            click_a_move(browser, rng)
        state = wait_state(browser, ("ready", "deal-end", "over"))
    assert state == "over"
    assert browser.find_element(By.ID, "match-end").is_displayed()
    link = browser.find_element(By.ID, "match-record").get_attribute("href")
    cookies = {c["name"]: c["value"] for c in browser.get_cookies()}
    r = httpx.get(link, cookies=cookies)
    assert r.status_code == 200 and "attachment" in r.headers["content-disposition"]
    path = tmp_path / "match.jsonl"
    path.write_text(r.text)
    record = load_records(str(path))[0]            # what `kahve replay` reads: validated and replayed
    assert record["game"] == "pishe_pasha" and record["players"][0] == "you"
    # without the browser's session cookie the record is not there
    assert httpx.get(link).status_code == 404
    old = browser.execute_script("return sessionStorage.getItem('kahve.table')")
    before = len(server.manager.tables[old].actions)
    browser.find_element(By.ID, "match-new").click()
    wait_state(browser, ("ready", "over", "deal-end"))
    assert not browser.find_element(By.ID, "match-end").is_displayed()
    fresh = server.manager.tables[old]
    assert fresh.state.deals_completed == 0 and fresh.state.current_player is not None and len(fresh.actions) < before


def test_a_reload_resumes_the_table(server, browser):
    state = start_table(browser, server, "pishti", {"players": "2"}, 3)
    assert state == "ready"
    hand = [c.get_attribute("data-card") for c in browser.find_elements(By.CSS_SELECTOR, "#hand .card")]
    log = len(browser.find_elements(By.CSS_SELECTOR, "#log li"))
    browser.refresh()
    assert wait_state(browser, ("ready",)) == "ready"
    assert [c.get_attribute("data-card") for c in browser.find_elements(By.CSS_SELECTOR, "#hand .card")] == hand
    assert len(browser.find_elements(By.CSS_SELECTOR, "#log li")) == log


# ----- issue 58: playing as a person would -------------------------------------------------------------------------
#: words of developers that the page must never show a player
DEV_WORDS = re.compile(r"target_score|game_end_penalty|skip_single_choice|episode|\b(PY|PA|PI|PP|IS|C)-\d+\b|"
                       r"ismcts|heuristic|\bppo\b|\bdqn\b")


def fresh_page(browser, server, query: str) -> None:
    """The setup page in a new browser session (no table to go back to)."""
    browser.get(f"{server.url}/static/cards.js")
    browser.execute_script("sessionStorage.clear()")
    browser.delete_all_cookies()
    browser.get(f"{server.url}/?{query}")


def guide_text(browser, expected: str) -> str:
    """The guide panel's text once it holds ``expected`` (the page fetches the guide after the click; a busy
    machine answers later), or what it holds after the hang guard."""
    deadline = time.monotonic() + HANG_S
    while True:
        text = browser.find_element(By.ID, "rules-body").text
        if expected in text or time.monotonic() > deadline:
            return text
        time.sleep(0.1)


def test_the_guide_is_there_at_any_moment_in_player_words(server, browser):
    fresh_page(browser, server, "fast=1&game=pis_yedili")
    wait_state(browser, ("setup",))
    set_field(browser, "ten_rule", "reverse")
    # the guide sends the form's settings once the page's settings check has answered (before: none), which a
    # busy machine may take longer than any fixed pause to do
    wait_for(browser, "return !!(S.check && S.check.valid)")
    browser.find_element(By.ID, "rules-btn").click()
    rules = browser.find_element(By.ID, "rules")
    assert rules.is_displayed()
    body = guide_text(browser, "Scoring")
    assert "Scoring" in body and "House settings in force" in body and "reverses the direction of play" in body
    assert "Pis Yedili" in browser.find_element(By.ID, "rules-title").text
    page = browser.execute_script("return document.body.innerText")
    assert not DEV_WORDS.search(page), DEV_WORDS.search(page).group(0)
    assert not browser.find_elements(By.CSS_SELECTOR, "#setup code")
    browser.find_element(By.ID, "rules-close").click()
    assert not rules.is_displayed()
    # at the table, in the middle of a deal: the table's own settings
    state = start_table(browser, server, "pasur", {"target_score": "101"}, 4)
    assert state == "ready"
    browser.find_element(By.ID, "rules-btn").click()
    body = guide_text(browser, "101 points")
    assert "101 points" in body and "Turn" in body
    page = browser.execute_script("return document.body.innerText")
    assert not DEV_WORDS.search(page), DEV_WORDS.search(page).group(0)
    browser.find_element(By.TAG_NAME, "body").send_keys("\ue00c")        # Escape closes it
    assert not browser.find_element(By.ID, "rules").is_displayed()
    # Pâsur: what each card would take is written under it (no hover on a touch screen)
    captions = browser.execute_script(
        "return [...document.querySelectorAll('#hand .hand-slot')].map(s => [s.querySelector('.card').title,"
        " s.querySelector('.move-caption').textContent])")
    table = server.manager.tables[browser.execute_script("return sessionStorage.getItem('kahve.table')")]
    texts = {m["text"] for m in table.view()["moves"]}
    assert captions and len(captions) == len(texts)
    for title, caption in captions:
        assert title in texts
        assert caption.replace("♣", "C").replace("♦", "D").replace("♥", "H").replace("♠", "S").replace("10", "T") \
            in title or caption == "takes: you choose" and title.startswith("play ")


def test_a_running_match_is_never_lost_by_one_click(server, browser):
    state = start_table(browser, server, "pishti", {"players": "2"}, 5)
    assert state == "ready"
    tid = browser.execute_script("return sessionStorage.getItem('kahve.table')")
    assert f"table={tid}" in browser.current_url                  # the address leads back to the table
    step = server.manager.tables[tid].view()["step"]
    # "New match" asks first; "Keep playing" keeps it
    browser.find_element(By.ID, "new-match").click()
    assert browser.find_element(By.ID, "confirm").is_displayed()
    assert "will be lost" in browser.find_element(By.ID, "confirm-text").text
    browser.find_element(By.ID, "confirm-no").click()
    assert not browser.find_element(By.ID, "confirm").is_displayed()
    assert server.manager.tables[tid].view()["step"] == step and wait_state(browser, ("ready",)) == "ready"
    # another game: the match stays, listed on the setup page, and comes back with one click
    browser.find_element(By.ID, "to-setup").click()
    wait_state(browser, ("setup",))
    wait_for(browser, "return !!document.querySelector(arguments[0])",
             f'#table-list li[data-table="{tid}"] button.resume')
    browser.find_element(By.CSS_SELECTOR, f'#table-list li[data-table="{tid}"] button.resume').click()
    assert wait_state(browser, ("ready",)) == "ready"
    assert browser.execute_script("return sessionStorage.getItem('kahve.table')") == tid
    # a new tab (nothing in its session storage) with the table's address finds it too
    url = browser.current_url
    browser.get(f"{server.url}/static/cards.js")
    browser.execute_script("sessionStorage.clear()")
    browser.get(url)
    assert wait_state(browser, ("ready",)) == "ready"
    assert browser.execute_script("return sessionStorage.getItem('kahve.table')") == tid
    # and a confirmed "New match" does start a new one
    browser.find_element(By.ID, "new-match").click()
    browser.find_element(By.ID, "confirm-yes").click()
    wait_state(browser, ("ready", "deal-end", "over"))
    assert server.manager.tables[tid].view()["step"] < step + 2 and len(server.manager.tables[tid].actions) <= 1


def test_the_page_says_when_the_bots_are_thinking(server, browser):
    fresh_page(browser, server, "fast=1&seed=3&game=pis_yedili")
    wait_state(browser, ("setup",))
    set_field(browser, "players", "3")
    wait_for(browser, "return document.getElementById('seat-select').options.length === 3")
    browser.execute_script("document.getElementById('opponent-select').value = 'ismcts:400'")
    # one click opens one table: the button is disabled at once, and says it is working
    started = browser.execute_script("const b = document.getElementById('start'); b.click();"
                                     "return [b.disabled, b.textContent]")
    assert started[0] and "Opening the table" in started[1]
    state = wait_state(browser, ("ready", "deal-end", "over"))
    assert not browser.find_element(By.ID, "start").get_attribute("disabled") or state != "setup"
    rng = random.Random(3)
    seen = set()
    for _ in range(6):
        if state != "ready":
            break
        click_a_move(browser, rng)
        while True:                                   # until the answer: the thinking line counts the time
            info = browser.execute_script(
                "return [document.body.dataset.state, document.body.dataset.thinking || '',"
                " document.getElementById('thinking').hidden, document.getElementById('thinking-time').textContent,"
                " document.getElementById('thinking-text').textContent]")
            if info[1]:
                assert not info[2] and re.fullmatch(r"\d+\.\d s", info[3]) and "thinking" in info[4]
                seen.add(info[3])
            if info[0] != "busy":
                break
            time.sleep(0.05)
        state = wait_state(browser, ("ready", "deal-end", "over"))
    assert len(seen) >= 2, "the thinking line was shown, with the time running"
    assert browser.find_element(By.ID, "thinking").get_attribute("hidden") is not None


def test_pishti_for_two_has_no_partnerships_and_a_small_screen_keeps_the_scores_beside(server, browser):
    fresh_page(browser, server, "fast=1&game=pishti")
    wait_state(browser, ("setup",))
    set_field(browser, "players", "2")
    wait_for(browser, "return document.getElementById('set-partnerships').disabled")
    assert not browser.find_element(By.ID, "set-partnerships").is_selected()
    browser.set_window_size(1024, 700)
    try:
        state = start_table(browser, server, "pasur", {}, 2)
        assert state == "ready"
        felt = browser.find_element(By.ID, "felt").rect
        side = browser.find_element(By.ID, "side").rect
        assert side["x"] >= felt["x"] + felt["width"] - 1, "the score panel is beside the table at 1024 pixels"
    finally:
        browser.set_window_size(1400, 1000)


def test_ish_slots_never_overlap(server, browser):
    state = start_table(browser, server, "ish", {"players": "4", "card_selection": "agent"}, 3)
    rng = random.Random(3)
    while state == "ready" and not browser.find_elements(By.CSS_SELECTOR, '#slots .move[data-kind="slot"]'):
        click_a_move(browser, rng)
        state = wait_state(browser, ("ready", "deal-end", "over"))
    rects = browser.execute_script("return [...document.querySelectorAll('#slots .slot')].map(e => {"
                                   "const r = e.getBoundingClientRect(); return [r.left, r.top, r.right, r.bottom]})")
    assert len(rects) == 40
    for i, a in enumerate(rects):
        for b in rects[i + 1:]:
            assert a[2] <= b[0] + 0.5 or b[2] <= a[0] + 0.5 or a[3] <= b[1] + 0.5 or b[3] <= a[1] + 0.5, (a, b)
    assert "take a face-down card" in browser.find_element(By.ID, "ish-center").text.lower()


def test_the_form_starts_on_the_trained_bot_where_one_fits(server, browser, monkeypatch, tmp_path):
    """The setup form pre-selects the game's trained bot (medium) where one fits the table and the rule-based
    player elsewhere, following the table as it changes; a pick of the person's own stays."""
    from kahve.scripts.web import tables
    from tests.scripts.test_play_default import ship_only
    ship_only(monkeypatch, tmp_path, "pishti/ppo_2p", "pasur/ppo")      # no bot for 4 Pişti players, however many ship
    monkeypatch.setattr(tables, "_LEVELS_OK", {})
    browser.get(f"{server.url}/static/cards.js")
    browser.execute_script("localStorage.clear()")            # no pick kept from an earlier test's match

    def selected(players: int, expected: str) -> None:
        deadline = time.monotonic() + HANG_S
        while True:
            value, seats = browser.execute_script(
                "return [document.getElementById('opponent-select').value,"
                " document.getElementById('seat-select').options.length]")
            if (value, seats) == (expected, players) or time.monotonic() > deadline:
                break
            time.sleep(0.05)
        assert (value, seats) == (expected, players)

    fresh_page(browser, server, "fast=1&game=pishti")
    wait_state(browser, ("setup",))
    selected(4, "heuristic")                                  # Pişti's default table: no trained bot fits
    set_field(browser, "players", "2")
    selected(2, "medium")
    set_field(browser, "players", "4")
    selected(4, "heuristic")
    browser.execute_script("document.getElementById('opponent-select').value = 'random'")
    set_field(browser, "players", "2")
    selected(2, "random")
    fresh_page(browser, server, "fast=1&game=pasur")
    wait_state(browser, ("setup",))
    selected(2, "medium")

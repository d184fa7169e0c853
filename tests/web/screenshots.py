"""Screenshots of the web table for the README: ``python -m tests.web.screenshots [OUT_DIR]``.

Starts the server, plays each game in headless Chromium to an interesting moment of a deal (a Pâsur capture
to choose, a Pis Yedili jack's suit to name, a Pishe Pasha card to place or keep, an Ish call), and writes
``web_<game>.png`` (default: docs/images/); then the "how to play" panel at a Pâsur table (``web_rules.png``) and
the page while a searching opponent thinks (``web_thinking.png``). Needs the web extra, selenium, chromium and
chromium-driver.
"""

from __future__ import annotations

import random
import sys
import time
from pathlib import Path

from selenium.webdriver.common.by import By

from .helpers import LiveServer, chromium_driver, close_driver
from .test_browser import set_field, wait_state

ROOT = Path(__file__).resolve().parents[2]

#: game, form settings, seed, the move kind to stop at (or a click count), then what to do there, the opponent and
#: the file's name (default web_<game>.png)
SHOTS = [
    ("pishti", {"players": "4"}, 5, 9, None, "heuristic", None),
    ("pasur", {}, 2, "capture", None, "heuristic", None),
    ("pis_yedili", {"players": "3"}, 2, "jack", "open-picker", "heuristic", None),
    ("pishe_pasha", {}, 1, "place", None, "heuristic", None),
    ("ish", {"players": "4"}, 3, "call", None, "heuristic", None),
    ("pasur", {}, 4, 3, "rules", "heuristic", "web_rules.png"),
    ("pis_yedili", {"players": "4"}, 6, 2, "thinking", "ismcts:400", "web_thinking.png"),
]


def shoot(driver, url, game, settings, seed, stop, action, opponent, name, out: Path) -> None:
    driver.get(f"{url}/static/cards.js")
    driver.execute_script("sessionStorage.clear(); localStorage.clear()")
    driver.delete_all_cookies()                          # a new browser session: no list of earlier tables
    # not ?fast=1 for the thinking shot: the page then waits a moment before it says so, as for a person
    driver.get(f"{url}/?{'' if action == 'thinking' else 'fast=1&'}seed={seed}&game={game}")
    wait_state(driver, ("setup",))
    for k, v in settings.items():
        set_field(driver, k, v)
    time.sleep(0.6)
    driver.execute_script("document.getElementById('opponent-select').value = arguments[0]", opponent)
    driver.find_element(By.ID, "start").click()
    rng = random.Random(seed)
    clicks = 0
    while True:
        state = wait_state(driver, ("ready", "deal-end", "over"))
        if state == "deal-end":
            driver.find_element(By.ID, "deal-continue").click()
            continue
        moves = [m for m in driver.find_elements(By.CSS_SELECTOR, ".move") if m.is_displayed()]
        kinds = [m.get_attribute("data-kind") for m in moves]
        if (isinstance(stop, int) and clicks >= stop) or stop in kinds:
            break
        safe = [m for m in moves if m.get_attribute("data-kind") not in ("jack",)] or moves
        rng.choice(safe).click()
        clicks += 1
        assert clicks < 300, f"{game}: no {stop!r} moment"
    if action == "open-picker":
        driver.find_element(By.CSS_SELECTOR, '.move[data-kind="jack"]').click()
    if action == "rules":
        driver.find_element(By.ID, "rules-btn").click()
    if action == "thinking":                             # a move, then the page while the bots search
        moves = [m for m in driver.find_elements(By.CSS_SELECTOR, ".move") if m.is_displayed()]
        safe = [m for m in moves if m.get_attribute("data-kind") not in ("jack",)] or moves
        rng.choice(safe).click()
        while not driver.execute_script("return !document.getElementById('thinking').hidden && "
                                        "parseFloat(document.getElementById('thinking-time').textContent) >= 1.2"):
            assert driver.execute_script("return document.body.dataset.state") == "busy", "the bots answered at once"
            time.sleep(0.05)
    else:
        driver.execute_script("document.getElementById('log').scrollTop = 1e6; window.scrollTo(0, 0)")
    time.sleep(0.3)
    path = out / (name or f"web_{game}.png")
    driver.save_screenshot(str(path))
    try:                                   # 128 colours: a quarter of the size, no visible change
        from PIL import Image
        Image.open(path).convert("RGB").quantize(colors=128, method=Image.Quantize.MEDIANCUT,
                                                 dither=Image.Dither.NONE).save(path, optimize=True)
    except ImportError:
        pass
    print("wrote", path)


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    out = Path(argv[0]) if argv else ROOT / "docs" / "images"
    out.mkdir(parents=True, exist_ok=True)
    with LiveServer() as srv:
        driver = chromium_driver(1440, 1000)
        try:
            for shot in SHOTS:
                shoot(driver, srv.url, *shot, out)
        finally:
            close_driver(driver)
    return 0


if __name__ == "__main__":
    sys.exit(main())

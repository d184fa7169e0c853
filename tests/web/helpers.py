"""Shared tools of the web-table tests: a live server on a free localhost port, a headless Chromium."""

from __future__ import annotations

import os
import shutil
import socket
import tempfile
import threading
import time

from tests.helpers import HANG_S

CHROMIUM = next((p for p in ("/usr/bin/chromium", "/usr/bin/chromium-browser") if os.path.exists(p)), None)
CHROMEDRIVER = shutil.which("chromedriver") or ("/usr/bin/chromedriver" if os.path.exists("/usr/bin/chromedriver")
                                                else None)
#: flags for a headless Chromium on a closed network (no background connections, a fresh profile)
CHROMIUM_FLAGS = ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update", "--disable-sync",
                  "--disable-dev-shm-usage", "--disable-extensions", "--disable-default-apps",
                  "--password-store=basic", "--mute-audio")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class LiveServer:
    """``kahve serve``'s app under uvicorn in a background thread, on 127.0.0.1 and a free port."""

    def __init__(self, app=None, **manager_args):
        import uvicorn

        from kahve.scripts.web.app import create_app
        from kahve.scripts.web.tables import TableManager
        self.manager = TableManager(**manager_args)
        self.app = app or create_app(self.manager, allowed_hosts=["127.0.0.1", "localhost"])
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        config = uvicorn.Config(self.app, host="127.0.0.1", port=self.port, log_level="warning",
                                lifespan="off", access_log=False)
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, daemon=True)

    def __enter__(self) -> "LiveServer":
        self.thread.start()
        deadline = time.monotonic() + HANG_S
        while not self.server.started:
            if time.monotonic() > deadline or not self.thread.is_alive():
                raise RuntimeError("the test server did not start")
            time.sleep(0.02)
        return self

    def __exit__(self, *exc) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=10)          # not a limit: a daemon thread; the test has its result


def chromium_driver(width: int = 1400, height: int = 1000):
    """A Selenium driver of the OS's headless Chromium and chromedriver (nothing downloaded), with a fresh
    profile; ``None`` when they are not installed."""
    if CHROMIUM is None or CHROMEDRIVER is None:
        return None
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service
    opts = webdriver.ChromeOptions()
    opts.binary_location = CHROMIUM
    profile = tempfile.mkdtemp(prefix="kahve-chromium-")
    for flag in CHROMIUM_FLAGS:
        opts.add_argument(flag)
    opts.add_argument(f"--user-data-dir={profile}")
    opts.add_argument(f"--window-size={width},{height}")
    opts.set_capability("goog:loggingPrefs", {"browser": "ALL"})     # the page's console, for the tests
    driver = webdriver.Chrome(service=Service(executable_path=CHROMEDRIVER), options=opts)
    driver._kahve_profile = profile
    return driver


def close_driver(driver) -> None:
    try:
        driver.quit()
    finally:
        shutil.rmtree(getattr(driver, "_kahve_profile", ""), ignore_errors=True)

"""End to end in real headless Chromium: the service runs (uvicorn, embedded defaults, a small model),
the browser uploads a simulated bundle through the upload page, follows the progress to the diagnosis
page, reads the verdicts and charts there, and corrects a verdict through the feedback form. Skipped
locally without Chromium, a failure under CI."""

from __future__ import annotations

import json
import os
import shutil
import socket
import threading
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from service.app import create_app
from tests.conftest import require
from tests.service.kit import service_settings

# The upload page's status line, recorded across the navigation that follows (sessionStorage survives it).
RECORD_STAGES = """
const stage = document.getElementById("stage");
sessionStorage.setItem("stages", "[]");
new MutationObserver(function () {
  const seen = JSON.parse(sessionStorage.getItem("stages"));
  seen.push(stage.textContent);
  sessionStorage.setItem("stages", JSON.stringify(seen));
}).observe(stage, {childList: true, characterData: true, subtree: true});
"""


# The elements that reach past the viewport's right edge (for a failure's message).
WIDER = """
function clipped(e) {  // inside a box that scrolls or clips sideways
  for (let a = e.parentElement; a && a !== document.body; a = a.parentElement) {
    if (getComputedStyle(a).overflowX !== "visible") return true;
  }
  return false;
}
return Array.from(document.querySelectorAll("body *")).filter(function (e) {
  return e.getBoundingClientRect().right > window.innerWidth + 0.5 && !clipped(e);
}).slice(0, 8).map(function (e) {
  return e.tagName + "." + e.className + "#" + e.id + " " + Math.round(e.getBoundingClientRect().right);
});
"""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


@contextmanager
def serving(app: Any) -> Iterator[str]:
    """`app` served by uvicorn in a thread of this process on a free port: its base URL."""
    import uvicorn

    port = _free_port()
    srv = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    t = threading.Thread(target=srv.run, name="uvicorn", daemon=True)
    t.start()
    deadline = time.monotonic() + 30
    while not srv.started:
        assert t.is_alive() and time.monotonic() < deadline, "the service did not start"
        time.sleep(0.05)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        srv.should_exit = True
        t.join(15)


@pytest.fixture
def server(tmp_path: Path, model_dir: Path) -> Iterator[str]:
    with serving(create_app(service_settings(tmp_path / "var", model_dir))) as url:
        yield url


@pytest.fixture
def browser() -> Iterator[Any]:
    require("Chromium", bool(shutil.which("chromium") and shutil.which("chromedriver")),
            "apt-get install -y chromium chromium-driver")  # fmt: skip
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    opts = webdriver.ChromeOptions()
    opts.binary_location = shutil.which("chromium") or "/usr/bin/chromium"
    for arg in ("--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                "--window-size=1366,768"):  # fmt: skip
        opts.add_argument(arg)
    driver = webdriver.Chrome(service=Service(executable_path=shutil.which("chromedriver")), options=opts)
    driver.set_page_load_timeout(30)
    try:
        yield driver
    finally:
        driver.quit()


def _shot(driver: Any, name: str) -> None:
    """Screenshots for people checking the layout: VSANDX_UI_SCREENSHOTS=<folder>."""
    folder = os.environ.get("VSANDX_UI_SCREENSHOTS")
    if folder:
        driver.save_screenshot(str(Path(folder) / f"ui-{name}.png"))


def test_upload_a_bundle_and_read_the_verdict(server: str, browser: Any, bundles: list[Path], tmp_path: Path) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    bundle = bundles[0]  # written by data.simulate.runner.simulate_many; the small model finds its fault
    browser.get(server + "/")
    assert "Diagnose a support bundle" in browser.find_element(By.TAG_NAME, "h1").text
    browser.execute_script(RECORD_STAGES)
    browser.find_element(By.ID, "bundle").send_keys(str(bundle))
    _shot(browser, "upload")
    browser.find_element(By.ID, "submit").click()

    # the page goes to the diagnosis by itself once the status URL says done
    WebDriverWait(browser, 60, poll_frequency=0.1).until(lambda d: "/diagnoses/" in d.current_url)
    WebDriverWait(browser, 30, poll_frequency=0.1).until(lambda d: d.find_elements(By.ID, "verdict"))
    stages = json.loads(browser.execute_script("return sessionStorage.getItem('stages')") or "[]")
    # the XHR spec fires a last upload progress event (loaded == total) before its load event
    assert any(s.startswith("Uploading… 100 % of") for s in stages), stages
    assert "Uploaded; checking the bundle…" in stages, stages
    assert any(s.startswith("Queued for diagnosis") for s in stages), stages

    job_id = browser.current_url.rsplit("/", 1)[-1]
    with urllib.request.urlopen(f"{server}/api/v1/diagnoses/{job_id}") as r:
        res = json.load(r)
    assert res["status"] == "done" and res["filename"] == bundle.name
    doc = res["diagnosis"]
    assert browser.find_element(By.ID, "status").text == "done"

    # the verdict of every component, as the page shows it (hidden rows of folded groups included)
    shown = {
        e.get_attribute("data-component"): e.get_attribute("textContent").strip()
        for e in browser.find_elements(By.CSS_SELECTOR, ".verdict-label")
    }
    assert shown == {c["id"]: c["verdict"] for c in doc["components"]}
    assert doc["findings"], "the test needs a bundle the small model finds a fault in"
    headline = browser.find_element(By.ID, "verdict").text
    first = doc["findings"][0]
    assert first["fault"] in headline and first["component"] in headline

    # the charts of the first finding: visible SVG with an accessible title naming the fault
    section = browser.find_element(By.ID, "finding-1")
    assert section.get_attribute("data-fault") == first["fault"]
    charts = section.find_elements(By.CSS_SELECTOR, "svg.chart")
    assert len(charts) >= 2 and all(c.is_displayed() for c in charts)
    assert charts[0].size["width"] > 400 and charts[0].size["height"] > 150  # readable on a laptop
    title = charts[0].find_element(By.TAG_NAME, "title").get_attribute("textContent")
    assert first["fault"] in title and first["component"] in title
    _shot(browser, "detail")

    # the engineer corrects the first finding (not that fault: healthy) and signs; the feedback is stored
    from selenium.webdriver.support.ui import Select

    pick = browser.find_element(By.CSS_SELECTOR, f'select[name="label:{first["component"]}"]')
    browser.execute_script("arguments[0].scrollIntoView({block: 'center'});", pick)
    Select(pick).select_by_value("none")
    browser.find_element(By.ID, "author").send_keys("Jane Engineer")
    browser.find_element(By.ID, "comment").send_keys("link is fine, switch port checked")
    browser.find_element(By.ID, "feedback-submit").click()
    thanks = WebDriverWait(browser, 30, poll_frequency=0.1).until(lambda d: d.find_elements(By.ID, "feedback-thanks"))
    assert "is stored with this bundle" in thanks[0].text
    with urllib.request.urlopen(f"{server}/api/v1/diagnoses/{job_id}/feedback") as r:
        (fb,) = json.load(r)["items"]
    assert fb["author"] == "Jane Engineer" and fb["labels"][first["component"]] == "none"
    assert len(fb["labels"]) == len(doc["components"])  # every component labelled: the rest confirmed
    _shot(browser, "feedback")

    browser.get(server + "/diagnoses")
    assert bundle.name in browser.find_element(By.CSS_SELECTOR, "table.list").text
    _shot(browser, "list")
    browser.get(server + "/model")
    assert "logreg" in browser.find_element(By.ID, "model-info").text

    # a file that is no bundle: the upload page says why, and stays
    notes = tmp_path / "notes.tgz"
    notes.write_text("not an archive\n")
    browser.get(server + "/")
    browser.find_element(By.ID, "bundle").send_keys(str(notes))
    browser.find_element(By.ID, "submit").click()
    error = WebDriverWait(browser, 30, poll_frequency=0.1).until(
        lambda d: (e := d.find_element(By.ID, "error")).is_displayed() and e
    )
    assert "Upload refused (422)" in error.text and "notes.tgz" in error.text
    assert browser.current_url.rstrip("/") == server and browser.find_element(By.ID, "submit").is_enabled()


def test_pages_hold_at_400_px(server: str, browser: Any, bundles: list[Path]) -> None:
    """At 400 CSS px wide no page scrolls sideways: tables scroll inside their own box, charts and
    images shrink to the width, long names and the SHA-256 wrap."""
    import httpx

    bundle = bundles[0]
    r = httpx.post(f"{server}/api/v1/diagnoses?wait=true", files={"bundle": (bundle.name, bundle.read_bytes())},
                   timeout=120)  # fmt: skip
    assert r.status_code == 201, r.text
    job_id = r.json()["id"]
    browser.execute_cdp_cmd(
        "Emulation.setDeviceMetricsOverride", {"width": 400, "height": 800, "deviceScaleFactor": 1, "mobile": False}
    )
    for path in ("/", "/diagnoses", f"/diagnoses/{job_id}", "/model"):
        browser.get(server + path)
        assert browser.execute_script("return window.innerWidth") == 400
        wide = browser.execute_script("return document.documentElement.scrollWidth")
        _shot(browser, f"400px{path.replace('/', '-')}")
        assert wide <= 400, (path, wide, browser.execute_script(WIDER))


def test_upload_with_javascript_off_ends_on_the_diagnosis_page(server: str, browser: Any, bundles: list[Path]) -> None:
    """The browser posts the upload form itself (no upload.js): it lands on the diagnosis page, which
    refreshes itself until the verdict is there, never on the API's JSON."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    browser.execute_cdp_cmd("Emulation.setScriptExecutionDisabled", {"value": True})
    browser.get(server + "/")
    browser.find_element(By.ID, "bundle").send_keys(str(bundles[0]))
    browser.find_element(By.ID, "submit").click()
    WebDriverWait(browser, 60, poll_frequency=0.1).until(lambda d: "/diagnoses/" in d.current_url)
    assert browser.find_element(By.TAG_NAME, "h1").text == bundles[0].name
    WebDriverWait(browser, 60, poll_frequency=0.2).until(lambda d: d.find_elements(By.ID, "verdict"))
    assert browser.find_element(By.ID, "status").text == "done"
    with urllib.request.urlopen(f"{server}/metrics") as r:  # the form itself was posted, not upload.js's XHR
        metrics = r.read().decode()
    assert 'route="/upload",status="303"} 1.0' in metrics
    assert 'route="/api/v1/diagnoses",status="202"' not in metrics


def test_an_upload_over_the_limit_with_javascript_off_shows_a_page(tmp_path: Path, browser: Any) -> None:
    """JavaScript off, a bundle over VSANDX_MAX_UPLOAD_BYTES: the browser shows the 413 page naming the
    file and the limit with its link back to the upload form, not the API's JSON nor a reset connection."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    big = tmp_path / "esx-01.tgz"
    with big.open("wb") as f:
        f.truncate(24 << 20)  # 24 MiB of zeros against a 1 MiB limit
    app = create_app(service_settings(tmp_path / "var", None, max_upload_bytes=1 << 20))
    with serving(app) as url:
        browser.execute_cdp_cmd("Emulation.setScriptExecutionDisabled", {"value": True})
        browser.get(url + "/")
        browser.find_element(By.ID, "bundle").send_keys(str(big))
        browser.find_element(By.ID, "submit").click()
        WebDriverWait(browser, 60, poll_frequency=0.1).until(lambda d: d.current_url.endswith("/upload"))
        assert browser.find_element(By.TAG_NAME, "h1").text == "Bundle too large", browser.page_source[:2000]
        words = browser.find_element(By.ID, "error").text
        assert "The file esx-01.tgz is larger than the upload limit of 1 MB (1,048,576 bytes)" in words
        browser.find_element(By.ID, "back").click()
        WebDriverWait(browser, 30, poll_frequency=0.1).until(lambda d: d.find_elements(By.ID, "upload"))

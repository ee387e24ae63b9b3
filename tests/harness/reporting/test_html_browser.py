"""The HTML report in a real headless Chromium: structure, escaping, filtering, rendering.

Needs a Chromium binary: ``$AGENTRIG_CHROMIUM``, else ``chromium`` / ``chromium-browser`` /
``google-chrome`` on PATH, else ``/usr/bin/chromium`` (Debian: ``apt-get install -y chromium``).
Skipped only when none exists. One browser serves the module (whose tests therefore run on one
xdist worker), driven over the DevTools protocol through a pipe (``--remote-debugging-pipe``).
Every page opens in a tab of its own, and a page that leaves anything in localStorage fails. A
browser that dies or does not answer within ``TIMEOUT`` seconds fails the test with the end of
its stderr and is killed; the next test starts a new one.

The report of a real run (the bundled tools and failing scenarios) is measured inside the
browser at an exact viewport size: the first failure must be visible without scrolling at
1400x1000 and at 420x900, with no sideways scrolling at 420 px. Screenshots at both sizes are
kept in the test's temporary folder; their paths are printed and recorded as JUnit properties
(``screenshot-1400``, ``screenshot-420``).
"""

from __future__ import annotations

import base64
import json
import os
import select
import shutil
import signal
import struct
import subprocess
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from html.parser import HTMLParser
from pathlib import Path
from typing import Any, NoReturn

import pytest

from agentrig.harness.reporting import HtmlWriter
from agentrig.harness.results import SuiteResult

DEBIAN_CHROMIUM = "/usr/bin/chromium"
BINARIES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
    "--remote-debugging-pipe",
)
WINDOW = (1000, 800)
TIMEOUT = 30.0
"""Seconds the browser has to answer a command or to load a page."""
READY_WITHIN_MS = 5000
"""How long a loaded report's own script may take to mark ``<body data-report-ready="1">``."""
# The browser reads commands on fd 3 and writes on fd 4; Popen hands the pipe ends over as
# stdin and stdout (whatever their numbers in this process), and sh moves them to 3 and 4.
ON_FDS_3_AND_4 = ("/bin/sh", "-c", 'exec "$@" 3<&0 4>&1 0</dev/null 1>/dev/null', "sh")
Message = dict[str, Any]


@pytest.fixture(scope="module")
def chromium() -> str:
    """Path of the browser; skips the module only when no binary exists."""
    configured = os.environ.get("AGENTRIG_CHROMIUM")
    if configured:
        assert Path(configured).is_file(), f"AGENTRIG_CHROMIUM={configured!r} is not a file"
        return configured
    for name in BINARIES:
        found = shutil.which(name)
        if found:
            return found
    if Path(DEBIAN_CHROMIUM).is_file():
        return DEBIAN_CHROMIUM
    pytest.skip("no Chromium binary found (install it: apt-get install -y chromium)")


@pytest.fixture(scope="module")
def browser(chromium: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Browser]:
    """The module's one browser, closed (``Browser.close``, then waited for) at the end."""
    started = Browser(chromium, tmp_path_factory.mktemp("chromium"))
    try:
        yield started
    finally:
        started.close()


@pytest.fixture
def report(tmp_path: Path, suite: SuiteResult) -> Path:
    """The standard suite's HTML report on disk."""
    path = tmp_path / "report.html"
    path.write_text(HtmlWriter().render(suite), encoding="utf-8")
    return path


class Browser:
    """Headless Chromium over the DevTools protocol: JSON messages, each ended by a NUL byte,
    written to its fd 3 and read from its fd 4. Started on first use and again after a crash."""

    def __init__(self, binary: str, folder: Path) -> None:
        self.binary = binary
        self.folder = folder
        self.launches = 0
        self.process: subprocess.Popen[bytes] | None = None
        self.commands = self.replies = -1
        self.stderr = folder / "stderr-0.txt"
        self.unread = b""
        self.events: list[Message] = []
        self.last_id = 0

    def launch(self) -> None:
        self.launches += 1
        self.stderr = self.folder / f"stderr-{self.launches}.txt"
        profile = self.folder / f"profile-{self.launches}"
        theirs_read, self.commands = os.pipe()
        self.replies, theirs_write = os.pipe()
        try:
            with self.stderr.open("wb") as stderr:
                self.process = subprocess.Popen(
                    [*ON_FDS_3_AND_4, self.binary, *FLAGS, f"--user-data-dir={profile}"],
                    stdin=theirs_read,
                    stdout=theirs_write,
                    stderr=stderr,
                    start_new_session=True,  # its renderers and helpers in one group, to kill
                )
        except OSError:
            os.close(self.commands)
            os.close(self.replies)
            raise
        finally:
            os.close(theirs_read)
            os.close(theirs_write)
        self.unread, self.events = b"", []

    def call(self, method: str, params: Message | None = None, session: str = "") -> Message:
        """Send one command and return its result; fail the test if it is refused."""
        self.last_id += 1
        asked = self.last_id
        message: Message = {"id": asked, "method": method, "params": params or {}}
        if session:
            message["sessionId"] = session
        data = json.dumps(message).encode() + b"\0"
        try:
            while data:
                data = data[os.write(self.commands, data) :]
        except OSError as error:
            self.fail(f"closed its pipe before {method} ({error})", ended=True)
        reply = self.receive(lambda got: got.get("id") == asked, f"reply to {method}")
        if "error" in reply:
            pytest.fail(f"Chromium refused {method} {params}: {reply['error']}")
        result: Message = reply["result"]
        return result

    def receive(self, wanted: Callable[[Message], bool], what: str) -> Message:
        """The first message ``wanted`` accepts (events that came earlier are kept)."""
        for index, event in enumerate(self.events):
            if wanted(event):
                return self.events.pop(index)
        deadline = time.monotonic() + TIMEOUT
        while True:
            while b"\0" in self.unread:
                raw, _, self.unread = self.unread.partition(b"\0")
                message: Message = json.loads(raw)
                if wanted(message):
                    return message
                if "method" in message:
                    self.events.append(message)
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([self.replies], [], [], left)[0]:
                self.fail(f"sent no {what} within {TIMEOUT:g} s")
            chunk = os.read(self.replies, 1 << 20)
            if not chunk:
                self.fail(f"closed its pipe before its {what}", ended=True)
            self.unread += chunk

    def fail(self, what: str, *, ended: bool = False) -> NoReturn:
        """Kill the browser and fail the test with what went wrong and the end of its stderr
        (``ended``: the browser is ending by itself, so wait a little for its exit status)."""
        assert self.process is not None
        with suppress(subprocess.TimeoutExpired):
            self.process.wait(timeout=5 if ended else 0)
        code = self.process.returncode
        how = "it was still running: killed" if code is None else f"exit status {code}"
        self.kill()
        tail = self.stderr.read_text(errors="replace")[-2000:]
        pytest.fail(f"Chromium {what} ({how}); its stderr ends:\n{tail}")

    def kill(self) -> int | None:
        """End the browser and everything it started now; its exit status."""
        process, self.process = self.process, None
        if process is None:
            return None
        with suppress(ProcessLookupError):  # the group: the browser and what it started
            os.killpg(process.pid, signal.SIGKILL)
        code = process.wait()
        os.close(self.commands)
        os.close(self.replies)
        return code

    def close(self) -> None:
        """``Browser.close``, then wait for the browser to end; kill it if it does not."""
        if self.process is None:
            return
        with suppress(OSError):
            os.write(self.commands, json.dumps({"id": 0, "method": "Browser.close"}).encode())
            os.write(self.commands, b"\0")
        with suppress(subprocess.TimeoutExpired):
            self.process.wait(timeout=TIMEOUT)
        self.kill()

    @contextmanager
    def page(self, url: str, width: int = WINDOW[0], height: int = WINDOW[1]) -> Iterator[Page]:
        """``url`` loaded in a new tab, in a ``width`` x ``height`` viewport; the tab is closed
        afterwards."""
        if self.process is None or self.process.poll() is not None:
            self.kill()
            self.launch()
        target = self.call("Target.createTarget", {"url": "about:blank"})["targetId"]
        try:
            attached = self.call("Target.attachToTarget", {"targetId": target, "flatten": True})
            page = Page(self, attached["sessionId"])
            page.open(url, width, height)
            yield page
            page.check_nothing_stored()
        finally:
            if self.process is not None:
                self.call("Target.closeTarget", {"targetId": target})
            self.events.clear()


class Page:
    """One tab, attached to (``flatten``) by its own session. The tabs share the browser's
    default context: a page that stores something fails its test (``check_nothing_stored``)
    rather than leave it for the next (a context of its own would cost each page about 0.1
    CPU s more)."""

    def __init__(self, browser: Browser, session: str) -> None:
        self.browser = browser
        self.session = session

    def call(self, method: str, params: Message | None = None) -> Message:
        return self.browser.call(method, params, self.session)

    def open(self, url: str, width: int, height: int) -> None:
        """Load ``url`` in a ``width`` x ``height`` viewport; return after its load event."""
        viewport = {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": False}
        self.call("Emulation.setDeviceMetricsOverride", viewport)
        self.call("Page.enable")
        self.call("Page.setLifecycleEventsEnabled", {"enabled": True})
        navigation = self.call("Page.navigate", {"url": url})
        if navigation.get("errorText"):
            pytest.fail(f"Chromium could not open {url}: {navigation['errorText']}")
        self.browser.receive(
            lambda got: (
                got.get("method") == "Page.lifecycleEvent"
                and got["params"]["name"] == "load"
                and got["params"]["loaderId"] == navigation["loaderId"]
            ),
            f"load event for {url}",
        )

    def check_nothing_stored(self) -> None:
        """Fail if the page left anything in storage, which the next page would see; clear it."""
        stored = self.evaluate(
            "(function () { var n = localStorage.length; localStorage.clear(); return n; })()"
        )
        assert stored == 0, (
            f"the page left {stored} item(s) in localStorage, which the next page would see: "
            "give each page a context of its own (Target.createBrowserContext)"
        )

    def evaluate(self, expression: str) -> Any:
        """The value of ``expression`` (awaited if a promise); fails the test if it throws."""
        params = {"expression": expression, "returnByValue": True, "awaitPromise": True}
        result = self.call("Runtime.evaluate", params)
        if "exceptionDetails" in result:
            details = result["exceptionDetails"]
            pytest.fail(f"the page threw: {details.get('exception', details)}")
        return result["result"].get("value")

    def dom(self) -> Dom:
        """The DOM as it is now."""
        return Dom(self.evaluate("document.documentElement.outerHTML"))

    def wait_until_ready(self) -> None:
        """Wait (up to ``READY_WITHIN_MS``) until the report's own script has marked ``<body>``
        as ready: what a one-shot browser's ``--virtual-time-budget`` waited for."""
        self.evaluate(
            "new Promise(function (done, fail) {"
            "  var start = Date.now();"
            "  (function poll() {"
            '    if (document.body.getAttribute("data-report-ready") === "1") { done(); }'
            f"    else if (Date.now() - start > {READY_WITHIN_MS}) {{"
            '      fail(new Error("the report\'s script did not set data-report-ready"));'
            "    } else { setTimeout(poll, 10); }"
            "  })();"
            "})"
        )

    def screenshot(self, path: Path) -> bytes:
        """A PNG of the viewport, written to ``path``."""
        # not optimizeForSpeed (50 ms less a shot): a blank page's PNG then passes the 10 KB check
        shot = self.call("Page.captureScreenshot", {"format": "png"})
        data = base64.b64decode(shot["data"])
        path.write_bytes(data)
        return data


class Dom(HTMLParser):
    """The dumped DOM: every start tag with its attributes, and the text of the page."""

    def __init__(self, text: str) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.texts: list[str] = []
        self.feed(text)
        self.close()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))

    def handle_data(self, data: str) -> None:
        self.texts.append(data)

    def first(self, tag: str) -> dict[str, str | None]:
        return next(attrs for name, attrs in self.tags if name == tag)

    def scenarios(self) -> dict[str | None, dict[str, str | None]]:
        return {
            a.get("id"): a
            for name, a in self.tags
            if name == "details" and a.get("class") == "scenario"
        }


def dump_dom(browser: Browser, url: str) -> Dom:
    """The DOM once the page has loaded (its scripts ran), as ``--dump-dom`` printed it."""
    with browser.page(url) as page:
        return page.dom()


def test_scenarios_render_and_injected_markup_stays_text(
    browser: Browser, report: Path, suite: SuiteResult
) -> None:
    dom = dump_dom(browser, report.as_uri())
    body = dom.first("body")
    assert body.get("data-report-ready") == "1", "the report's own script did not run"
    assert "data-pwned" not in body, f"injected markup ran: {body}"
    assert {k: v.get("data-status") for k, v in dom.scenarios().items()} == {
        "scenario-weather-two-cities": "passed",
        "scenario-budget-exceeded": "failed",
        "scenario-xss-probe": "failed",
    }
    tags = [name for name, _ in dom.tags]
    assert tags.count("script") == 1
    assert "img" not in tags
    assert not [a for _, attrs in dom.tags for a in attrs if a.startswith("on")]
    text = "".join(dom.texts)
    assert suite.scenarios[2].description in text
    assert "<script>alert(1)</script>" in text


@pytest.mark.parametrize("which", ["pwn_script", "pwn_img"])
def test_the_payload_would_be_detected_if_it_ran(
    browser: Browser, tmp_path: Path, payloads: Any, which: str
) -> None:
    """Control: each payload, unescaped and without the report's CSP, does mark <body>."""
    page = tmp_path / "unsafe.html"
    markup = getattr(payloads, which)
    page.write_text(f"<!DOCTYPE html><html><body><p>{markup}</p></body></html>", encoding="utf-8")
    body = dump_dom(browser, page.as_uri()).first("body")
    assert body.get("data-pwned") == which.removeprefix("pwn_")


@pytest.mark.parametrize(
    ("fragment", "visible"),
    [
        ("#filter=budget", {"scenario-budget-exceeded"}),
        ("#filter=TOOLS", {"scenario-weather-two-cities"}),
        ("#failed=1", {"scenario-budget-exceeded", "scenario-xss-probe"}),
        ("#filter=security&failed=1", {"scenario-xss-probe"}),
        ("#filter=nothing-matches", set()),
    ],
)
def test_url_fragment_applies_the_filter(
    browser: Browser, report: Path, fragment: str, visible: set[str]
) -> None:
    dom = dump_dom(browser, report.as_uri() + fragment)
    shown = {key for key, attrs in dom.scenarios().items() if "hidden" not in attrs}
    assert shown == visible
    assert len(dom.scenarios()) == 3
    assert dom.first("body").get("data-report-ready") == "1"


def test_screenshot_is_a_png_of_the_window(browser: Browser, report: Path, tmp_path: Path) -> None:
    shot = tmp_path / "report.png"
    with browser.page(report.as_uri(), *WINDOW) as page:
        page.wait_until_ready()
        page.screenshot(shot)
    data = shot.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    assert data[12:16] == b"IHDR"
    assert struct.unpack(">II", data[16:24]) == WINDOW
    assert len(data) > 10_000, "the screenshot looks blank"


# --- the report a newcomer opens: a real run with failures, measured in the browser ------------

SCENARIOS = Path(__file__).parents[3] / "scenarios"
SIZES = ((1400, 1000), (420, 900))
PROBE = """
(function () {
  "use strict";
  var first = document.querySelector("nav.failure-summary li");
  var box = first.getBoundingClientRect();
  var root = document.documentElement;
  var card = document.querySelector("details.scenario[data-status=failed]");
  var order = Array.prototype.map.call(
    card.querySelectorAll("section.failures, ol.transcript, details.invariants"),
    function (el) { return el.tagName.toLowerCase() + "." + el.className; });
  var folded = card.querySelector("details.invariants");
  return {
    width: window.innerWidth, height: window.innerHeight,
    top: box.top, bottom: box.bottom, text: first.textContent,
    scrollWidth: root.scrollWidth, order: order, foldedOpen: folded ? folded.open : null,
    linkTarget: first.querySelector("a").getAttribute("href"),
    cardOpen: card.open
  };
})()
"""


@pytest.fixture(scope="module")
def real_report(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The HTML report of a real run: the bundled tools suite and the deliberately wrong one."""
    from agentrig.harness.scenarios.loader import load_scenarios
    from agentrig.harness.suites.suite import run_suite

    scenarios = load_scenarios([SCENARIOS / "failing", SCENARIOS / "tools"])
    result = run_suite(scenarios, workers=1)
    assert 0 < result.failed_count < result.total
    path = tmp_path_factory.mktemp("real") / "report.html"
    path.write_text(HtmlWriter().render(result), encoding="utf-8")
    return path


def measure(
    browser: Browser,
    report: Path,
    width: int,
    height: int,
    probe: str = PROBE,
    screenshot: Path | None = None,
) -> dict[str, Any]:
    """Where things sit when ``report`` is shown in a ``width`` x ``height`` viewport, once its
    own script has run: what ``probe`` (an expression) finds there. With ``screenshot``, a PNG
    of that viewport is kept there."""
    with browser.page(report.as_uri(), width, height) as page:
        page.wait_until_ready()
        data: dict[str, Any] | None = page.evaluate(probe)
        if screenshot is not None:
            shot = page.screenshot(screenshot)
            assert shot[:8] == b"\x89PNG\r\n\x1a\n"
            assert struct.unpack(">II", shot[16:24]) == (width, height)
    assert data, "the measuring script did not report"
    assert (data["width"], data["height"]) == (width, height)
    return data


def test_the_first_failure_is_visible_without_scrolling_and_screenshots_are_kept(
    browser: Browser,
    real_report: Path,
    tmp_path: Path,
    record_property: Callable[[str, object], None],
) -> None:
    shots = {width: tmp_path / f"report-{width}x{height}.png" for width, height in SIZES}
    wide = measure(browser, real_report, 1400, 1000, screenshot=shots[1400])
    assert wide["top"] >= 0, wide
    assert wide["bottom"] <= 1000, wide
    assert "[script]" in wide["text"] or "[expectation]" in wide["text"], wide["text"]
    assert wide["linkTarget"].startswith("#scenario-failing-")
    assert wide["cardOpen"] is True
    assert wide["order"][0] == "section.failures", "a card starts with why it failed"
    assert wide["foldedOpen"] is False, "passing invariants are folded"
    narrow = measure(browser, real_report, 420, 900, screenshot=shots[420])
    assert narrow["scrollWidth"] <= 420, "the page scrolls sideways at 420 px"
    assert narrow["top"] >= 0, narrow
    assert narrow["bottom"] <= 900, narrow
    for width, height in SIZES:
        record_property(f"screenshot-{width}", str(shots[width]))
        print(f"screenshot at {width}x{height}: {shots[width]}")


def test_a_link_to_a_card_opens_it(browser: Browser, real_report: Path, tmp_path: Path) -> None:
    html = real_report.read_text(encoding="utf-8").replace(
        'data-status="failed" data-name="failing-wrong-final-response"',
        'data-status="failed" data-name="failing-wrong-final-response" data-closed="1"',
    )
    # the card starts closed (as a passed one does); following its link opens it
    html = html.replace(' data-closed="1" open>', ">", 1)
    page = tmp_path / "report.html"
    page.write_text(html, encoding="utf-8")
    dom = dump_dom(browser, page.as_uri() + "#scenario-failing-wrong-final-response")
    card = dom.scenarios()["scenario-failing-wrong-final-response"]
    assert "open" in card, card
    assert "hidden" not in card


def test_control_a_failure_pushed_below_the_fold_is_seen_there(
    browser: Browser, real_report: Path, tmp_path: Path
) -> None:
    """Control: the measurement is real; 1,200 px of content above the summary push it out."""
    html = real_report.read_text(encoding="utf-8")
    html = html.replace(
        '<nav class="failure-summary"',
        '<div style="height:1200px"></div><nav class="failure-summary"',
        1,
    )
    pushed = tmp_path / "report.html"
    pushed.write_text(html, encoding="utf-8")
    assert measure(browser, pushed, 1400, 1000)["top"] > 1000


# --- live scenarios: the chart as drawn, the page at 420 px ------------------------------------

CHART_PROBE = """
(function () {
  "use strict";
  var charts = Array.prototype.map.call(
    document.querySelectorAll("details.scenario[open] svg.live-chart"), function (svg) {
      var card = svg.closest("details.scenario");
      var axis = svg.querySelector("line.axis").getBoundingClientRect();
      var point = svg.querySelector("circle.point");
      var bar = svg.querySelector("rect.interval").getBoundingClientRect();
      var threshold = svg.querySelector("line.threshold").getBoundingClientRect();
      var centre = point ? point.getBoundingClientRect() : null;
      return {
        name: card.getAttribute("data-name"), left: axis.left, width: axis.width,
        point: centre ? centre.left + centre.width / 2 : null,
        barLeft: bar.left, barRight: bar.right, threshold: threshold.left + threshold.width / 2,
        colour: getComputedStyle(svg.querySelector("rect.interval")).fill
      };
    });
  var root = document.documentElement;
  return {
    width: window.innerWidth, height: window.innerHeight, scrollWidth: root.scrollWidth,
    charts: charts
  };
})()
"""


@pytest.fixture
def live_report(tmp_path: Path, live_suite: SuiteResult) -> Path:
    """The live suite's HTML report on disk."""
    path = tmp_path / "live.html"
    path.write_text(HtmlWriter().render(live_suite), encoding="utf-8")
    return path


def test_live_cards_render_filter_and_keep_markup_as_text(
    browser: Browser, live_report: Path
) -> None:
    dom = dump_dom(browser, live_report.as_uri() + "#failed=1")
    body = dom.first("body")
    assert body.get("data-report-ready") == "1"
    assert "data-pwned" not in body
    shown = {k for k, a in dom.scenarios().items() if "hidden" not in a}
    assert shown == {"scenario-refund-fail", "scenario-refund-budget", "scenario-refund-never"}
    tags = [name for name, _ in dom.tags]
    assert tags.count("svg") == 4
    assert tags.count("script") == 1
    assert "<script>alert(1)</script>" in "".join(dom.texts)


@pytest.mark.parametrize("width", [1400, 420])
def test_live_charts_place_the_rate_interval_and_threshold(
    browser: Browser, live_report: Path, live_suite: SuiteResult, width: int
) -> None:
    """Measured as drawn: each open card's point, bar and threshold sit where their values are
    on the axis; the verdict colours the bar; at 420 px nothing scrolls sideways."""
    data = measure(browser, live_report, width, 900, CHART_PROBE)
    assert data["scrollWidth"] <= width
    lives = {s.name: s.live for s in live_suite.scenarios if s.live is not None}
    charts = {chart["name"]: chart for chart in data["charts"]}
    assert set(charts) == {"refund-fail", "refund-budget", "refund-never"}  # the open cards
    colours = {}
    for name, chart in charts.items():
        live = lives[name]
        assert live is not None
        assert live.rate is not None
        assert chart["width"] > 100, chart
        tolerance = 2 / chart["width"]  # two pixels
        for where, value in [
            ("point", live.rate),
            ("barLeft", live.exact[0]),
            ("barRight", live.exact[1]),
            ("threshold", live.threshold),
        ]:
            share = (chart[where] - chart["left"]) / chart["width"]
            assert share == pytest.approx(value, abs=tolerance), (name, where)
        colours[live.verdict] = chart["colour"]
    assert colours["FAIL"] != colours["INCONCLUSIVE"]

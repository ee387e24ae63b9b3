"""The HTML report in a real headless Chromium: structure, escaping, filtering, rendering.

Needs a Chromium binary: ``$AGENTRIG_CHROMIUM``, else ``chromium`` / ``chromium-browser`` /
``google-chrome`` on PATH, else ``/usr/bin/chromium`` (Debian: ``apt-get install -y chromium``).
Skipped only when none exists. Each test starts one browser (under a second).

The report of a real run (the bundled tools and failing scenarios) is measured inside the
browser, framed at an exact viewport size: the first failure must be visible without scrolling at
1400x1000 and at 420x900, with no sideways scrolling at 420 px. Screenshots at both widths are
kept in the test's temporary folder; their paths are printed and recorded as JUnit properties
(``screenshot-1400``, ``screenshot-420``).
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import shutil
import struct
import subprocess
from collections.abc import Callable
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

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
)
WINDOW = (1000, 800)


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


@pytest.fixture
def report(tmp_path: Path, suite: SuiteResult) -> Path:
    """The standard suite's HTML report on disk."""
    path = tmp_path / "report.html"
    path.write_text(HtmlWriter().render(suite), encoding="utf-8")
    return path


def run_chromium(binary: str, profile: Path, *args: str) -> subprocess.CompletedProcess[bytes]:
    """Run headless Chromium once with its own profile; fail with its stderr on error."""
    command = [binary, *FLAGS, f"--user-data-dir={profile}", *args]
    done = subprocess.run(command, capture_output=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr.decode(errors="replace")[-2000:]
    return done


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


def dump_dom(binary: str, profile: Path, url: str) -> Dom:
    """The DOM after the page's scripts ran."""
    done = run_chromium(binary, profile, "--dump-dom", url)
    return Dom(done.stdout.decode("utf-8"))


def test_scenarios_render_and_injected_markup_stays_text(
    chromium: str, report: Path, tmp_path: Path, suite: SuiteResult
) -> None:
    dom = dump_dom(chromium, tmp_path / "profile", report.as_uri())
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
    chromium: str, tmp_path: Path, payloads: Any, which: str
) -> None:
    """Control: each payload, unescaped and without the report's CSP, does mark <body>."""
    page = tmp_path / "unsafe.html"
    markup = getattr(payloads, which)
    page.write_text(f"<!DOCTYPE html><html><body><p>{markup}</p></body></html>", encoding="utf-8")
    body = dump_dom(chromium, tmp_path / "profile", page.as_uri()).first("body")
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
    chromium: str, report: Path, tmp_path: Path, fragment: str, visible: set[str]
) -> None:
    dom = dump_dom(chromium, tmp_path / "profile", report.as_uri() + fragment)
    shown = {key for key, attrs in dom.scenarios().items() if "hidden" not in attrs}
    assert shown == visible
    assert len(dom.scenarios()) == 3
    assert dom.first("body").get("data-report-ready") == "1"


def test_screenshot_is_a_png_of_the_window(chromium: str, report: Path, tmp_path: Path) -> None:
    shot = tmp_path / "report.png"
    size = f"--window-size={WINDOW[0]},{WINDOW[1]}"
    run_chromium(chromium, tmp_path / "profile", size, f"--screenshot={shot}", report.as_uri())
    data = shot.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    assert data[12:16] == b"IHDR"
    assert struct.unpack(">II", data[16:24]) == WINDOW
    assert len(data) > 10_000, "the screenshot looks blank"


# --- the report a newcomer opens: a real run with failures, measured in the browser ------------

SCENARIOS = Path(__file__).parents[3] / "scenarios"
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
  parent.postMessage(JSON.stringify({
    width: window.innerWidth, height: window.innerHeight,
    top: box.top, bottom: box.bottom, text: first.textContent,
    scrollWidth: root.scrollWidth, order: order, foldedOpen: folded ? folded.open : null,
    linkTarget: first.querySelector("a").getAttribute("href"),
    cardOpen: card.open
  }), "*");
})();
"""
HOLDER = """<!DOCTYPE html><html><body style="margin:0">
<iframe src="{page}" width="{width}" height="{height}" style="border:0;display:block"></iframe>
<script>
window.addEventListener("message", function (event) {{
  document.body.setAttribute("data-probe", event.data);
}});
</script></body></html>"""


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
    binary: str, report: Path, tmp_path: Path, width: int, height: int, probe: str = PROBE
) -> dict[str, Any]:
    """Where things sit when ``report`` is shown in a ``width`` x ``height`` viewport: the page
    gets a measuring script (``probe``, and its hash in the page's CSP) and is framed at that
    size."""
    html = report.read_text(encoding="utf-8")
    digest = base64.b64encode(hashlib.sha256(probe.encode()).digest()).decode()
    html = html.replace("script-src ", f"script-src 'sha256-{digest}' ", 1)
    html = html.replace("</body>", f"<script>{probe}</script>\n</body>", 1)
    probed = tmp_path / f"probed-{width}.html"
    probed.write_text(html, encoding="utf-8")
    holder = tmp_path / f"holder-{width}.html"
    holder.write_text(HOLDER.format(page=probed.name, width=width, height=height), "utf-8")
    window = f"--window-size={width + 100},{height + 300}"
    done = run_chromium(
        binary, tmp_path / "profile", window, "--virtual-time-budget=10000", "--dump-dom",
        holder.as_uri(),
    )  # fmt: skip
    probe = Dom(done.stdout.decode("utf-8")).first("body").get("data-probe")
    assert probe, "the measuring script did not report"
    data: dict[str, Any] = json.loads(probe)
    assert (data["width"], data["height"]) == (width, height)
    return data


def screenshot(binary: str, report: Path, tmp_path: Path, width: int, height: int) -> Path:
    shot = tmp_path / f"report-{width}x{height}.png"
    size = f"--window-size={width},{height}"
    run_chromium(binary, tmp_path / "profile", size, f"--screenshot={shot}", report.as_uri())
    data = shot.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    assert struct.unpack(">II", data[16:24]) == (width, height)
    return shot


def test_the_first_failure_is_visible_without_scrolling_and_screenshots_are_kept(
    chromium: str,
    real_report: Path,
    tmp_path: Path,
    record_property: Callable[[str, object], None],
) -> None:
    wide = measure(chromium, real_report, tmp_path, 1400, 1000)
    assert wide["top"] >= 0, wide
    assert wide["bottom"] <= 1000, wide
    assert "[script]" in wide["text"] or "[expectation]" in wide["text"], wide["text"]
    assert wide["linkTarget"].startswith("#scenario-failing-")
    assert wide["cardOpen"] is True
    assert wide["order"][0] == "section.failures", "a card starts with why it failed"
    assert wide["foldedOpen"] is False, "passing invariants are folded"
    narrow = measure(chromium, real_report, tmp_path, 420, 900)
    assert narrow["scrollWidth"] <= 420, "the page scrolls sideways at 420 px"
    assert narrow["top"] >= 0, narrow
    assert narrow["bottom"] <= 900, narrow
    for width, height in ((1400, 1000), (420, 900)):
        shot = screenshot(chromium, real_report, tmp_path, width, height)
        record_property(f"screenshot-{width}", str(shot))
        print(f"screenshot at {width}x{height}: {shot}")


def test_a_link_to_a_card_opens_it(chromium: str, real_report: Path, tmp_path: Path) -> None:
    html = real_report.read_text(encoding="utf-8").replace(
        'data-status="failed" data-name="failing-wrong-final-response"',
        'data-status="failed" data-name="failing-wrong-final-response" data-closed="1"',
    )
    # the card starts closed (as a passed one does); following its link opens it
    html = html.replace(' data-closed="1" open>', ">", 1)
    page = tmp_path / "report.html"
    page.write_text(html, encoding="utf-8")
    dom = dump_dom(
        chromium, tmp_path / "profile", page.as_uri() + "#scenario-failing-wrong-final-response"
    )
    card = dom.scenarios()["scenario-failing-wrong-final-response"]
    assert "open" in card, card
    assert "hidden" not in card


def test_control_a_failure_pushed_below_the_fold_is_seen_there(
    chromium: str, real_report: Path, tmp_path: Path
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
    assert measure(chromium, pushed, tmp_path, 1400, 1000)["top"] > 1000


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
  parent.postMessage(JSON.stringify({
    width: window.innerWidth, height: window.innerHeight, scrollWidth: root.scrollWidth,
    charts: charts
  }), "*");
})();
"""


@pytest.fixture
def live_report(tmp_path: Path, live_suite: SuiteResult) -> Path:
    """The live suite's HTML report on disk."""
    path = tmp_path / "live.html"
    path.write_text(HtmlWriter().render(live_suite), encoding="utf-8")
    return path


def test_live_cards_render_filter_and_keep_markup_as_text(
    chromium: str, live_report: Path, tmp_path: Path
) -> None:
    dom = dump_dom(chromium, tmp_path / "profile", live_report.as_uri() + "#failed=1")
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
    chromium: str, live_report: Path, tmp_path: Path, live_suite: SuiteResult, width: int
) -> None:
    """Measured as drawn: each open card's point, bar and threshold sit where their values are
    on the axis; the verdict colours the bar; at 420 px nothing scrolls sideways."""
    data = measure(chromium, live_report, tmp_path, width, 900, CHART_PROBE)
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

"""The HTML report in a real headless Chromium: structure, escaping, filtering, rendering.

Needs a Chromium binary: ``$AGENTRIG_CHROMIUM``, else ``chromium`` / ``chromium-browser`` /
``google-chrome`` on PATH, else ``/usr/bin/chromium`` (Debian: ``apt-get install -y chromium``).
Skipped only when none exists. Each test starts one browser (under a second).
"""

from __future__ import annotations

import os
import shutil
import struct
import subprocess
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
        return {a.get("id"): a for name, a in self.tags if name == "details"}


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

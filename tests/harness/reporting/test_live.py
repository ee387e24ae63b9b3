"""Live scenarios in every report: verdicts, statistics, costs, trials and transcripts."""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from agentrig.harness.cli import app
from agentrig.harness.live import options as live_options
from agentrig.harness.live import suite as live_suite
from agentrig.harness.live_results import LiveResult
from agentrig.harness.reporting import (
    HtmlWriter,
    JsonWriter,
    JUnitWriter,
    MarkdownWriter,
    get_writer,
    normalized,
)
from agentrig.harness.reporting.live import (
    SHOWN_TRANSCRIPT_LINES,
    SHOWN_TRANSCRIPTS,
    format_confidence,
    format_usd,
    live_lines,
    metric_text,
    requirement_text,
    shown_trials,
    verdict_reason,
)
from agentrig.harness.reporting.terminal import (
    SHOWN_TRIALS,
    format_counts,
    format_live_line,
    format_scenario_failures,
)
from agentrig.harness.results import ScenarioResult, SuiteResult

from .conftest import (
    XSS,
    build_live_suite,
    live_fail,
    live_inconclusive,
    live_pass,
    live_scenario,
)

BUILT_INS = ("html", "json", "junit", "markdown")
LIVE_NAMES = ("refund-pass", "refund-fail", "refund-budget", "refund-never")


def _live(suite: SuiteResult, name: str) -> LiveResult:
    scenario = next(s for s in suite.scenarios if s.name == name)
    assert scenario.live is not None
    return scenario.live


# --- shared text --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("amount", "text"),
    [
        (0.0, "$0"),
        (0.0735, "$0.0735"),
        (0.00012, "$0.000120"),
        (1.5, "$1.50"),
        (1234.5, "$1,234.50"),
    ],
)
def test_amounts_keep_three_significant_digits(amount: float, text: str) -> None:
    assert format_usd(amount) == text
    assert format_usd(None) == "-"


def test_a_partial_verdict_says_so_once(live_suite: SuiteResult) -> None:
    live = _live(live_suite, "refund-budget")
    assert verdict_reason(live) == live.reason  # the reason already starts with it
    bare = live.model_copy(update={"reason": "the interval contains the threshold"})
    assert verdict_reason(bare) == (
        "partial: the budget is spent; the interval contains the threshold"
    )
    assert (
        verdict_reason(_live(live_suite, "refund-pass")) == _live(live_suite, "refund-pass").reason
    )


def test_the_requirement_names_the_rate_it_implies(live_suite: SuiteResult) -> None:
    assert requirement_text(_live(live_suite, "refund-fail")) == (
        "pass^3 >= 0.9 (success rate >= 0.965)"
    )
    assert requirement_text(_live(live_suite, "refund-pass")) == "rate >= 0.8"


def test_a_metric_whose_k_exceeds_the_trials_has_no_estimate(live_suite: SuiteResult) -> None:
    metrics = {m.metric: m for m in _live(live_suite, "refund-fail").metrics}
    assert metric_text(metrics["pass^20"]) == "pass^20 - (k > trials) [0.000, 0.000]"
    assert metric_text(metrics["pass@3"]) == "pass@3 0.708 [0.187, 0.957]"
    unknown = metrics["pass^20"].model_copy(update={"low": None})
    assert metric_text(unknown) == "pass^20 - (k > trials) -"


# --- every writer -------------------------------------------------------------------------


@pytest.mark.parametrize("name", BUILT_INS)
def test_live_reports_are_deterministic_and_only_wall_times_differ(name: str) -> None:
    writer = get_writer(name)
    first, second = build_live_suite(), build_live_suite((7301.125, 1, 2, 3, 4, 5))
    assert writer.render(first) == writer.render(build_live_suite())
    assert writer.render(first) != writer.render(second)
    assert writer.render(normalized(first)) == writer.render(normalized(second))


@pytest.mark.parametrize("name", BUILT_INS)
def test_dict_order_does_not_change_a_live_report(name: str, live_suite: SuiteResult) -> None:
    def reverse(live: LiveResult) -> LiveResult:
        records = tuple(
            r.model_copy(
                update={
                    "cost": dict(reversed(r.cost.items())),
                    "calls": dict(reversed(r.calls.items())),
                }
            )
            for r in live.records
        )
        return live.model_copy(
            update={
                "set_aside": dict(reversed(live.set_aside.items())),
                "model_calls": dict(reversed(live.model_calls.items())),
                "records": records,
            }
        )

    scenarios = tuple(
        s.model_copy(update={"live": reverse(s.live)}) if s.live else s
        for s in live_suite.scenarios
    )
    reordered = live_suite.model_copy(update={"scenarios": scenarios})
    assert reordered == live_suite
    assert list(_live(reordered, "refund-fail").set_aside) != list(
        _live(live_suite, "refund-fail").set_aside
    )
    assert get_writer(name).render(reordered) == get_writer(name).render(live_suite)


def test_the_json_report_keeps_every_live_field(live_suite: SuiteResult) -> None:
    text = JsonWriter().render(live_suite)
    assert SuiteResult.from_dict(json.loads(text)) == live_suite
    data = json.loads(text)["scenarios"][2]["live"]
    assert data["verdict"] == "FAIL"
    assert data["records"][1]["transcript"][:2] == ["USER: message 0", "USER: message 1"]
    assert data["cost"]["per_success"] == pytest.approx(0.0455 / 3)


# --- JUnit --------------------------------------------------------------------------------


def _cases(suite: SuiteResult) -> dict[str, ET.Element]:
    root = ET.fromstring(JUnitWriter().render(suite))
    return {case.attrib["name"]: case for case in root.iter("testcase")}


def _properties(case: ET.Element) -> dict[str, str]:
    return {p.attrib["name"]: p.attrib["value"] for p in case.iterfind("properties/property")}


def test_junit_counts_inconclusive_as_a_failure(live_suite: SuiteResult) -> None:
    root = ET.fromstring(JUnitWriter().render(live_suite))
    assert (root.get("tests"), root.get("failures"), root.get("errors"), root.get("skipped")) == (
        "5",
        "3",
        "0",
        "0",
    )
    cases = _cases(live_suite)
    assert [child.tag for child in cases["refund-pass"]] == ["properties", "system-out"]
    for name, verdict in [("refund-fail", "FAIL"), ("refund-budget", "INCONCLUSIVE")]:
        tags = [child.tag for child in cases[name]]
        assert tags == ["properties", "failure", "system-out"]
        failure = cases[name].find("failure")
        assert failure is not None
        assert failure.attrib["type"] == "verdict"
        assert failure.attrib["message"].startswith(f"{verdict}: ")
    assert cases["weather-two-cities"].find("properties") is None


def test_junit_properties_hold_the_statistics(live_suite: SuiteResult) -> None:
    properties = _properties(_cases(live_suite)["refund-fail"])
    live = _live(live_suite, "refund-fail")
    assert properties["live.verdict"] == "FAIL"
    assert properties["live.requirement.metric"] == "pass^3"
    assert float(properties["live.requirement.threshold"]) == live.threshold
    assert (properties["live.trials"], properties["live.successes"]) == ("10", "3")
    assert float(properties["live.rate"]) == 0.3
    assert (float(properties["live.exact.low"]), float(properties["live.exact.high"])) == live.exact
    assert (
        float(properties["live.wilson.low"]),
        float(properties["live.wilson.high"]),
    ) == live.wilson
    assert float(properties["live.metrics.pass@3.value"]) == 0.7083
    assert "live.metrics.pass^20.value" not in properties  # k > trials: no estimate
    assert float(properties["live.metrics.pass^20.high"]) == 0.0002
    assert float(properties["live.cost.per_success"]) == live.cost.per_success
    assert properties["live.set_aside"] == "2"
    assert properties["live.set_aside.infrastructure"] == "1"
    assert properties["live.discarded"] == "1"
    assert properties["live.model_calls.judge"] == "39"
    assert properties["live.replayed_trials"] == "0"
    never = _properties(_cases(live_suite)["refund-never"])
    assert "live.cost.per_success" not in never
    assert never["live.cost.total"] == "0.0"
    budget = _properties(_cases(live_suite)["refund-budget"])
    assert budget["live.partial"] == "the budget is spent"
    assert "live.partial" not in never


def test_junit_failure_text_and_system_out(live_suite: SuiteResult) -> None:
    case = _cases(live_suite)["refund-fail"]
    failure_text = case.findtext("failure") or ""
    assert "rate: 0.300, exact [0.067, 0.652], Wilson [0.108, 0.603] at 95%" in failure_text
    assert "requirement: pass^3 >= 0.9 (success rate >= 0.965)" in failure_text
    assert failure_text.count("lies below the threshold") == 1  # said once, by the failure
    out = case.findtext("system-out") or ""
    live = _live(live_suite, "refund-fail")
    trial_lines = [line for line in out.splitlines() if line.startswith("trial ")]
    assert len(trial_lines) == len(live.records) == 13
    assert "trial 4: set aside: infrastructure (not counted): HTTP 529; $0.00350" in trial_lines
    assert "trial 4, rerun 1: failure (counted): refund: the amount is wrong; $0.00350" in out
    headers = re.findall(r"^--- (.*) ---$", out, flags=re.M)
    assert headers == ["trial 1: failure", "trial 2: failure", "trial 4: set aside"]
    assert len(headers) == SHOWN_TRANSCRIPTS
    assert f"USER: message {SHOWN_TRANSCRIPT_LINES - 1}\n" in out
    assert f"USER: message {SHOWN_TRANSCRIPT_LINES}\n" not in out
    assert f"... ({75 - SHOWN_TRANSCRIPT_LINES} more lines in the JSON and HTML reports)" in out
    assert out.endswith("7 more transcript(s) in the JSON and HTML reports")
    assert XSS in out  # text, escaped by the XML writer


def test_junit_passing_live_scenario_lists_its_trials(live_suite: SuiteResult) -> None:
    out = _cases(live_suite)["refund-pass"].findtext("system-out") or ""
    assert out.startswith("21 trial(s) run:\ntrial 0: success (counted): every criterion met")
    assert "trial 0: success (counted): every criterion met; $0.00350, replayed" in out
    assert "--- trial 7: failure ---\nUSER: refund order 7\nAGENT: done" in out


# --- Markdown -----------------------------------------------------------------------------


def _cells(row: str) -> list[str]:
    return [cell.strip() for cell in re.split(r"(?<!\\)\|", row)[1:-1]]


def _section(text: str, start: str, end: str | None = None) -> str:
    body = text.split(start, 1)[1]
    return body.split(end, 1)[0] if end else body


def test_markdown_headline_counts_inconclusive_apart(live_suite: SuiteResult) -> None:
    text = MarkdownWriter().render(live_suite)
    assert text.startswith(
        "## agentrig: ❌ 2 of 5 scenarios failed, 1 inconclusive\n\n"
        "**2** passed, **2** failed, **1** inconclusive · Wall time: 9.000 s"
    )
    only = live_suite.model_copy(
        update={"scenarios": live_suite.scenarios[:2] + live_suite.scenarios[3:4]}
    )
    assert (
        MarkdownWriter()
        .render(only)
        .startswith(
            "## agentrig: ⚠️ 1 of 3 scenarios inconclusive\n\n"
            "**2** passed, **0** failed, **1** inconclusive"
        )
    )


def test_markdown_live_table(live_suite: SuiteResult) -> None:
    text = MarkdownWriter().render(live_suite)
    table = _section(text, "### Live scenarios\n\n", "\n\n")
    rows = [_cells(row) for row in table.splitlines()]
    assert rows[0] == [
        "Scenario",
        "Verdict",
        "Successes / n",
        "Rate [exact interval]",
        "Requirement",
        "Cost",
        "Cost / success",
        "Set aside",
    ]
    assert rows[2:] == [
        [
            "refund-pass",
            "✅ PASS",
            "19/20",
            "0.950 [0.751, 0.999]",
            "rate &gt;= 0.8",
            "\\$0.0735",
            "\\$0.00387",
            "1 (user\\_mistake:empty\\_message 1)",
        ],
        [
            "refund-fail",
            "❌ FAIL",
            "3/10",
            "0.300 [0.067, 0.652]",
            "pass^3 &gt;= 0.9 (success rate &gt;= 0.965)",
            "\\$0.0455",
            "\\$0.0152",
            "2 (infrastructure 1, user\\_mistake:empty\\_message 1)",
        ],
        [
            "refund-budget",
            "⚠️ INCONCLUSIVE",
            "2/4",
            "0.500 [0.068, 0.932]",
            "rate &gt;= 0.7",
            "\\$0.0175",
            "\\$0.00875",
            "1 (budget 1)",
        ],
        [
            "refund-never",
            "❌ FAIL",
            "0/6",
            "0.000 [0.000, 0.393]",
            "pass@2 &gt;= 0.9 (success rate &gt;= 0.684)",
            "\\$0",
            "-",
            "none",
        ],
    ]
    scenario_rows = [_cells(r) for r in text.split("\n\n")[1:3][1].splitlines()[2:]]
    assert [(r[0], r[1], r[3], r[4]) for r in scenario_rows] == [
        ("weather-two-cities", "✅ PASS", "1", "3"),
        ("refund-pass", "✅ PASS", "-", "-"),
        ("refund-fail", "❌ FAIL", "-", "-"),
        ("refund-budget", "⚠️ INCONCLUSIVE", "-", "-"),
        ("refund-never", "❌ FAIL", "-", "-"),
    ]


def test_markdown_live_details(live_suite: SuiteResult) -> None:
    text = MarkdownWriter().render(live_suite)
    budget = _section(text, "#### ⚠️ refund-budget: INCONCLUSIVE", "#### ")
    assert (
        "- **Why:** partial: the budget is spent after 4 counted trial(s); the exact 95% "
        "interval \\[0.068, 0.932\\] contains the threshold 0.700"
    ) in budget
    assert "- **Rate:** 0.500, exact \\[0.068, 0.932\\], Wilson \\[0.150, 0.850\\] at 95%" in budget
    assert "- **Set aside:** 1 (budget 1)" in budget
    fail = _section(text, "#### ❌ refund-fail: FAIL", "#### ")
    assert "- **Requirement:** pass^3 &gt;= 0.9 (success rate &gt;= 0.965)" in fail
    assert (
        "- **Cost:** \\$0.0455 (agent \\$0.0260, user \\$0.0130, judge \\$0.00650); "
        "per success \\$0.0152"
    ) in fail
    assert "- **Discarded:** 1 (finished after the verdict)" in fail
    assert "- **Model calls:** agent 26, user 26, judge 39" in fail
    assert "| Metric | Estimate | Interval (95%) |" in fail
    assert "| pass^20 | - (k > trials) | [0.000, 0.000] |" in fail
    assert "| pass@3 | 0.708 | [0.187, 0.957] |" in fail
    never = _section(text, "#### ❌ refund-never: FAIL", "### Failures")
    assert "per success -" in never
    assert "- **Replayed trials:** 6" in never
    assert "| Metric | Estimate | Interval (90%) |" in never
    assert "#### ⚠️ refund-budget (`scenarios/live/refund-budget.scenario.yaml:1`)" in text


def test_markdown_folds_the_first_transcripts(live_suite: SuiteResult) -> None:
    text = MarkdownWriter().render(live_suite)
    fail = _section(text, "#### ❌ refund-fail: FAIL", "#### ")
    summaries = re.findall(r"<details><summary>(.*)</summary>\n\n", fail)
    assert summaries == [
        "trial 1: failure (counted): refund: the amount is wrong; &#36;0.00350",
        "trial 2: failure (counted): refund: the amount is wrong; &#36;0.00350",
        "trial 4: set aside: infrastructure (not counted): HTTP 529; &#36;0.00350",
    ]
    assert fail.count("</details>") == SHOWN_TRANSCRIPTS
    hidden = len(shown_trials(live_fail())) - SHOWN_TRANSCRIPTS
    assert f"_{hidden} more failed or set-aside trial(s) in the HTML and JSON reports._" in fail
    # the fence outgrows the transcript's own backticks, so the block closes where it should
    assert f"````text\nUSER: show code\nAGENT: ```python\nprint(1)\n```\nAGENT: {XSS}\n````" in fail
    long = _section(fail, "<summary>trial 1:", "</details>")
    assert long.count("USER: message") == SHOWN_TRANSCRIPT_LINES
    assert "... (15 more lines in the HTML and JSON reports)" in long
    budget = _section(text, "#### ⚠️ refund-budget: INCONCLUSIVE", "#### ")
    assert budget.count("<details>") == 3
    assert "more failed or set-aside" not in budget


def test_markdown_summary_line_is_html_escaped() -> None:
    live = live_inconclusive()
    odd = live.records[1].model_copy(update={"reason": f"{XSS}\n\nsecond paragraph $5"})
    live = live.model_copy(update={"records": (live.records[0], odd, *live.records[2:])})
    suite = build_live_suite()
    scenario = suite.scenarios[3].model_copy(update={"live": live})
    text = MarkdownWriter().render(suite.model_copy(update={"scenarios": (scenario,)}))
    assert (
        "<summary>trial 1: failure (counted): &lt;script&gt;alert(1)&lt;/script&gt;  second "
        "paragraph &#36;5; &#36;0.00350</summary>"
    ) in text
    assert "<script>" not in text


def test_markdown_without_live_scenarios_has_no_live_section(suite: SuiteResult) -> None:
    assert "Live scenarios" not in MarkdownWriter().render(suite)


# --- HTML ---------------------------------------------------------------------------------


class _Page(HTMLParser):
    """Start tags with attributes, in order, and the text under each ``details.scenario``."""

    def __init__(self, text: str) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.text: list[str] = []
        self.feed(text)
        self.close()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))

    def handle_data(self, data: str) -> None:
        self.text.append(data)


def _card(html: str, name: str) -> str:
    start = html.index(f'id="scenario-{name}"')
    end = html.find('<details class="scenario"', start)
    return html[start : end if end >= 0 else len(html)]


def test_html_cards_carry_the_verdict(live_suite: SuiteResult) -> None:
    html = HtmlWriter().render(live_suite)
    page = _Page(html)
    cards = [a for tag, a in page.tags if tag == "details" and a.get("class") == "scenario"]
    assert [(a["data-name"], a["data-status"], a.get("data-verdict")) for a in cards] == [
        ("weather-two-cities", "passed", None),
        ("refund-pass", "passed", "PASS"),
        ("refund-fail", "failed", "FAIL"),
        ("refund-budget", "failed", "INCONCLUSIVE"),
        ("refund-never", "failed", "FAIL"),
    ]
    assert '<span class="badge" title="verdict">INCONCLUSIVE</span>' in _card(html, "refund-budget")
    assert "<title>agentrig report: 2 passed, 2 failed, 1 inconclusive</title>" in html
    assert '<span class="inconclusive-count">1 inconclusive</span>' in html
    assert '<h2 id="failures-heading" class="bad">2 failed, 1 inconclusive</h2>' in html
    assert "Why it is inconclusive" in _card(html, "refund-budget")
    assert "Why it failed" in _card(html, "refund-fail")


def test_html_live_statistics(live_suite: SuiteResult) -> None:
    html = HtmlWriter().render(live_suite)
    text = "".join(_Page(_card(html, "refund-fail")).text)
    for line in live_lines(_live(live_suite, "refund-fail"))[1:-1]:
        label, value = line.split(": ", 1)
        if label in ("metrics", "cost"):
            continue  # tables of their own, checked below
        assert f"{label.capitalize()}{value}" in text, label
    assert "Replayed trials0" in text
    assert "pass^20- (k > trials)[0.000, 0.000]" in text
    assert "pass@30.708[0.187, 0.957]" in text
    assert "agent$0.0260user$0.0130judge$0.00650total$0.0455per success$0.0152" in text
    budget = "".join(_Page(_card(html, "refund-budget")).text)
    assert "Stopped earlythe budget is spent" in budget
    never = "".join(_Page(_card(html, "refund-never")).text)
    assert "per success-" in never
    assert "Interval (90%)" in never
    passed = "".join(_Page(_card(html, "refund-pass")).text)
    assert _live(live_suite, "refund-pass").reason in passed  # no failure says it for a PASS


def _chart(html: str, name: str) -> dict[str, list[dict[str, str | None]]]:
    card = _card(html, name)
    svg = card[card.index("<svg") : card.index("</svg>")]
    shapes: dict[str, list[dict[str, str | None]]] = {}
    for tag, attrs in _Page(svg).tags:
        shapes.setdefault(tag, []).append(attrs)
    return shapes


def _axis(shapes: dict[str, list[dict[str, Any]]]) -> tuple[float, float]:
    axis = next(a for a in shapes["line"] if a["class"] == "axis" and a["y1"] == a["y2"])
    return float(axis["x1"]), float(axis["x2"])


@pytest.mark.parametrize("name", LIVE_NAMES)
def test_html_chart_draws_the_rate_its_interval_and_the_threshold(
    live_suite: SuiteResult, name: str
) -> None:
    html = HtmlWriter().render(live_suite)
    live = _live(live_suite, name)
    shapes = _chart(html, name)
    (svg,) = shapes["svg"]
    assert svg["class"] == f"live-chart verdict-{live.verdict.lower()}"
    assert svg["role"] == "img"
    interval = f"exact {format_confidence(live.confidence)} interval {live.exact[0]:.3f} to "
    assert f"{interval}{live.exact[1]:.3f}, threshold {live.threshold:.3f}" in str(
        svg["aria-label"]
    )
    left, right = _axis(shapes)

    def share(x: str | None) -> float:
        return (float(str(x)) - left) / (right - left)

    (point,) = shapes["circle"]
    assert share(point["cx"]) == pytest.approx(live.rate, abs=0.001)
    (bar,) = shapes["rect"]
    assert share(bar["x"]) == pytest.approx(live.exact[0], abs=0.001)
    width = float(str(bar["width"])) / (right - left)
    assert width == pytest.approx(live.exact[1] - live.exact[0], abs=0.002)
    (threshold,) = [a for a in shapes["line"] if a["class"] == "threshold"]
    assert share(threshold["x1"]) == pytest.approx(live.threshold, abs=0.001)
    assert threshold["x1"] == threshold["x2"]


def test_html_chart_without_a_counted_trial_has_no_point() -> None:
    suite = build_live_suite()
    live = live_inconclusive().model_copy(
        update={
            "trials": 0,
            "successes": 0,
            "rate": None,
            "exact": (0.0, 1.0),
            "wilson": (0.0, 1.0),
        }
    )
    scenario = suite.scenarios[3].model_copy(update={"live": live})
    html = HtmlWriter().render(suite.model_copy(update={"scenarios": (scenario,)}))
    shapes = _chart(html, "refund-budget")
    assert "circle" not in shapes
    assert "no trial counted" in str(shapes["svg"][0]["aria-label"])
    assert "0/0 successes · rate - [0.000, 1.000]" in html


def test_html_folds_every_failed_or_set_aside_trial(live_suite: SuiteResult) -> None:
    html = HtmlWriter().render(live_suite)
    card = _card(html, "refund-fail")
    page = _Page(card)
    trials = [a for tag, a in page.tags if tag == "details" and a.get("class") == "trial"]
    live = _live(live_suite, "refund-fail")
    assert [a["data-trial-status"] for a in trials] == [r.status for r in shown_trials(live)]
    assert not [a for a in trials if "open" in a]
    assert card.count('<pre class="trial-transcript">') == len(shown_trials(live))
    text = "".join(page.text)
    assert "USER: message 74" in text  # the whole transcript, not an excerpt
    assert f"refunded $400 {XSS}" in text
    assert "not_met, not_met, not_met" in text
    assert "All 13 trials" in text
    assert "trial 12, rerun 1" in "".join(_Page(_card(html, "refund-pass")).text)


def test_html_live_page_stays_self_contained_and_escaped(live_suite: SuiteResult) -> None:
    html = HtmlWriter().render(live_suite)
    page = _Page(html)
    assert [tag for tag, _ in page.tags].count("script") == 1
    assert "img" not in [tag for tag, _ in page.tags]
    assert not [name for _, attrs in page.tags for name in attrs if name.startswith("on")]
    assert not [a for _, attrs in page.tags for a in attrs if a in ("src", "action", "xmlns")]
    links = [attrs["href"] for _, attrs in page.tags if "href" in attrs]
    assert links
    assert all(str(link).startswith("#scenario-") for link in links)
    for forbidden in ("http:", "https:", "@import", "url(", "<foreignObject"):
        assert forbidden not in html
    assert [tag for tag, _ in page.tags].count("svg") == 4


def test_html_without_live_scenarios_has_no_live_styles(suite: SuiteResult) -> None:
    html = HtmlWriter().render(suite)
    assert "live-chart" not in html
    assert "inconclusive" not in html


# --- terminal -----------------------------------------------------------------------------


def _scenario(suite: SuiteResult, name: str) -> ScenarioResult:
    return next(s for s in suite.scenarios if s.name == name)


def test_terminal_counts_inconclusive_apart(live_suite: SuiteResult, suite: SuiteResult) -> None:
    assert format_counts(live_suite) == "2 passed, 2 failed, 1 inconclusive"
    assert format_counts(suite) == "1 passed, 2 failed"


def test_terminal_failure_of_a_live_scenario(live_suite: SuiteResult) -> None:
    text = format_scenario_failures(_scenario(live_suite, "refund-budget"))
    lines = text.splitlines()
    assert lines[0] == (
        "scenario refund-budget (scenarios/live/refund-budget.scenario.yaml:1) is inconclusive:"
    )
    assert lines[1].startswith("[verdict] INCONCLUSIVE: partial: the budget is spent")
    assert "    rate: 0.500, exact [0.068, 0.932], Wilson [0.150, 0.850] at 95%" in lines
    assert (
        "    cost: $0.0175 (agent $0.0100, user $0.00500, judge $0.00250); per success $0.00875"
        in lines
    )
    assert "      trial 4: set aside: budget (not counted): the budget is spent; $0.00350" in lines
    failed = format_scenario_failures(_scenario(live_suite, "refund-fail")).splitlines()
    assert failed[0].endswith(" failed:")
    assert "    10 trial(s) failed or set aside:" in failed
    listed = [line for line in failed if line.startswith("      trial ")]
    assert len(listed) == SHOWN_TRIALS
    assert f"      and {10 - SHOWN_TRIALS} more" in failed


def test_terminal_live_line(live_suite: SuiteResult) -> None:
    assert format_live_line(_scenario(live_suite, "refund-pass")) == (
        "PASS refund-pass: 19/20 successes, rate 0.950 [0.751, 0.999], requires rate >= 0.8; "
        "cost $0.0735, $0.00387 a success; set aside 1 (user_mistake:empty_message 1)"
    )
    assert format_live_line(_scenario(live_suite, "refund-never")) == (
        "FAIL refund-never: 0/6 successes, rate 0.000 [0.000, 0.393], requires pass@2 >= 0.9 "
        "(success rate >= 0.684); cost $0, no success"
    )
    assert format_live_line(_scenario(live_suite, "weather-two-cities")) == ""


# --- agentrig run --live: what the terminal shows -------------------------------------------

LIVE_FILE = """\
name: {name}
agent: {{builder: "refund_app:build"}}
user:
  persona: Dana, terse
  goal: a refund for her broken mug
  model: {{provider: openai, name: gpt-4.1-mini}}
judge:
  criteria:
    - {{id: refunded, check: {{tool_called: "issue_refund(order_id=A-1029)"}}}}
trials: {{require: {{metric: rate, at_least: 0.7}}, max: 20}}
"""
SCRIPTED_FILE = """\
name: scripted
turns:
  - user: ping
    model:
      - say: pong
    expect:
      final_response: pong
"""


@pytest.fixture
def live_results(monkeypatch: pytest.MonkeyPatch) -> dict[str, LiveResult]:
    """The live trials' results by scenario name: the CLI's live runner is replaced by one
    that returns them (the trials themselves are tested in tests/harness/live)."""
    results = {"refund-pass": live_pass(), "refund-budget": live_inconclusive()}

    async def run_live_suite(
        scenarios: list[Any], run: object = None, progress: Any = None, checked: bool = False
    ) -> list[ScenarioResult]:
        done = []
        for scenario in scenarios:
            result = live_scenario(scenario.name, results[scenario.name])
            if progress is not None:
                progress(result)
            done.append(result)
        return done

    # the real modules, these three functions replaced: what else the CLI imports from them
    # (the limits' parser, the providers' default cap) stays as it is
    monkeypatch.setattr(live_suite, "run_live_suite", run_live_suite)
    monkeypatch.setattr(live_suite, "preflight_live", lambda scenarios, run: None)
    monkeypatch.setattr(live_options, "live_run_options", lambda **_: object())
    return results


def _run_live(tmp_path: Path, names: list[str], *args: str) -> tuple[int, str]:
    folder = tmp_path / "scenarios"
    folder.mkdir()
    (folder / "scripted.scenario.yaml").write_text(SCRIPTED_FILE, encoding="utf-8")
    for name in names:
        text = LIVE_FILE.format(name=name)
        (folder / f"{name}.scenario.yaml").write_text(text, encoding="utf-8")
    reports = tmp_path / "reports"
    result = CliRunner().invoke(
        app, ["run", str(folder), "--live", "-n", "1", "--report-dir", str(reports), *args]
    )
    return result.exit_code, result.output


def test_run_live_counts_inconclusive_apart_and_shows_each_verdict(
    tmp_path: Path, live_results: dict[str, LiveResult]
) -> None:
    code, output = _run_live(tmp_path, ["refund-pass", "refund-budget"])
    assert code == 3, output
    flat = " ".join(output.split())
    assert "2 passed, 0 failed, 1 inconclusive in " in flat
    assert "scenario refund-budget (" in flat
    assert ".scenario.yaml:1) is inconclusive: [verdict] INCONCLUSIVE: partial:" in flat
    assert "rate: 0.500, exact [0.068, 0.932], Wilson [0.150, 0.850] at 95%" in flat
    assert (
        "PASS refund-pass: 19/20 successes, rate 0.950 [0.751, 0.999], requires rate >= 0.8; "
        "cost $0.0735, $0.00387 a success" in flat
    )
    assert "INCONCLUSIVE refund-budget: 2/4 successes" in flat
    markdown = (tmp_path / "reports" / "report.md").read_text(encoding="utf-8")
    assert "### Live scenarios" in markdown


def test_run_live_verbose_table_and_a_failed_verdict(
    tmp_path: Path, live_results: dict[str, LiveResult]
) -> None:
    live_results["refund-fail"] = live_fail()
    code, output = _run_live(tmp_path, ["refund-fail", "refund-budget"], "-v")
    assert code == 1, output
    assert "1 passed, 1 failed, 1 inconclusive in " in " ".join(output.split())
    table = output.split("\n\n", 1)[0]  # the table comes first, then the failures
    results = {
        words[1]: words[0]
        for words in (line.split() for line in table.splitlines())
        if len(words) > 1 and words[0] in ("PASS", "FAIL", "INCONCLUSIVE")
    }
    assert results == {"scripted": "PASS", "refund-fail": "FAIL", "refund-budget": "INCONCLUSIVE"}
    assert "3/10 successes" in output
    assert "rate 0.300 [0.067, 0.652]" in output

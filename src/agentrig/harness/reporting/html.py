"""A self-contained HTML report: inline CSS and JS, no external resources, every value escaped.

The page opens on a summary of the failures (``<nav class="failure-summary">``), each failed
scenario's first failure spelled out and linked to its card. Each scenario is a
``<details class="scenario" id="scenario-NAME" data-status="passed|failed">``, open when it
failed: why it failed first, then its file, its turns in one line each, the transcript (a tool
call rendered once, as ``name(key=value)``), and the invariants (the passing ones folded). The
page reads at 420 px and by keyboard. It filters scenarios by name or tag and can show failed
ones only; a URL fragment presets both, e.g. ``report.html#filter=tools`` or
``#filter=paris&failed=1``, and ``#scenario-NAME`` opens that card. Once its script has run, ``<body>`` carries
``data-report-ready="1"``. Wall times appear only in elements labelled "Wall time".

A live scenario's card also carries ``data-verdict="PASS|FAIL|INCONCLUSIVE"`` (an INCONCLUSIVE
one is ``data-status="failed"``, counted apart in the header) and a ``<section class="live">``:
a chart (inline SVG) of the success rate as a point, its exact interval as a bar on a 0-1 axis
and the threshold the requirement implies as a dashed line, coloured by the verdict; the
statistics, each metric with its interval, the cost by role, and every failed or set-aside
trial folded in a ``<details class="trial">`` with its criteria and transcript, then a folded
table of all trials. Pages without a live scenario are unchanged.
"""

from __future__ import annotations

import base64
import hashlib
from html import escape

from pydantic import JsonValue

from agentrig.harness.live_results import LiveResult, TrialRecord
from agentrig.harness.reporting.base import (
    ReportWriter,
    format_json,
    format_seconds,
    outcome_counts,
    register_writer,
    status_explained,
)
from agentrig.harness.reporting.live import (
    by_role,
    calls_text,
    format_confidence,
    format_interval,
    format_share,
    format_usd,
    rate_text,
    requirement_text,
    set_aside_text,
    shown_trials,
    trial_label,
    trial_text,
    verdict_reason,
)
from agentrig.harness.results import (
    Failure,
    InvariantOutcome,
    ScenarioResult,
    SuiteResult,
    TranscriptEntry,
    TurnResult,
)

__all__ = ["HtmlWriter", "format_usage"]

_CSS = """
:root { --ok: #1a7f37; --bad: #cf222e; --muted: #57606a; --line: #d0d7de; --soft: #f6f8fa;
  --focus: #0969da; }
* { box-sizing: border-box; }
body { font: 14px/1.45 system-ui, sans-serif; margin: 0 auto; max-width: 1100px; padding: .75rem;
  color: #1f2328; overflow-wrap: anywhere; }
[hidden] { display: none !important; }
h1 { margin: 0 0 .25rem; font-size: 1.4rem; }
h2 { font-size: 1.1rem; margin: .75rem 0 .25rem; }
h3 { font-size: 1rem; margin: .75rem 0 .25rem; }
a { color: var(--focus); }
:focus-visible { outline: 3px solid var(--focus); outline-offset: 2px; }
.counts span { margin-right: 1rem; font-weight: 600; }
.passed-count, .ok { color: var(--ok); }
.failed-count, .bad { color: var(--bad); }
.wall-time, .muted { color: var(--muted); font-variant-numeric: tabular-nums; }
nav.failure-summary { border: 1px solid var(--bad); border-radius: 6px; padding: .25rem .75rem;
  background: #fff8f7; }
nav.failure-summary ol { margin: .25rem 0; padding-left: 1.5rem; }
nav.failure-summary li { margin: .3rem 0; }
nav.failure-summary .first { display: block; color: #1f2328; white-space: pre-wrap; }
.controls { display: flex; gap: .5rem 1rem; align-items: center; margin: .75rem 0;
  flex-wrap: wrap; }
.controls input[type=search] { padding: .3rem .5rem; flex: 1 1 14rem; min-width: 0;
  max-width: 24rem; }
details.scenario { border: 1px solid var(--line); border-left: 6px solid var(--ok);
  border-radius: 6px; margin: .5rem 0; padding: .25rem .75rem; }
details.scenario[data-status=failed] { border-left-color: var(--bad); }
summary { cursor: pointer; }
details.scenario > summary { display: flex; gap: .25rem .75rem; align-items: baseline;
  flex-wrap: wrap; padding: .2rem 0; }
summary .name { font-weight: 600; }
.badge { font-size: .75rem; font-weight: 700; padding: 0 .4rem; border-radius: 4px; color: #fff;
  background: var(--ok); }
[data-status=failed] .badge { background: var(--bad); }
.tag { background: var(--soft); border: 1px solid var(--line); border-radius: 1rem;
  padding: 0 .5rem; font-size: .8rem; }
table { border-collapse: collapse; margin: .5rem 0; max-width: 100%; }
th, td { border: 1px solid var(--line); padding: .2rem .5rem; text-align: left;
  vertical-align: top; }
th { background: var(--soft); }
pre, .text { white-space: pre-wrap; overflow-wrap: anywhere; margin: 0; }
pre { background: var(--soft); padding: .3rem .5rem; border-radius: 4px; }
ol.turns { list-style: none; padding: 0; margin: .25rem 0; }
ol.turns li { margin: .15rem 0; }
ol.transcript { list-style: none; padding: 0; }
ol.transcript li { border-left: 3px solid var(--line); margin: .25rem 0; padding: .2rem .6rem; }
li.turn-marker { border: 0 !important; font-weight: 700; margin-top: .75rem !important; }
.who { font-weight: 600; margin-right: .5rem; }
.pos, .section { color: var(--muted); font-size: .8rem; margin-right: .5rem; }
code.call { white-space: pre-wrap; }
.kind-user { border-left-color: #0969da !important; }
.kind-assistant { border-left-color: #8250df !important; }
.kind-tool_call, .kind-tool_result { border-left-color: #bf8700 !important; }
li.is-error { border-left-color: var(--bad) !important; background: #ffebe9; }
section.failures { border-left: 3px solid var(--bad); padding-left: .6rem; }
ol.failures { padding-left: 1.25rem; }
ol.failures > li { margin: .5rem 0; }
.diff { display: grid; grid-template-columns: repeat(auto-fit, minmax(14rem, 1fr)); gap: .5rem; }
details.invariants > summary { color: var(--muted); margin: .5rem 0; }
"""

_LIVE_CSS = """
:root { --warn: #9a6700; }
.inconclusive-count { color: var(--warn); }
details.scenario[data-verdict=INCONCLUSIVE] { border-left-color: var(--warn); }
[data-verdict=INCONCLUSIVE] .badge { background: var(--warn); }
section.live { margin: .5rem 0; }
.verdict-reason { font-weight: 600; white-space: pre-wrap; }
svg.live-chart { display: block; width: 100%; max-width: 30rem; height: auto; margin: .25rem 0; }
svg.live-chart text { fill: var(--muted); font-size: 11px; }
svg.live-chart .axis { stroke: var(--muted); }
svg.live-chart .threshold { stroke: #1f2328; stroke-dasharray: 4 3; }
svg.live-chart .threshold-label { fill: #1f2328; }
svg.live-chart .interval { fill-opacity: .3; }
svg.live-chart .point { stroke: #fff; stroke-width: 2; }
.verdict-pass .mark { fill: var(--ok); stroke: var(--ok); }
.verdict-fail .mark { fill: var(--bad); stroke: var(--bad); }
.verdict-inconclusive .mark { fill: var(--warn); stroke: var(--warn); }
.live-grid { display: grid; grid-template-columns: repeat(auto-fit, minmax(16rem, 1fr));
  gap: 0 1rem; align-items: start; }
table.live-stats th { white-space: nowrap; }
details.trial { border: 1px solid var(--line); border-left: 3px solid var(--bad);
  border-radius: 4px; margin: .25rem 0; padding: .2rem .6rem; }
details.trial[data-trial-status=set_aside] { border-left-color: var(--warn); }
details.trials > summary { color: var(--muted); margin: .5rem 0; }
"""

_SCRIPT = """
(function () {
  "use strict";
  var filterBox = document.getElementById("filter");
  var failedOnly = document.getElementById("failed-only");
  var scenarios = Array.prototype.slice.call(document.querySelectorAll("details.scenario"));
  function matches(el, terms) {
    var name = (el.getAttribute("data-name") || "").toLowerCase();
    var tags = (el.getAttribute("data-tags") || "").toLowerCase().split(" ");
    return terms.every(function (term) {
      var inTags = tags.some(function (tag) { return tag.indexOf(term) >= 0; });
      return inTags || name.indexOf(term) >= 0;
    });
  }
  function apply() {
    var terms = filterBox.value.toLowerCase().split(/\\s+/).filter(Boolean);
    var shown = 0;
    scenarios.forEach(function (el) {
      var wanted = !failedOnly.checked || el.getAttribute("data-status") === "failed";
      el.hidden = !(wanted && matches(el, terms));
      if (!el.hidden) { shown += 1; }
    });
    document.getElementById("shown").textContent = String(shown);
  }
  function readHash() {
    var hash = window.location.hash.slice(1);
    var target = null;
    try { target = hash ? document.getElementById(decodeURIComponent(hash)) : null; }
    catch (error) { target = null; }
    if (target && target.matches("details.scenario")) {
      target.hidden = false;
      target.open = true;
      return;
    }
    var params = new URLSearchParams(hash);
    if (params.has("filter")) { filterBox.value = params.get("filter"); }
    if (params.has("failed")) { failedOnly.checked = params.get("failed") === "1"; }
    apply();
  }
  function setAll(open) { scenarios.forEach(function (el) { el.open = open; }); }
  filterBox.addEventListener("input", apply);
  failedOnly.addEventListener("change", apply);
  document.getElementById("expand-all").addEventListener("click", function () { setAll(true); });
  document.getElementById("collapse-all").addEventListener("click", function () { setAll(false); });
  window.addEventListener("hashchange", readHash);
  apply();
  readHash();
  document.body.setAttribute("data-report-ready", "1");
})();
"""

_SCRIPT_HASH = base64.b64encode(hashlib.sha256(_SCRIPT.encode("utf-8")).digest()).decode("ascii")
_CSP = (
    "default-src 'none'; style-src 'unsafe-inline'; "
    f"script-src 'sha256-{_SCRIPT_HASH}'; base-uri 'none'; form-action 'none'"
)


@register_writer
class HtmlWriter(ReportWriter):
    """Writes ``report.html``."""

    name = "html"
    filename = "report.html"

    def render(self, result: SuiteResult) -> str:
        """The HTML document."""
        parts = [_header(result), _failure_summary(result), _CONTROLS]
        parts += [_scenario(s) for s in result.scenarios]
        body = "\n".join(part for part in parts if part)
        live = any(scenario.live is not None for scenario in result.scenarios)
        css = _CSS + _LIVE_CSS if live else _CSS
        return (
            '<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
            f'<meta http-equiv="Content-Security-Policy" content="{_CSP}">\n'
            '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
            f"<title>{_e(_title(result))}</title>\n<style>{css}</style>\n</head>\n"
            f"<body>\n{body}\n<script>{_SCRIPT}</script>\n</body>\n</html>\n"
        )


def _e(value: object) -> str:
    return escape(str(value), quote=True)


def _title(result: SuiteResult) -> str:
    counts = ", ".join(f"{count} {label}" for count, label in outcome_counts(result))
    return f"agentrig report: {counts}"


def _anchor(scenario: ScenarioResult) -> str:
    return f"scenario-{scenario.title}".replace(" ", "-")


def _header(result: SuiteResult) -> str:
    counts = "".join(
        f'<span class="{label}-count">{count} {label}</span>'
        for count, label in outcome_counts(result)
    )
    counts += (
        f"<span>{result.total} total</span>"
        f'<span>showing <span id="shown">{result.total}</span></span>'
    )
    wall = f'<p class="wall-time">Wall time: {format_seconds(result.wall_time_s)} s</p>'
    heading = f'<h1>agentrig report</h1>\n<p class="counts">{counts}</p>'
    return f"<header>\n{heading}\n{wall}\n</header>"


def _failure_summary(result: SuiteResult) -> str:
    """Every failed scenario at the top, its first failure spelled out, linked to its card."""
    failed = [scenario for scenario in result.scenarios if not scenario.passed]
    if not failed:
        return ""
    items = "\n".join(_failure_link(scenario) for scenario in failed)
    inconclusive = sum(scenario.inconclusive for scenario in failed)
    heading = f"{len(failed) - inconclusive} failed"
    heading += f", {inconclusive} inconclusive" if inconclusive else ""
    return (
        '<nav class="failure-summary" aria-labelledby="failures-heading">\n'
        f'<h2 id="failures-heading" class="bad">{heading}</h2>\n'
        f"<ol>\n{items}\n</ol>\n</nav>"
    )


def _failure_link(scenario: ScenarioResult) -> str:
    first = scenario.failures[0]
    where = first.where()
    more = len(scenario.failures) - 1
    text = f"[{first.kind}] {first.message}" + (f" ({where})" if where else "")
    extra = f' <span class="muted">and {more} more</span>' if more else ""
    return (
        f'<li><a href="#{_e(_anchor(scenario))}">{_e(scenario.title)}</a>{extra}'
        f'<span class="first">{_e(text)}</span></li>'
    )


_CONTROLS = """<div class="controls">
<input type="search" id="filter" placeholder="Filter by name or tag" aria-label="Filter">
<label><input type="checkbox" id="failed-only"> Failed only</label>
<button type="button" id="expand-all">Expand all</button>
<button type="button" id="collapse-all">Collapse all</button>
</div>"""


def _scenario(scenario: ScenarioResult) -> str:
    attributes = (
        f'class="scenario" id="{_e(_anchor(scenario))}" data-status="{scenario.status}" '
        f'data-name="{_e(scenario.title)}" data-tags="{_e(" ".join(scenario.tags))}"'
    )
    if scenario.live is not None:
        attributes += f' data-verdict="{scenario.live.verdict}"'
    opened = "" if scenario.passed else " open"
    why = "Why it is inconclusive" if scenario.inconclusive else "Why it failed"
    parts = [_summary(scenario), _failures(scenario.failures, why), _about(scenario)]
    parts += [_live(scenario.live, scenario.passed)] if scenario.live is not None else []
    parts += [_turns(scenario), _transcript(scenario), _invariants(scenario.invariants)]
    return f"<details {attributes}{opened}>\n" + "\n".join(p for p in parts if p) + "\n</details>"


def _summary(scenario: ScenarioResult) -> str:
    badge = "PASS" if scenario.passed else "FAIL"
    tags = "".join(f'<span class="tag">{_e(tag)}</span>' for tag in scenario.tags)
    outcome = ""
    if scenario.turns:
        outcome = f'<span class="muted">{_e(status_explained(scenario, scenario.turns[-1]))}</span>'
    if scenario.live is not None:
        live = scenario.live
        badge = live.verdict
        outcome = (
            f'<span class="muted">{live.successes}/{live.trials} successes · rate '
            f"{format_share(live.rate)} {format_interval(*live.exact)}</span>"
        )
    wall = f'<span class="wall-time">Wall time: {format_seconds(scenario.wall_time_s)} s</span>'
    return (
        f'<summary><span class="badge">{badge}</span><span class="name">{_e(scenario.title)}</span>'
        f"{outcome}{tags}{wall}</summary>"
    )


def _about(scenario: ScenarioResult) -> str:
    description = (
        f'<p class="description">{_e(scenario.description)}</p>\n' if scenario.description else ""
    )
    return f'{description}<p class="where">File: <code>{_e(scenario.location)}</code></p>'


def _turns(scenario: ScenarioResult) -> str:
    """One compact line a turn: status (and why it failed), stop reason, steps, usage, cost."""
    if not scenario.turns:
        return ""
    items = "\n".join(f"<li>{_turn_line(scenario, turn)}</li>" for turn in scenario.turns)
    return f'<h3>Turns</h3>\n<ol class="turns">\n{items}\n</ol>'


def _turn_line(scenario: ScenarioResult, turn: TurnResult) -> str:
    status = status_explained(scenario, turn)
    colour = "bad" if (turn.status or "").startswith("failed") else ""
    parts = [
        f"<strong>Turn {turn.index}</strong>",
        f'<span class="{colour}">{_e(status)}</span>' if colour else _e(status),
        f"stop: {_e(turn.stop_reason or '-')}",
        f"{turn.steps} step{'' if turn.steps == 1 else 's'}",
        _e(format_usage(turn.usage)),
    ]
    if turn.cost:
        parts.append(_e(f"cost {turn.cost:.6g}"))
    return " · ".join(part for part in parts if part)


def format_usage(usage: dict[str, int]) -> str:
    """Usage in a few words, only the counters that are not zero: ``"tokens: 180 in, 28 out"``."""
    labels = {"input_tokens": "in", "input": "in", "output_tokens": "out", "output": "out"}
    shown = [
        f"{value:,} {labels.get(key, key.removesuffix('_tokens').replace('_', ' '))}"
        for key, value in sorted(usage.items(), key=lambda item: _usage_order(item[0]))
        if value and key != "total"
    ]
    return f"tokens: {', '.join(shown)}" if shown else "no tokens"


def _usage_order(key: str) -> tuple[int, str]:
    order = ("input_tokens", "input", "output_tokens", "output")
    return (order.index(key) if key in order else len(order), key)


def _transcript(scenario: ScenarioResult) -> str:
    if not scenario.transcript:
        return ""
    items: list[str] = []
    turn = 0
    for entry in scenario.transcript:
        if entry.turn != turn:
            turn = entry.turn
            items.append(f'<li class="turn-marker">Turn {turn}</li>')
        items.append(_entry(entry))
    return '<h3>Transcript</h3>\n<ol class="transcript">\n' + "\n".join(items) + "\n</ol>"


def _entry(entry: TranscriptEntry) -> str:
    classes = f"entry kind-{entry.kind}" + (" is-error" if entry.is_error else "")
    kind = entry.kind.replace("_", " ")
    who = kind if entry.args is not None else kind + (f" {entry.name}" if entry.name else "")
    meta = f'<span class="who">{_e(who)}</span>'
    meta += f'<span class="pos">step {entry.step}</span>' if entry.step is not None else ""
    meta += f'<span class="section">{_e(entry.section)}</span>' if entry.section else ""
    meta += '<span class="bad">error</span>' if entry.is_error else ""
    if entry.args is not None:  # a tool call: one rendering, name(key=value, ...)
        body = (
            f'<div><code class="call">{_e(_call_text(entry.name or "", entry.args))}</code></div>'
        )
    else:
        body = f'<div class="text">{_e(entry.text)}</div>' if entry.text else ""
    return f'<li class="{_e(classes)}" data-kind="{_e(entry.kind)}">{meta}{body}</li>'


def _call_text(name: str, args: dict[str, JsonValue]) -> str:
    """``get_weather(city="Paris", units="C")``: keys sorted, values as JSON."""
    inner = ", ".join(f"{key}={format_json(args[key])}" for key in sorted(args))
    return f"{name}({inner})"


def _invariants(invariants: tuple[InvariantOutcome, ...]) -> str:
    """Failed invariants in a table; the passing ones folded."""
    if not invariants:
        return ""
    failed = [inv for inv in invariants if inv.failures]
    passed = [inv for inv in invariants if not inv.failures]
    parts: list[str] = []
    if failed:
        rows = [[_e(inv.name), str(inv.checks), str(inv.failures)] for inv in failed]
        parts.append(
            "<h3>Failed invariants</h3>\n" + _table(("Invariant", "Checks", "Failures"), rows)
        )
    if passed:
        checks = sum(inv.checks for inv in passed)
        rows = [[_e(inv.name), str(inv.checks)] for inv in passed]
        parts.append(
            f'<details class="invariants"><summary>{len(passed)} invariant'
            f"{'' if len(passed) == 1 else 's'} passed ({checks:,} checks)</summary>\n"
            + _table(("Invariant", "Checks"), rows)
            + "\n</details>"
        )
    return "\n".join(parts)


def _table(headers: tuple[str, ...], rows: list[list[str]]) -> str:
    head = "".join(f"<th>{h}</th>" for h in headers)
    body = "".join("<tr>" + "".join(f"<td>{c}</td>" for c in row) + "</tr>" for row in rows)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def _failures(failures: tuple[Failure, ...], heading: str = "Why it failed") -> str:
    if not failures:
        return ""
    items = "\n".join(_failure(failure) for failure in failures)
    return (
        f'<section class="failures"><h3 class="bad">{heading}</h3>\n'
        f'<ol class="failures">\n{items}\n</ol></section>'
    )


def _failure(failure: Failure) -> str:
    details = [failure.where()]
    details += [f"field {failure.field}"] if failure.field else []
    details += [f"invariant {failure.invariant}"] if failure.invariant else []
    where = "; ".join(d for d in details if d)
    head = f'<span class="bad">{_e(failure.kind)}</span>' + (f" · {_e(where)}" if where else "")
    message = f'<div class="text message">{_e(failure.message)}</div>'
    return f"<li>{head}{message}{_diff(failure)}</li>"


def _diff(failure: Failure) -> str:
    if failure.expected is None and failure.observed is None:
        return ""
    expected = _e(format_json(failure.expected, indent=2))
    observed = _e(format_json(failure.observed, indent=2))
    return (
        f'<div class="diff"><div>Expected<pre class="expected">{expected}</pre></div>'
        f'<div>Observed<pre class="observed">{observed}</pre></div></div>'
    )


def _live(live: LiveResult, passed: bool) -> str:
    """A live scenario's verdict, chart, statistics, metrics, costs and trials (the reason for
    the verdict only when it passed: a failed card opens on it)."""
    decided = "a sequential test" if live.decided_by == "sequential" else "the interval"
    stats = [
        ("Successes", f"{live.successes} of {live.trials} counted trial(s), decided by {decided}"),
        ("Rate", rate_text(live)),
        ("Requirement", requirement_text(live)),
        ("Set aside", set_aside_text(live)),
        ("Discarded", f"{live.discarded} (finished after the verdict)"),
        ("Model calls", calls_text(live.model_calls)),
        ("Replayed trials", str(live.replayed_trials)),
    ]
    if live.partial is not None:
        stats.insert(0, ("Stopped early", live.partial))
    rows = "".join(f"<tr><th>{label}</th><td>{_e(text)}</td></tr>" for label, text in stats)
    metrics = [
        [
            _e(m.metric),
            format_share(m.value)
            + (' <span class="muted">(k &gt; trials)</span>' if m.value is None else ""),
            format_interval(m.low, m.high),
        ]
        for m in live.metrics
    ]
    interval = f"Interval ({format_confidence(live.confidence)})"
    costs = [
        [role.replace("_", " "), _e(format_usd(getattr(live.cost, role)))] for role in _COST_ROWS
    ]
    grid = [
        f'<div><table class="live-stats"><tbody>{rows}</tbody></table></div>',
        "<div>"
        + (_table(("Metric", "Estimate", interval), metrics) if metrics else "")
        + _table(("Cost", "USD"), costs)
        + "</div>",
    ]
    parts = [
        f'<section class="live"><h3>Verdict: {_e(live.verdict)}</h3>',
        f'<p class="verdict-reason">{_e(verdict_reason(live))}</p>' if passed else "",
        _chart(live),
        '<div class="live-grid">' + "".join(grid) + "</div>",
        _trials(live),
        "</section>",
    ]
    return "\n".join(part for part in parts if part)


_COST_ROWS = ("agent", "user", "judge", "total", "per_success")

# The chart's geometry, in SVG user units: the 0-1 axis runs from _LEFT to _LEFT + _SPAN.
_WIDTH, _HEIGHT, _LEFT, _SPAN, _AXIS_Y = 360, 64, 14, 332, 40


def _x(share: float) -> str:
    return f"{_LEFT + min(max(share, 0.0), 1.0) * _SPAN:.1f}"


def _chart(live: LiveResult) -> str:
    """The success rate as a point, its exact interval as a bar on a 0-1 axis, the threshold as
    a dashed line; coloured by the verdict (inline SVG, no script)."""
    low, high = live.exact
    rate = "no trial counted" if live.rate is None else f"success rate {live.rate:.3f}"
    label = (
        f"{live.verdict}: {rate}, exact {format_confidence(live.confidence)} interval "
        f"{low:.3f} to {high:.3f}, threshold {live.threshold:.3f}"
    )
    ticks = "".join(
        f'<line class="axis" x1="{_x(t)}" y1="{_AXIS_Y}" x2="{_x(t)}" y2="{_AXIS_Y + 4}"/>'
        f'<text x="{_x(t)}" y="{_AXIS_Y + 16}" text-anchor="middle">{t:g}</text>'
        for t in (0, 0.25, 0.5, 0.75, 1)
    )
    width = max(float(_x(high)) - float(_x(low)), 1.0)
    marks = (
        f'<rect class="mark interval" x="{_x(low)}" y="{_AXIS_Y - 14}" width="{width:.1f}" '
        f'height="10" rx="2"/>'
    )
    if live.rate is not None:
        marks += f'<circle class="mark point" cx="{_x(live.rate)}" cy="{_AXIS_Y - 9}" r="5.5"/>'
    threshold = _x(live.threshold)
    right = live.threshold > 0.6  # the label reads leftwards near the right end
    marks += (
        f'<line class="threshold" x1="{threshold}" y1="4" x2="{threshold}" y2="{_AXIS_Y + 4}"/>'
        f'<text class="threshold-label" x="{float(threshold) + (-4 if right else 4):.1f}" y="11" '
        f'text-anchor="{"end" if right else "start"}">threshold {live.threshold:.3f}</text>'
    )
    return (
        f'<svg class="live-chart verdict-{live.verdict.lower()}" viewBox="0 0 {_WIDTH} {_HEIGHT}" '
        f'width="{_WIDTH}" height="{_HEIGHT}" role="img" aria-label="{_e(label)}">'
        f"<title>{_e(label)}</title>"
        f'<line class="axis" x1="{_x(0)}" y1="{_AXIS_Y}" x2="{_x(1)}" y2="{_AXIS_Y}"/>'
        f"{ticks}{marks}</svg>"
    )


def _trials(live: LiveResult) -> str:
    """Each failed or set-aside trial folded with its criteria and transcript, then a folded
    table of every trial."""
    shown = shown_trials(live)
    parts = [f"<h3>Trials ({len(live.records)} run, {len(shown)} failed or set aside)</h3>"]
    parts += [_trial(record) for record in shown]
    if live.records:
        rows = [
            [
                _e(trial_label(record)),
                _e(
                    record.status.replace("_", " ")
                    + (f": {record.set_aside}" if record.set_aside else "")
                ),
                "yes" if record.counted else "no",
                f'<span class="text">{_e(record.reason)}</span>',
                _e(format_usd(sum(record.cost.values()))),
                _e(calls_text(record.calls)),
                "yes" if record.replayed else "no",
            ]
            for record in live.records
        ]
        headers = ("Trial", "Status", "Counted", "Reason", "Cost", "Model calls", "Replayed")
        parts.append(
            f'<details class="trials"><summary>All {len(live.records)} trials</summary>\n'
            + _table(headers, rows)
            + "\n</details>"
        )
    return "\n".join(parts)


def _trial(record: TrialRecord) -> str:
    summary = f"<summary>{_e(trial_text(record))}</summary>"
    parts = [summary]
    if record.criteria:
        rows = [
            [
                _e(c.id),
                _e(c.kind),
                _e(c.outcome),
                f'<span class="text">{_e(c.detail)}</span>',
                _e(", ".join(c.votes)),
            ]
            for c in record.criteria
        ]
        parts.append(_table(("Criterion", "Kind", "Outcome", "Detail", "Votes"), rows))
    cost = ", ".join(f"{role} {format_usd(amount)}" for role, amount in by_role(record.cost))
    parts.append(f'<p class="muted">seed {record.seed} · cost {_e(cost or "none")}</p>')
    if record.transcript:
        parts.append(f'<pre class="trial-transcript">{_e(chr(10).join(record.transcript))}</pre>')
    else:
        parts.append('<p class="muted">No transcript was recorded.</p>')
    return (
        f'<details class="trial" data-trial-status="{_e(record.status)}">'
        + "\n".join(parts)
        + "</details>"
    )

"""A self-contained HTML report: inline CSS and JS, no external resources, every value escaped.

Each scenario is a ``<details class="scenario" id="scenario-NAME" data-status="passed|failed">``
with its turns, transcript, invariants and failures. The page filters scenarios by name or tag
and can show failed ones only; a URL fragment presets both, e.g. ``report.html#filter=tools``
or ``#filter=paris&failed=1``. Once its script has run, ``<body>`` carries
``data-report-ready="1"``. Wall times appear only in elements labelled "Wall time".
"""

from __future__ import annotations

import base64
import hashlib
from html import escape

from agentrig.harness.reporting.base import (
    ReportWriter,
    format_json,
    format_seconds,
    register_writer,
)
from agentrig.harness.results import (
    Failure,
    InvariantOutcome,
    ScenarioResult,
    SuiteResult,
    TranscriptEntry,
    TurnResult,
)

__all__ = ["HtmlWriter"]

_CSS = """
:root { --ok: #1a7f37; --bad: #cf222e; --muted: #57606a; --line: #d0d7de; --soft: #f6f8fa; }
* { box-sizing: border-box; }
body { font: 14px/1.45 system-ui, sans-serif; margin: 0 auto; max-width: 1100px; padding: 1rem;
  color: #1f2328; }
[hidden] { display: none !important; }
h1 { margin: 0 0 .25rem; font-size: 1.5rem; }
.counts span { margin-right: 1rem; font-weight: 600; }
.passed-count, .ok { color: var(--ok); }
.failed-count, .bad { color: var(--bad); }
.wall-time { color: var(--muted); font-variant-numeric: tabular-nums; }
.controls { display: flex; gap: 1rem; align-items: center; margin: .75rem 0; flex-wrap: wrap; }
.controls input[type=search] { padding: .3rem .5rem; min-width: 18rem; }
details.scenario { border: 1px solid var(--line); border-left: 6px solid var(--ok);
  border-radius: 6px; margin: .5rem 0; padding: .25rem .75rem; }
details.scenario[data-status=failed] { border-left-color: var(--bad); }
summary { cursor: pointer; display: flex; gap: .75rem; align-items: baseline; flex-wrap: wrap; }
summary .name { font-weight: 600; }
.badge { font-size: .75rem; font-weight: 700; padding: 0 .4rem; border-radius: 4px; color: #fff;
  background: var(--ok); }
[data-status=failed] .badge { background: var(--bad); }
.tag { background: var(--soft); border: 1px solid var(--line); border-radius: 1rem;
  padding: 0 .5rem; font-size: .8rem; }
table { border-collapse: collapse; margin: .5rem 0; }
th, td { border: 1px solid var(--line); padding: .2rem .5rem; text-align: left;
  vertical-align: top; }
th { background: var(--soft); }
pre, .text { white-space: pre-wrap; overflow-wrap: anywhere; margin: 0; }
pre { background: var(--soft); padding: .3rem .5rem; border-radius: 4px; }
ol.transcript { list-style: none; padding: 0; }
ol.transcript li { border-left: 3px solid var(--line); margin: .25rem 0; padding: .2rem .6rem; }
li.turn-marker { border: 0 !important; font-weight: 700; margin-top: .75rem !important; }
.who { font-weight: 600; margin-right: .5rem; }
.pos, .section { color: var(--muted); font-size: .8rem; margin-right: .5rem; }
.kind-user { border-left-color: #0969da !important; }
.kind-assistant { border-left-color: #8250df !important; }
.kind-tool_call, .kind-tool_result { border-left-color: #bf8700 !important; }
li.is-error { border-left-color: var(--bad) !important; background: #ffebe9; }
.diff { display: grid; grid-template-columns: 1fr 1fr; gap: .5rem; }
ol.failures > li { margin: .5rem 0; }
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
    var params = new URLSearchParams(window.location.hash.slice(1));
    if (params.has("filter")) { filterBox.value = params.get("filter"); }
    if (params.has("failed")) { failedOnly.checked = params.get("failed") === "1"; }
  }
  function setAll(open) { scenarios.forEach(function (el) { el.open = open; }); }
  filterBox.addEventListener("input", apply);
  failedOnly.addEventListener("change", apply);
  document.getElementById("expand-all").addEventListener("click", function () { setAll(true); });
  document.getElementById("collapse-all").addEventListener("click", function () { setAll(false); });
  window.addEventListener("hashchange", function () { readHash(); apply(); });
  readHash();
  apply();
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
        body = "\n".join([_header(result), *(_scenario(s) for s in result.scenarios)])
        return (
            '<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
            f'<meta http-equiv="Content-Security-Policy" content="{_CSP}">\n'
            '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
            f"<title>{_e(_title(result))}</title>\n<style>{_CSS}</style>\n</head>\n"
            f"<body>\n{body}\n<script>{_SCRIPT}</script>\n</body>\n</html>\n"
        )


def _e(value: object) -> str:
    return escape(str(value), quote=True)


def _title(result: SuiteResult) -> str:
    return f"agentrig report: {result.passed_count} passed, {result.failed_count} failed"


def _header(result: SuiteResult) -> str:
    counts = (
        f'<span class="passed-count">{result.passed_count} passed</span>'
        f'<span class="failed-count">{result.failed_count} failed</span>'
        f"<span>{result.total} total</span>"
        f'<span>showing <span id="shown">{result.total}</span></span>'
    )
    wall = f'<p class="wall-time">Wall time: {format_seconds(result.wall_time_s)} s</p>'
    heading = f'<h1>agentrig report</h1>\n<p class="counts">{counts}</p>'
    return f"<header>\n{heading}\n{wall}\n{_CONTROLS}\n</header>"


_CONTROLS = """<div class="controls">
<input type="search" id="filter" placeholder="Filter by name or tag" aria-label="Filter">
<label><input type="checkbox" id="failed-only"> Failed only</label>
<button type="button" id="expand-all">Expand all</button>
<button type="button" id="collapse-all">Collapse all</button>
</div>"""


def _scenario(scenario: ScenarioResult) -> str:
    attributes = (
        f'class="scenario" id="scenario-{_e(scenario.name)}" data-status="{scenario.status}" '
        f'data-name="{_e(scenario.name)}" data-tags="{_e(" ".join(scenario.tags))}"'
    )
    opened = "" if scenario.passed else " open"
    parts = [_summary(scenario), _about(scenario), _turns(scenario.turns), _transcript(scenario)]
    parts += [_invariants(scenario.invariants), _failures(scenario.failures)]
    return f"<details {attributes}{opened}>\n" + "\n".join(p for p in parts if p) + "\n</details>"


def _summary(scenario: ScenarioResult) -> str:
    badge = "PASS" if scenario.passed else "FAIL"
    tags = "".join(f'<span class="tag">{_e(tag)}</span>' for tag in scenario.tags)
    wall = f'<span class="wall-time">Wall time: {format_seconds(scenario.wall_time_s)} s</span>'
    return (
        f'<summary><span class="badge">{badge}</span><span class="name">{_e(scenario.name)}</span>'
        f"{tags}{wall}</summary>"
    )


def _about(scenario: ScenarioResult) -> str:
    tags = ", ".join(scenario.tags) or "(none)"
    return (
        f'<p class="description">{_e(scenario.description)}</p>\n'
        f'<p class="where">File: <code>{_e(scenario.location)}</code> · Tags: {_e(tags)}</p>'
    )


def _table(headers: tuple[str, ...], rows: list[list[str]]) -> str:
    head = "".join(f"<th>{h}</th>" for h in headers)
    body = "".join("<tr>" + "".join(f"<td>{c}</td>" for c in row) + "</tr>" for row in rows)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def _turns(turns: tuple[TurnResult, ...]) -> str:
    if not turns:
        return ""
    headers = ("Turn", "User", "Status", "Stop reason", "Steps", "Final response", "Usage", "Cost")
    return "<h3>Turns</h3>\n" + _table(headers, [_turn_row(turn) for turn in turns])


def _turn_row(turn: TurnResult) -> list[str]:
    usage = ", ".join(f"{key}={value}" for key, value in sorted(turn.usage.items()))
    return [
        str(turn.index),
        f'<div class="text">{_e(turn.user)}</div>',
        _e(turn.status or "-"),
        _e(turn.stop_reason or "-"),
        str(turn.steps),
        f'<div class="text">{_e(turn.final_response)}</div>',
        _e(usage or "-"),
        _e(f"{turn.cost:.6g}"),
    ]


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
    who = entry.kind.replace("_", " ") + (f" {entry.name}" if entry.name else "")
    meta = f'<span class="who">{_e(who)}</span>'
    meta += f'<span class="pos">step {entry.step}</span>' if entry.step is not None else ""
    meta += f'<span class="section">{_e(entry.section)}</span>' if entry.section else ""
    meta += '<span class="bad">error</span>' if entry.is_error else ""
    args = (
        f'<pre class="args">{_e(format_json(entry.args, indent=2))}</pre>'
        if entry.args is not None
        else ""
    )
    text = f'<div class="text">{_e(entry.text)}</div>' if entry.text else ""
    return f'<li class="{_e(classes)}" data-kind="{_e(entry.kind)}">{meta}{args}{text}</li>'


def _invariants(invariants: tuple[InvariantOutcome, ...]) -> str:
    if not invariants:
        return ""
    rows = [
        [_e(inv.name), str(inv.checks), str(inv.failures), _verdict(inv.failures == 0)]
        for inv in invariants
    ]
    return "<h3>Invariants</h3>\n" + _table(("Invariant", "Checks", "Failures", "Result"), rows)


def _verdict(ok: bool) -> str:
    return '<span class="ok">✔ ok</span>' if ok else '<span class="bad">✘ failed</span>'


def _failures(failures: tuple[Failure, ...]) -> str:
    if not failures:
        return ""
    items = "\n".join(_failure(failure) for failure in failures)
    return f'<h3>Failures</h3>\n<ol class="failures">\n{items}\n</ol>'


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

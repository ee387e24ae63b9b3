"""The deterministic testing harness: scenario files run against a real agent with fakes at the
seams, checked after every step, reported, snapshotted, recorded and replayed.

The front door, for the names most users need::

    from agentrig.harness import load_scenarios, run_suite, write_reports

    result = run_suite(load_scenarios("scenarios/"))
    write_reports(result, "reports/")  # junit.xml, report.json, report.md, report.html
    assert result.passed

Every name is imported on first use, so ``import agentrig.harness`` loads nothing (nor does
``import agentrig``). The subpackages follow the pipeline, each depending only on those before it:

- ``scenarios`` the file format: model, call shorthand, YAML reader, loader, writer, selection,
  and the factory that builds the agent a scenario describes;
- ``checks`` invariants (base, registry, checker; the built-ins), ``expect:`` blocks,
  tool-call trajectories, and the checked run of one execution;
- ``property`` hypothesis strategies, ``play()``, the state machine, the profiles;
- ``cassettes`` record and replay at the inference boundary, HTTP cassettes, the network block;
- ``reporting`` report writers, the terminal text of failures, transcripts;
- ``suites`` a suite in worker processes, Ctrl-C handling, plugin modules.

At the top: ``runner`` (one scenario), ``results``, ``snapshot``, ``errors``, ``cli`` (the
``agentrig`` command) and ``pytest_plugin``.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from agentrig.harness.cassettes import (
        Cassette,
        CassetteConversionError,
        CassetteError,
        CassetteFileError,
        CassetteMismatchError,
        CassetteNotFoundError,
        CassetteProvider,
        RecordMode,
        UnusedInteractionsError,
        cassette_provider,
        cassette_to_scenario,
        load_cassette,
        save_cassette,
    )
    from agentrig.harness.cassettes.http import use_http_cassette
    from agentrig.harness.checks.invariant import (
        Invariant,
        InvariantChecker,
        Observation,
        Violation,
        invariant_names,
        register_invariant,
        select_invariants,
        unregister_invariant,
    )
    from agentrig.harness.errors import (
        DataFileError,
        InvariantError,
        PluginError,
        ScenarioFileError,
        ShardMergeError,
        SuiteError,
    )
    from agentrig.harness.property.play import Playback, play
    from agentrig.harness.property.stateful import AgentMachine
    from agentrig.harness.reporting.base import (
        ReportWriter,
        register_writer,
        unregister_writer,
        write_reports,
        writer_names,
    )
    from agentrig.harness.results import (
        Failure,
        InvariantOutcome,
        ScenarioResult,
        SuiteResult,
        TranscriptEntry,
        TurnResult,
        normalized,
    )
    from agentrig.harness.runner import run_scenario
    from agentrig.harness.scenarios.loader import (
        load_scenario,
        load_scenarios,
        load_suite,
        scenario_json_schema,
    )
    from agentrig.harness.scenarios.model import Scenario
    from agentrig.harness.scenarios.writer import scenario_to_yaml, write_scenario
    from agentrig.harness.snapshot import (
        AgentrigSnapshotExtension,
        state_to_text,
        transcript_to_text,
    )
    from agentrig.harness.suites.plugins import load_plugins
    from agentrig.harness.suites.shards import merge_shards
    from agentrig.harness.suites.suite import run_suite

_EXPORTS: dict[str, str] = {
    # scenario files
    "Scenario": "agentrig.harness.scenarios.model",
    "DataFileError": "agentrig.harness.errors",
    "ScenarioFileError": "agentrig.harness.errors",
    "load_scenario": "agentrig.harness.scenarios.loader",
    "load_scenarios": "agentrig.harness.scenarios.loader",
    "load_suite": "agentrig.harness.scenarios.loader",
    "scenario_json_schema": "agentrig.harness.scenarios.loader",
    "scenario_to_yaml": "agentrig.harness.scenarios.writer",
    "write_scenario": "agentrig.harness.scenarios.writer",
    # running
    "run_scenario": "agentrig.harness.runner",
    "run_suite": "agentrig.harness.suites.suite",
    "load_plugins": "agentrig.harness.suites.plugins",
    "PluginError": "agentrig.harness.errors",
    "SuiteError": "agentrig.harness.errors",
    "merge_shards": "agentrig.harness.suites.shards",
    "ShardMergeError": "agentrig.harness.errors",
    # results
    "Failure": "agentrig.harness.results",
    "InvariantOutcome": "agentrig.harness.results",
    "ScenarioResult": "agentrig.harness.results",
    "SuiteResult": "agentrig.harness.results",
    "TranscriptEntry": "agentrig.harness.results",
    "TurnResult": "agentrig.harness.results",
    "normalized": "agentrig.harness.results",
    # reports
    "ReportWriter": "agentrig.harness.reporting.base",
    "register_writer": "agentrig.harness.reporting.base",
    "unregister_writer": "agentrig.harness.reporting.base",
    "write_reports": "agentrig.harness.reporting.base",
    "writer_names": "agentrig.harness.reporting.base",
    # invariants
    "Invariant": "agentrig.harness.checks.invariant",
    "InvariantError": "agentrig.harness.errors",
    "InvariantChecker": "agentrig.harness.checks.invariant",
    "Observation": "agentrig.harness.checks.invariant",
    "Violation": "agentrig.harness.checks.invariant",
    "invariant_names": "agentrig.harness.checks.invariant",
    "register_invariant": "agentrig.harness.checks.invariant",
    "select_invariants": "agentrig.harness.checks.invariant",
    "unregister_invariant": "agentrig.harness.checks.invariant",
    # snapshots (syrupy is imported with them)
    "AgentrigSnapshotExtension": "agentrig.harness.snapshot",
    "state_to_text": "agentrig.harness.snapshot",
    "transcript_to_text": "agentrig.harness.snapshot",
    # record and replay
    "Cassette": "agentrig.harness.cassettes",
    "CassetteConversionError": "agentrig.harness.cassettes",
    "CassetteError": "agentrig.harness.cassettes",
    "CassetteFileError": "agentrig.harness.cassettes",
    "CassetteMismatchError": "agentrig.harness.cassettes",
    "CassetteNotFoundError": "agentrig.harness.cassettes",
    "CassetteProvider": "agentrig.harness.cassettes",
    "RecordMode": "agentrig.harness.cassettes",
    "UnusedInteractionsError": "agentrig.harness.cassettes",
    "cassette_provider": "agentrig.harness.cassettes",
    "cassette_to_scenario": "agentrig.harness.cassettes",
    "load_cassette": "agentrig.harness.cassettes",
    "save_cassette": "agentrig.harness.cassettes",
    "use_http_cassette": "agentrig.harness.cassettes.http",
    # property tests (hypothesis is imported with them)
    "AgentMachine": "agentrig.harness.property.stateful",
    "Playback": "agentrig.harness.property.play",
    "play": "agentrig.harness.property.play",
}

__all__ = [
    "AgentMachine",
    "AgentrigSnapshotExtension",
    "Cassette",
    "CassetteConversionError",
    "CassetteError",
    "CassetteFileError",
    "CassetteMismatchError",
    "CassetteNotFoundError",
    "CassetteProvider",
    "DataFileError",
    "Failure",
    "Invariant",
    "InvariantChecker",
    "InvariantError",
    "InvariantOutcome",
    "Observation",
    "Playback",
    "PluginError",
    "RecordMode",
    "ReportWriter",
    "Scenario",
    "ScenarioFileError",
    "ScenarioResult",
    "ShardMergeError",
    "SuiteError",
    "SuiteResult",
    "TranscriptEntry",
    "TurnResult",
    "UnusedInteractionsError",
    "Violation",
    "cassette_provider",
    "cassette_to_scenario",
    "invariant_names",
    "load_cassette",
    "load_plugins",
    "load_scenario",
    "load_scenarios",
    "load_suite",
    "merge_shards",
    "normalized",
    "play",
    "register_invariant",
    "register_writer",
    "run_scenario",
    "run_suite",
    "save_cassette",
    "scenario_json_schema",
    "scenario_to_yaml",
    "select_invariants",
    "state_to_text",
    "transcript_to_text",
    "unregister_invariant",
    "unregister_writer",
    "use_http_cassette",
    "write_reports",
    "write_scenario",
    "writer_names",
]


def __getattr__(name: str) -> object:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'agentrig.harness' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # imported once: later reads do not come back here
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})

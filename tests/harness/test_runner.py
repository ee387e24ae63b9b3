"""The scenario runner: scripts, expectations, invariants and Python-built agents."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from pathlib import Path
from textwrap import dedent
from typing import Any

import pytest

from agentrig import AgentBuilder, tool
from agentrig.harness.errors import ScenarioFileError
from agentrig.harness.results import ScenarioResult
from agentrig.harness.runner import run_scenario, unloadable_result
from agentrig.harness.scenarios.loader import load_scenario
from agentrig.harness.suites.suite import run_suite


def scenario_file(tmp_path: Path, text: str, name: str = "case.scenario.yaml") -> Path:
    path = tmp_path / name
    path.write_text(dedent(text), encoding="utf-8")
    return path


def run(tmp_path: Path, text: str) -> ScenarioResult:
    return run_scenario(load_scenario(scenario_file(tmp_path, text)))


def line_of(path: Path, needle: str, occurrence: int = 1) -> int:
    lines = path.read_text().splitlines()
    hits = [number for number, line in enumerate(lines, start=1) if needle in line]
    return hits[occurrence - 1]


TOOL_AGENT = """\
    name: adder
    agent:
      budget: {max_steps: 5}
      tools:
        add:
          scripted: true  # a stand-in also when a builder is given
          params: {a: integer, b: integer}
          replies:
            - return: 3
    turns:
      - user: add 1 and 2
        model:
          - call: add(a=1, b=2)
          - say: it is 3
        expect:
          status: completed
          final_response: it is 3
          steps: 2
          messages: [user, assistant]
"""


def test_passing_scenario_records_turns_transcript_and_invariants(tmp_path: Path) -> None:
    result = run(tmp_path, TOOL_AGENT)
    assert result.passed, result.failures
    assert [t.status for t in result.turns] == ["completed"]
    kinds = [entry.kind for entry in result.transcript]
    assert kinds == ["user", "tool_call", "tool_result", "assistant", "stop"]
    assert all(outcome.checks > 0 for outcome in result.invariants)
    assert len(result.invariants) == 17


def test_a_script_that_runs_out_fails_naming_the_turn(tmp_path: Path) -> None:
    path = scenario_file(
        tmp_path,
        """\
        name: runs-out
        agent:
          tools:
            add: {replies: [{return: 3}]}
        turns:
          - user: hi
            model:
              - say: hello
          - user: again
            model:
              - call: add()
        """,
    )
    result = run_scenario(load_scenario(path))
    script = [f for f in result.failures if f.kind == "script"]
    assert len(script) == 1
    assert script[0].turn == 2
    assert "model call 2 was not scripted" in script[0].message
    assert script[0].location == f"{path}:{line_of(path, 'model:', 2)}"


def test_an_unused_scripted_reply_fails_pointing_at_its_line(tmp_path: Path) -> None:
    path = scenario_file(
        tmp_path,
        """\
        name: unused
        turns:
          - user: hi
            model:
              - say: hello
              - say: never played
        """,
    )
    result = run_scenario(load_scenario(path))
    [failure] = result.failures
    assert failure.kind == "script"
    assert "turn 1: scripted model reply 2 was never used" in failure.message
    assert failure.location == f"{path}:{line_of(path, 'never played')}"


def test_calling_a_tool_the_agent_lacks_is_a_script_failure(tmp_path: Path) -> None:
    text = """\
        name: missing-tool
        turns:
          - user: hi
            model:
              - call: nope(x=1)
              - say: done
            expect: {status: failed}
        """
    result = run(tmp_path, text)
    [failure] = result.failures
    assert failure.kind == "script"
    assert "calls tool 'nope', which the agent does not have" in failure.message
    listed = text.replace("expect: {status: failed}", "expect: {status: failed, errors: [nope]}")
    assert run(tmp_path, listed).passed


def test_a_wrong_expectation_reports_expected_observed_and_line(tmp_path: Path) -> None:
    path = scenario_file(tmp_path, TOOL_AGENT.replace("status: completed", "status: stopped"))
    result = run_scenario(load_scenario(path))
    [failure] = result.failures
    assert failure.kind == "expectation"
    assert failure.field == "expect.status"
    assert (failure.expected, failure.observed) == ("stopped", "completed")
    assert failure.location == f"{path}:{line_of(path, 'status: stopped')}"


def test_unused_sequence_tool_replies_and_subagent_turns_are_reported(tmp_path: Path) -> None:
    result = run(
        tmp_path,
        """\
        name: leftovers
        agent:
          tools:
            lookup:
              mode: sequence
              replies: [{return: a}, {return: b}]
          subagents:
            helper:
              model: [{say: child done}, {say: spare}]
        turns:
          - user: go
            model:
              - call: lookup()
              - call: spawn_subagent(subagent=helper, prompt=help)
              - say: ok
        """,
    )
    messages = sorted(f.message for f in result.failures)
    assert messages == [
        "subagent helper: scripted model reply 2 was never used",
        "tool lookup: scripted reply 2 was never used",
    ]


def test_an_agent_built_in_python_runs_against_a_scenario(tmp_path: Path) -> None:
    calls: list[tuple[int, int]] = []

    @tool
    def multiply(a: int, b: int) -> int:
        """Multiply two integers."""
        calls.append((a, b))
        return a * b

    path = scenario_file(
        tmp_path,
        """\
        name: python-agent
        turns:
          - user: 6 times 7?
            model:
              - call: multiply(a=6, b=7)
              - say: "42"
            expect:
              status: completed
              final_response: "42"
              tool_calls:
                calls:
                  - multiply(a=6, b=7)
        """,
    )
    builder = AgentBuilder.base().with_tools([multiply])
    result = run_scenario(load_scenario(path), builder=builder)
    assert result.passed, result.failures
    assert calls == [(6, 7)]
    assert "42" in [e.text for e in result.transcript if e.kind == "tool_result"]


def test_invariant_violations_become_failures(tmp_path: Path) -> None:
    from agentrig import HookContext, HookTrigger, Message, ToolResult

    def put_trace_in_messages(context: HookContext) -> HookContext:
        result = ToolResult(content="x", call_id="c1", tool_name="add")
        message = Message.tool(result).with_metadata(is_trace=True)
        state = context.state
        return context.with_state(state.with_messages(state.messages().appended(message)))

    path = scenario_file(tmp_path, TOOL_AGENT)
    builder = AgentBuilder.base().add_hook(put_trace_in_messages, HookTrigger.AFTER_STEP)
    result = run_scenario(load_scenario(path), builder=builder)
    invariants = {f.invariant for f in result.failures if f.kind == "invariant"}
    assert {"clean_messages", "tool_calls_paired"} <= invariants
    first = next(f for f in result.failures if f.invariant == "clean_messages")
    assert (first.turn, first.step) == (1, 1)
    assert "is a tool trace" in first.message


def test_the_same_scenario_gives_identical_results(tmp_path: Path) -> None:
    scenario = load_scenario(scenario_file(tmp_path, TOOL_AGENT))
    first = run_scenario(scenario).model_copy(update={"wall_time_s": 0.0})
    second = run_scenario(scenario).model_copy(update={"wall_time_s": 0.0})
    assert first == second


def test_tool_scripts_that_do_not_cover_a_call_are_script_failures(tmp_path: Path) -> None:
    text = """\
        name: tool-script-gaps
        agent:
          tools:
            once:
              mode: sequence
              replies: [{return: first}]
            weather:
              params: {city: string}
              replies:
                - when: {city: Paris}
                  return: sunny
        turns:
          - user: go
            model:
              - calls: [once(), once(), weather(city=Rome)]
              - say: done
            expect: {status: failed}
        """
    messages = " | ".join(f.message for f in run(tmp_path, text).failures)
    assert messages.count("turn 1, step 1:") == 2
    assert "tool 'once' was called more times than its sequence of replies" in messages
    assert "no scripted reply of tool 'weather' matches the call" in messages
    expected = text.replace("{status: failed}", "{status: failed, errors: [call 2, Rome]}")
    assert run(tmp_path, expected).passed


def test_an_unexpected_failed_status_names_the_recorded_errors(tmp_path: Path) -> None:
    result = run(
        tmp_path,
        """\
        name: broken
        agent:
          tools:
            save:
              replies:
                - raise: disk full
        turns:
          - user: save it
            model:
              - call: save()
              - say: saved
            expect: {status: completed}
        """,
    )
    [failure] = result.failures
    assert failure.field == "expect.status"
    assert (failure.expected, failure.observed) == ("completed", "failed")
    assert failure.message == "turn 1: expect.status: status is failed (error: disk full)"


def test_a_provider_error_that_ended_the_turn_is_named_beside_the_expectation(
    tmp_path: Path,
) -> None:
    result = run(
        tmp_path,
        """\
        name: rate-limited
        turns:
          - user: Weather in Paris?
            model:
              - fault: {status: 429, message: slow down}
              - say: It is sunny in Paris.
            expect: {final_response: It is sunny in Paris.}
        """,
    )
    failure = next(f for f in result.failures if f.field == "expect.final_response")
    assert failure.message == (
        "turn 1: expect.final_response: final response does not match "
        "(error: scripted fault: HTTP 429: slow down)"
    )
    assert failure.observed == ""


def test_an_unknown_invariant_points_at_the_invariants_field(tmp_path: Path) -> None:
    path = scenario_file(
        tmp_path,
        """\
        name: typo
        invariants: {exclude: [clean_mesages]}
        turns:
          - user: hi
            model: [{say: hello}]
        """,
    )
    [failure] = run_scenario(load_scenario(path)).failures
    assert failure.kind == "error"
    assert "clean_mesages" in failure.message
    assert failure.location == f"{path}:2"


def test_a_failed_check_points_at_the_exact_line_under_expect(tmp_path: Path) -> None:
    path = scenario_file(
        tmp_path,
        """\
        name: where
        turns:
          - user: hi
            model: [{say: hello}]
            expect:
              usage:
                input: 0
                output: 7
              messages:
                - user
                - {role: assistant, content: bye}
              sections:
                execution_buffer: [assistant]
        """,
    )
    failures = run_scenario(load_scenario(path)).failures
    located = {failure.field: failure.location for failure in failures}
    assert located == {
        "expect.usage.output": f"{path}:{line_of(path, 'output: 7')}",
        "expect.messages[1]": f"{path}:{line_of(path, 'content: bye')}",
        "expect.sections.execution_buffer": f"{path}:{line_of(path, 'execution_buffer')}",
    }


def test_an_empty_reply_is_rejected_when_loading_not_mid_run(tmp_path: Path) -> None:
    path = scenario_file(
        tmp_path,
        """\
        name: empty-reply
        turns:
          - user: hi
            model:
              - say: ""
              - error: ""
        """,
    )
    with pytest.raises(ScenarioFileError) as error:
        load_scenario(path)
    assert str(error.value).splitlines() == [
        f"{path}:5:14: turns[0].model[0].say: an empty reply has nothing to play: "
        "write some text or add a call (or a finish_reason: an answer of no text, which only "
        "the scenario endpoint plays)",
        f"{path}:6:16: turns[0].model[1].error: an error reply needs a message",
    ]


def test_a_section_name_that_looks_like_a_path_is_reported_not_a_crash(tmp_path: Path) -> None:
    path = scenario_file(
        tmp_path,
        """\
        name: odd-section
        turns:
          - user: hi
            model: [{say: hello}]
            expect:
              sections:
                "notes[x].v2[3]": []
        """,
    )
    [failure] = run_scenario(load_scenario(path)).failures
    assert failure.field == "expect.sections.notes[x].v2[3]"
    assert failure.location == f"{path}:{line_of(path, 'notes[x]')}"


def test_a_scenario_that_cannot_run_fails_alone_not_the_suite(tmp_path: Path) -> None:
    path = scenario_file(tmp_path, TOOL_AGENT)
    good = load_scenario(path)
    # A call the runtime refuses (NaN is not JSON), slipped past loading: the loader refuses it.
    reply = good.turns[0].model[0]
    call = reply.call.model_copy(update={"args": {"a": float("nan"), "b": 2}})  # type: ignore[union-attr]
    turn = good.turns[0].model_copy(
        update={"model": (reply.model_copy(update={"call": call}), *good.turns[0].model[1:])}
    )
    bad = good.model_copy(update={"name": "bad", "turns": (turn,)})
    result = run_suite([bad, good])
    failed, passed = result.scenarios
    assert passed.passed
    assert not failed.passed
    assert "turn 1: " in failed.failures[0].message
    assert "nan" in failed.failures[0].message
    assert failed.failures[0].location == f"{path}:{line_of(path, '- user: add 1 and 2')}"


def test_validate_refuses_what_run_would_refuse(tmp_path: Path) -> None:
    for args in ("{a: .nan, b: 2}", "{a: !!pairs [{x: 1}], b: 2}", "{a: .inf, b: 2}"):
        text = TOOL_AGENT.replace("call: add(a=1, b=2)", f"call: {{name: add, args: {args}}}")
        with pytest.raises(ScenarioFileError, match="not JSON data") as raised:
            load_scenario(scenario_file(tmp_path, text))
        assert raised.value.field == "turns[0].model[0].call.args.a"


WRONG_ARGUMENTS = """\
    name: wrong-arguments
    agent:
      tools:
        refund:
          params: {order_id: string}
          replies: [{return: refunded}]
    turns:
      - user: refund A100
        model:
          - call: refund(orderId=A100)
          - say: done
"""


def test_a_call_with_wrong_arguments_fails_a_turn_without_expectations(tmp_path: Path) -> None:
    path = scenario_file(tmp_path, WRONG_ARGUMENTS)
    [failure] = run_scenario(load_scenario(path)).failures
    assert failure.kind == "expectation"
    assert (failure.turn, failure.step, failure.field) == (1, 1, "expect.errors")
    assert "the call of tool 'refund' failed: invalid arguments" in failure.message
    assert "orderId" in failure.message
    assert "list the error under expect.errors" in failure.message
    assert failure.location == f"{path}:{line_of(path, 'call: refund')}"  # the call's own line
    error = "invalid arguments for tool 'refund': order_id: Field required; orderId: unexpected"
    assert (failure.expected, failure.observed) == ([], [f"{error} argument"])  # listed vs not
    listed = WRONG_ARGUMENTS + "        expect: {errors: [orderId]}\n"
    assert run(tmp_path, listed).passed


SUBAGENT_WRONG_ARGUMENTS = """\
    name: subagent-wrong-arguments
    agent:
      tools:
        refund:
          params: {order_id: string}
          replies: [{return: refunded}]
      subagents:
        clerk:
          model:
            - call: refund(orderId=A100)
            - say: done
    turns:
      - user: refund A100 via the clerk
        model:
          - call: spawn_subagent(subagent=clerk, prompt=refund A100)
          - say: done
"""


def test_a_subagents_failed_call_fails_the_turn_through_the_failed_spawn(tmp_path: Path) -> None:
    [failure] = run(tmp_path, SUBAGENT_WRONG_ARGUMENTS).failures
    assert failure.kind == "expectation"
    assert failure.message.startswith(
        "turn 1, step 1: the call of tool 'spawn_subagent' failed: Subagent 'clerk' failed: "
        "invalid arguments for tool 'refund'"
    )
    assert "orderId: unexpected argument" in failure.message
    listed = SUBAGENT_WRONG_ARGUMENTS + "        expect: {errors: [orderId]}\n"
    assert run(tmp_path, listed).passed


SUBAGENT_RAISES = """\
    name: subagent-raises
    agent:
      tools:
        save: {replies: [{raise: disk full}]}
        refund:
          params: {order_id: string}
          replies: [{return: refunded}]
      subagents:
        clerk:
          model:
            - call: spawn_subagent(subagent=archivist, prompt=save it)
            - say: the archivist could not save
        archivist:
          model:
            - call: save()
            - say: could not save
    turns:
      - user: save via the clerk
        model:
          - call: spawn_subagent(subagent=clerk, prompt=save)
          - say: the clerk could not save
"""


def test_a_spawn_that_failed_through_a_subagents_scripted_raise_is_intended(
    tmp_path: Path,
) -> None:
    result = run(tmp_path, SUBAGENT_RAISES)
    assert result.passed, [f.message for f in result.failures]
    assert "Subagent 'clerk' failed: Subagent 'archivist' failed: disk full" in str(
        result.transcript
    )


def test_a_subagents_other_failed_call_beside_a_scripted_raise_still_fails_the_turn(
    tmp_path: Path,
) -> None:
    text = SUBAGENT_RAISES.replace(
        "            - call: save()\n",
        "            - calls: [save(), refund(orderId=A1)]\n",
    )
    [failure] = run(tmp_path, text).failures
    assert failure.message.startswith(
        "turn 1, step 1: the call of tool 'spawn_subagent' failed: Subagent 'clerk' failed: "
        "Subagent 'archivist' failed: disk full; invalid arguments for tool 'refund'"
    )


def test_a_real_tool_that_raises_fails_the_turn_unless_expected(tmp_path: Path) -> None:
    @tool
    def lookup(order_id: str) -> str:
        """Look an order up."""
        raise LookupError(f"no order {order_id}")

    text = """\
        name: raising-real-tool
        turns:
          - user: where is A100?
            model:
              - call: lookup(order_id=A100)
              - say: I could not find it.
        """
    builder = AgentBuilder.base().with_tools([lookup])
    result = run_scenario(load_scenario(scenario_file(tmp_path, text)), builder=builder)
    [failure] = result.failures
    assert failure.message == (
        "turn 1, step 1: the call of tool 'lookup' failed: no order A100; "
        "list the error under expect.errors if this is intended"
    )
    expected = text.rstrip(" ") + "            expect: {errors: [no order A100]}\n"
    expected_run = run_scenario(load_scenario(scenario_file(tmp_path, expected)), builder=builder)
    assert expected_run.passed, expected_run.failures


def test_an_error_the_agent_loop_raises_fails_its_turn_where_the_turn_is(tmp_path: Path) -> None:
    # A listener's error is not the run's to handle (the loop lets it out): the turn fails
    from agentrig import EventBus
    from agentrig.events import AgentExecutionStarted

    def broken(event: AgentExecutionStarted) -> None:
        raise RuntimeError("the listener broke")

    bus = EventBus()
    bus.subscribe(AgentExecutionStarted, broken)
    path = scenario_file(
        tmp_path,
        """\
        name: listener
        turns:
          - user: hi
            model: [{say: hello}]
        """,
    )
    result = run_scenario(load_scenario(path), builder=AgentBuilder.base().with_events(bus))
    failure = result.failures[0]
    assert (failure.kind, failure.turn, failure.location) == ("error", 1, f"{path}:3")
    assert failure.message == (
        "turn 1: the agent loop raised EventListenerError: event listener "
        f"{__name__}.test_an_error_the_agent_loop_raises_fails_its_turn_where_the_turn_is"
        ".<locals>.broken raised RuntimeError on AgentExecutionStarted: the listener broke; a "
        "listener's error stops the run: fix the listener, or catch the error inside it"
    )


def test_an_agent_that_cannot_be_built_fails_with_the_time_the_attempt_took(
    tmp_path: Path,
) -> None:
    path = scenario_file(tmp_path, "name: x\nturns:\n  - user: hi\n    model: [{say: hello}]\n")
    scenario = load_scenario(path)
    started = time.perf_counter()
    result = run_scenario(scenario, builder=42)  # type: ignore[arg-type]
    took = time.perf_counter() - started
    [failure] = result.failures
    assert (failure.kind, failure.location) == ("error", f"{path}:1")
    assert failure.message == (
        "the agent could not be built: builder: expected an AgentBuilder, got int 42"
    )
    assert 0 < result.wall_time_s <= took  # measured within the call, as every result's is


def test_a_live_scenarios_builder_that_does_not_import_is_found_before_any_trial(
    tmp_path: Path,
) -> None:
    from agentrig.harness.runner import static_failures

    text = """\
        name: live-refund
        agent: {builder: "no_such_module_x:make"}
        user:
          persona: Dana, terse
          goal: a refund for her broken mug
          model: {provider: openai, name: gpt-4.1-mini}
        judge:
          criteria:
            - {id: refunded, check: {tool_called: "issue_refund(order_id=A-1029)"}}
        trials: {require: {metric: rate, at_least: 0.7}, max: 20}
        """
    path = scenario_file(tmp_path, text)
    [failure] = static_failures(load_scenario(path))
    assert (failure.kind, failure.location) == ("error", f"{path}:2")
    assert "no_such_module_x" in failure.message


def test_a_scripted_raise_reply_and_a_hook_block_are_intended(tmp_path: Path) -> None:
    result = run(
        tmp_path,
        """\
        name: intended-errors
        agent:
          tools:
            save: {replies: [{raise: disk full}]}
            wipe: {replies: [{return: wiped}]}
          hooks:
            - {on: before_tool_use, action: block_tool, tool: wipe, message: not allowed}
        turns:
          - user: save, then wipe
            model:
              - call: save()
              - call: wipe()
              - say: I could not do either.
        """,
    )
    assert result.passed, result.failures


# --- simulation fields on agentrig's own runtime --------------------------------------------------


def test_a_repeating_reply_answers_every_further_model_call_of_its_turn(tmp_path: Path) -> None:
    result = run(
        tmp_path,
        """\
        name: looping
        agent:
          budget: {max_steps: 4}
          tools:
            poll: {replies: [{return: not yet}]}
        turns:
          - user: wait for it
            model:
              - say: Polling.
                call: poll()
              - call: poll()
                repeat: true
            expect: {stop_reason: steps_limit, steps: 4}
        """,
    )
    assert result.passed, result.failures
    assert result.turns[0].steps == 4


def test_a_repeating_tool_call_the_agent_loops_on_fails_at_its_line(
    tmp_path: Path, bounded: Callable[..., Any]
) -> None:
    path = scenario_file(
        tmp_path,
        """\
        name: endless-poll
        agent:
          tools:
            poll: {replies: [{return: pending}]}
        turns:
          - user: wait for it
            model:
              - call: poll()
                repeat: true
        """,
    )
    result = bounded(lambda: run_scenario(load_scenario(path)))
    [failure] = result.failures
    assert failure.kind == "script"
    assert "the repeating reply 1 calls a tool and answered 25 more model calls" in failure.message
    assert "the agent loops on it" in failure.message
    assert failure.location == f"{path}:8"


def test_a_repeating_reply_that_never_answered_is_unused(tmp_path: Path) -> None:
    path = scenario_file(
        tmp_path,
        """\
        name: unused-repeat
        turns:
          - user: hi
            model:
              - say: hello
              - say: again
                repeat: true
        """,
    )
    [failure] = run_scenario(load_scenario(path)).failures
    assert (failure.kind, failure.message) == (
        "script",
        "turn 1: scripted model reply 2 was never used",
    )
    assert failure.location == f"{path}:6"


def test_a_subagents_repeating_reply_serves_every_spawn(tmp_path: Path) -> None:
    result = run(
        tmp_path,
        """\
        name: repeated-helper
        agent:
          subagents:
            helper:
              model: [{say: done, repeat: true}]
        turns:
          - user: delegate thrice
            model:
              - calls:
                  - spawn_subagent(subagent=helper, prompt=a)
                  - spawn_subagent(subagent=helper, prompt=b)
                  - spawn_subagent(subagent=helper, prompt=c)
              - say: all done
            expect: {status: completed, final_response: all done}
        """,
    )
    assert result.passed, result.failures


MIXTURE = """\
    name: coin
    SEED
    turns:
      - user: Flip.
        mixture:
          - {weight: 1, label: heads, model: [{say: heads}]}
          - {weight: 1, model: [{say: tails}]}
      - user: Thanks.
        model: [{say: bye}]
"""


def test_a_run_plays_the_mixture_branch_of_the_empty_session_key_and_names_it(
    tmp_path: Path,
) -> None:
    from agentrig.harness.scenarios.mixture import RUNTIME_SESSION_KEY, mixture_draw, pick_branch

    names = ("heads", "branch 2")
    seen = set()
    for seed in range(6):
        result = run(tmp_path, MIXTURE.replace("SEED", f"seed: {seed}"))
        assert result.passed, result.failures
        branch = pick_branch([1, 1], mixture_draw("coin", RUNTIME_SESSION_KEY, 1, seed))
        name = names[branch]
        assert [t.branch for t in result.turns] == [name, None]
        assert result.turns[0].final_response == ("heads" if branch == 0 else "tails")
        event = result.transcript[0]
        assert (event.kind, event.name, event.turn) == ("event", name, 1)
        again = run(tmp_path, MIXTURE.replace("SEED", f"seed: {seed}"))
        assert again.model_copy(update={"wall_time_s": 0.0}) == result.model_copy(
            update={"wall_time_s": 0.0}
        )
        seen.add(name)
    assert seen == set(names)


def test_a_failure_in_a_mixture_branch_points_at_that_branch(tmp_path: Path) -> None:
    text = MIXTURE.replace("SEED", "").replace("[{say: heads}]", "[{say: heads}, {say: more}]")
    text = text.replace("[{say: tails}]", "[{say: tails}, {say: more}]")
    path = scenario_file(tmp_path, text)
    scenario = load_scenario(path)
    branch = scenario.branch_for(1, "")
    assert branch is not None
    [failure] = run_scenario(scenario).failures
    assert failure.message == "turn 1: scripted model reply 2 was never used"
    assert failure.location == f"{path}:{6 + branch}"  # the line of the branch


@pytest.mark.parametrize(
    ("selection", "clean_messages_checked"),
    [
        ("{exclude: [history_grows, user_turn_sent]}", True),
        ("{exclude: [history_grows, clean_messages]}", False),
        ("{only: [clean_messages, user_turn_sent]}", True),
        ("{only: [script_not_exceeded]}", False),
    ],
)
def test_endpoint_invariant_names_are_accepted_and_left_to_the_endpoint(
    tmp_path: Path, selection: str, clean_messages_checked: bool
) -> None:
    result = run(
        tmp_path,
        f"""\
            name: both-players
            invariants: {selection}
            turns:
              - user: hi
                model: [{{say: hello}}]
            """,
    )
    assert result.passed, result.failures
    names = {outcome.name for outcome in result.invariants}
    assert not names & {"history_grows", "user_turn_sent", "script_not_exceeded"}
    assert ("clean_messages" in names) == clean_messages_checked


def test_scripted_logprobs_are_ignored_by_agentrigs_runtime(tmp_path: Path) -> None:
    result = run(
        tmp_path,
        """\
        name: logprobs
        turns:
          - user: right?
            model:
              - say: "Yes"
                logprobs: [{token: "Yes", logprob: -0.2, top: {"No": -1.8}}]
            expect: {final_response: "Yes"}
        """,
    )
    assert result.passed, result.failures


ORDERED = """\
    name: ordered
    agent:
      tools:
        get_weather:
          params: {city: string}
          replies: [{return: sunny}]
    turns:
      - user: weather?
        model:
          - calls: [get_weather(city=Paris), get_wether(city=Oslo)]
          - say: sunny
          - say: never played
"""


def test_failures_come_in_file_order_and_a_failed_call_points_at_its_own_line(
    tmp_path: Path,
) -> None:
    path = scenario_file(tmp_path, ORDERED)
    result = run_scenario(load_scenario(path))
    # found in another order: the unused reply is checked before the tool calls
    assert [f.location for f in result.failures] == [
        f"{path}:{line_of(path, 'get_wether')}",
        f"{path}:{line_of(path, 'never played')}",
    ]
    assert "get_wether" in result.failures[0].message


def test_a_violation_that_persists_over_steps_is_reported_once_naming_the_steps(
    tmp_path: Path,
) -> None:
    from agentrig import HookContext, HookTrigger, Message, ToolResult

    def put_trace_in_messages(context: HookContext) -> HookContext:
        result = ToolResult(content="x", call_id="c1", tool_name="add")
        message = Message.tool(result).with_metadata(is_trace=True)
        state = context.state
        return context.with_state(state.with_messages(state.messages().appended(message)))

    call = "          - call: add(a=1, b=2)\n"
    looping = TOOL_AGENT.replace(call, call * 3)
    path = scenario_file(tmp_path, looping.replace("steps: 2", "steps: 4"))
    builder = AgentBuilder.base().add_hook(put_trace_in_messages, HookTrigger.BEFORE_STEP)
    result = run_scenario(load_scenario(path), builder=builder)
    # The hook adds one trace message a step: the first one stays wrong from step 1 to 4.
    clean = [f.message for f in result.failures if f.invariant == "clean_messages"]
    assert clean == [
        f"turn 1, {steps}: `messages` item {item} is a tool trace: tool/tool_result 'x'"
        for steps, item in [("steps 1-4", 2), ("steps 2-4", 3), ("steps 3 and 4", 4), ("step 4", 5)]
    ]


def test_a_file_names_the_plugin_that_registers_its_invariant(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from agentrig.harness.checks.invariant import invariant_names, unregister_invariant

    (tmp_path / "no_adding.py").write_text(
        dedent(
            """\
            from agentrig.harness import Invariant, register_invariant

            @register_invariant
            class NoAddingPlugin(Invariant):
                def check(self, observation):
                    if any(e.name == "add" for s in observation.all_steps() for e in s.tool_executions):
                        yield "add was called"
            """
        ),
        encoding="utf-8",
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    named = TOOL_AGENT.replace("    turns:", "    invariants: {plugins: [no_adding]}\n    turns:")
    try:
        assert "no_adding_plugin" not in invariant_names()
        result = run(tmp_path, named)
        assert [f.invariant for f in result.failures] == ["no_adding_plugin"]
    finally:
        unregister_invariant("no_adding_plugin")
        sys.modules.pop("no_adding", None)  # a second session in this process imports it anew
    missing = run(tmp_path, named.replace("[no_adding]", "[no_such_module]"))
    [failure] = missing.failures
    assert "cannot import plugin module 'no_such_module'" in failure.message
    assert failure.location is not None
    assert failure.location.endswith(f":{line_of(tmp_path / 'case.scenario.yaml', 'plugins')}")


def test_a_scenario_the_runtime_cannot_play_is_refused_at_its_field(tmp_path: Path) -> None:
    auto = scenario_file(
        tmp_path,
        """\
        name: auto
        turns:
          - user: hi
            model: auto
        """,
    )
    [failure] = run_scenario(load_scenario(auto)).failures
    assert (failure.kind, failure.location) == ("error", f"{auto}:{line_of(auto, 'model: auto')}")
    assert failure.message == (
        "model: auto reads the tools each request offers: serve the scenario to the agent with "
        "agentrig serve or the agentrig_endpoint fixture (agentrig's own runtime plays scripted "
        "replies only)"
    )
    missing = scenario_file(
        tmp_path,
        """\
        name: no-builder
        agent: {builder: "no_such_module_x:make"}
        turns:
          - user: hi
            model:
              - say: hello
        """,
        name="builder.scenario.yaml",
    )
    [failure] = run_scenario(load_scenario(missing)).failures
    assert (failure.kind, failure.location) == (
        "error",
        f"{missing}:{line_of(missing, 'agent: {builder')}",
    )
    assert failure.message.startswith(
        "builder 'no_such_module_x:make': cannot import module 'no_such_module_x'"
    )


def test_a_file_that_cannot_load_is_a_failed_result_naming_each_problem(tmp_path: Path) -> None:
    path = scenario_file(tmp_path, "name: broken\nturns:\n  - user: 3\n    model: [{say: x}]\n")
    with pytest.raises(ScenarioFileError) as raised:
        load_scenario(path)

    result = unloadable_result(raised.value)

    assert (result.name, result.passed, result.invariants, result.turns) == ("case", False, (), ())
    [failure] = result.failures
    assert (failure.kind, failure.field, failure.location) == (
        "error",
        "turns[0].user",
        f"{path}:3",
    )
    assert failure.message == (
        "the file could not be loaded: turns[0].user: expected a string, got the number 3 "
        "(quote it to make it text)"
    )


def test_a_turn_cancelled_before_it_starts_stops_at_the_users_request(tmp_path: Path) -> None:
    result = run(
        tmp_path,
        """\
        name: cancelled
        turns:
          - user: hi
            model:
              - say: hello
          - user: again
            cancel: before
        """,
    )
    assert result.passed, result.failures
    assert [(turn.status, turn.stop_reason) for turn in result.turns] == [
        ("completed", "completed"),
        ("stopped", "user_requested"),
    ]


def test_a_model_call_past_the_script_says_how_many_replies_the_turn_scripts(
    tmp_path: Path,
) -> None:
    result = run(
        tmp_path,
        """\
        name: overrun
        agent:
          budget: {max_steps: 5}
          tools:
            add: {replies: [{return: 3}]}
        turns:
          - user: hi
            model:
              - call: add()
              - call: add()
        """,
    )
    assert [failure.message for failure in result.failures] == [
        "turn 1: model call 3 was not scripted (the turn scripts 2 replies); add a reply or "
        "check why the agent did not stop"
    ]


def test_the_transcript_names_the_mixture_branch_each_turn_played(tmp_path: Path) -> None:
    result = run(
        tmp_path,
        """\
        name: coin
        turns:
          - user: Flip.
            mixture:
              - {weight: 1, label: heads, model: [{say: heads}]}
              - {weight: 3, label: tails, model: [{say: tails}]}
        """,
    )
    said = next(entry.text for entry in result.transcript if entry.role == "assistant")
    number, share = (1, 0.25) if said == "heads" else (2, 0.75)
    events = [entry.text for entry in result.transcript if entry.kind == "event"]
    assert events == [f"mixture: plays {said} (branch {number} of 2, share {share})"]


def test_a_subagent_called_past_its_script_says_how_many_replies_it_has(tmp_path: Path) -> None:
    result = run(
        tmp_path,
        """\
        name: overrun-child
        agent:
          subagents:
            helper:
              model: [{say: child done}]
        turns:
          - user: go
            model:
              - call: spawn_subagent(subagent=helper, prompt=help)
              - call: spawn_subagent(subagent=helper, prompt=again)
              - say: ok
        """,
    )
    overruns = [f.message for f in result.failures if f.kind == "script"]
    assert len(overruns) == 1
    assert overruns[0].startswith(
        "subagent helper: model call 2 was not scripted (1 reply scripted)"
    )

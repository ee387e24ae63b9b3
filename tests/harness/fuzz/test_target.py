"""The agent under test: a function (sync or async, given or named) run in process, or a
command run with the endpoint in its environment; what each returns, raises and is called."""

from __future__ import annotations

import functools
import json
import shlex
import subprocess
import sys

import pytest

from agentrig.errors import ConfigurationError
from agentrig.harness.endpoint.handle import EndpointHandle
from agentrig.harness.fuzz.offer import probe_scenario
from agentrig.harness.fuzz.target import (
    CommandFailed,
    CommandTarget,
    FunctionTarget,
    reference_of,
    target_of,
)


@pytest.fixture
def ep():
    return EndpointHandle(probe_scenario("Hi"), key="fuzz-key")


def agent_at_module_level(ep, prompt):
    return f"{prompt} via {ep.openai_base_url}"


def test_a_function_runs_in_process_with_the_endpoint_and_the_prompt(ep):
    target = target_of(agent_at_module_level)
    assert target == FunctionTarget(
        agent_at_module_level, "tests.harness.fuzz.test_target:agent_at_module_level"
    )
    assert not target.needs_live
    assert target.run(ep, "Hello") == ("Hello via http://agentrig-endpoint.invalid/v1", None)


def test_what_a_function_raises_is_returned_not_raised(ep):
    error = ValueError("broken")

    def agent(ep, prompt):
        raise error

    assert target_of(agent).run(ep, "Hi") == (None, error)


def test_an_async_function_is_awaited_and_what_it_raises_returned(ep):
    async def agent(ep, prompt):
        return prompt.upper()

    error = KeyError("missing")

    async def broken(ep, prompt):
        raise error

    assert target_of(agent).run(ep, "hi") == ("HI", None)
    assert target_of(broken).run(ep, "hi") == (None, error)


def test_a_reference_names_a_function_that_an_import_finds_again():
    def local(ep, prompt):
        return None

    assert reference_of(json.dumps) == "json:dumps"
    assert reference_of(json.JSONDecoder.decode) == "json.decoder:JSONDecoder.decode"
    assert reference_of(local) is None  # <locals> in its name
    assert reference_of(lambda ep, prompt: None) is None
    local.__qualname__ = "local"
    local.__module__ = "__main__"
    assert reference_of(local) is None  # another process has another __main__
    local.__module__ = "not a module"
    assert reference_of(local) is None
    local.__module__ = ""
    assert reference_of(local) is None
    local.__module__ = None  # type: ignore[assignment]
    assert reference_of(local) is None  # not "None:local"
    assert reference_of(object()) is None  # type: ignore[arg-type]
    assert reference_of(functools.partial(json.dumps)) is None  # no name: not "functools:None"


def test_a_local_function_is_a_target_without_a_reference():
    def agent(ep, prompt):
        return None

    assert target_of(agent) == FunctionTarget(agent, None)


def test_a_reference_is_imported():
    target = target_of("json:dumps")
    assert target == FunctionTarget(json.dumps, "json:dumps")


def test_a_reference_to_something_not_callable_is_refused():
    with pytest.raises(ConfigurationError) as caught:
        target_of("json:decoder")
    assert str(caught.value) == (
        "fuzz target 'json:decoder' is module: name a function taking the endpoint and the "
        "user's message"
    )


def test_a_reference_that_does_not_import_names_the_target():
    with pytest.raises(ConfigurationError, match=r"^fuzz target .no_such_module_x:agent.: "):
        target_of("no_such_module_x:agent")


def test_other_text_is_a_command_line_and_a_list_its_arguments():
    assert target_of("python agent.py --name 'my agent'") == CommandTarget(
        ("python", "agent.py", "--name", "my agent")
    )
    assert target_of(["python", "agent.py", 3]) == CommandTarget(("python", "agent.py", "3"))
    assert target_of(("run",)) == CommandTarget(("run",))
    command = CommandTarget(("python", "agent.py", "my agent"))
    assert command.needs_live
    assert command.timeout == 120.0
    assert command.reference == "python agent.py 'my agent'"


def test_a_target_is_kept_as_it_is():
    function = FunctionTarget(agent_at_module_level, "ref:name", needs_live=True)
    command = CommandTarget(("agent",), timeout=5)
    assert target_of(function) is function
    assert target_of(command) is command


@pytest.mark.parametrize(("agent", "kind"), [(42, "int"), (None, "NoneType")])
def test_anything_else_is_refused_naming_what_was_given(agent, kind):
    with pytest.raises(ConfigurationError) as caught:
        target_of(agent)
    assert str(caught.value) == (
        "fuzz target: expected a function, 'package.module:function' or a command, got " + kind
    )


SHOW = """
import json, os, sys
names = ("OPENAI_BASE_URL", "OPENAI_API_KEY", "ANTHROPIC_BASE_URL", "ANTHROPIC_API_KEY",
         "AGENTRIG_PROMPT", "KEPT")
print(json.dumps({"stdin": sys.stdin.read(), **{name: os.environ.get(name) for name in names}}))
"""


def test_a_command_finds_the_endpoint_and_the_prompt_in_its_environment_and_stdin(ep, monkeypatch):
    monkeypatch.setenv("KEPT", "from the parent")
    monkeypatch.setenv("OPENAI_API_KEY", "the user's own key")
    out, error = CommandTarget((sys.executable, "-c", SHOW)).run(ep, "Weather in Paris?")
    assert error is None
    assert json.loads(out) == {
        "stdin": "Weather in Paris?",
        "OPENAI_BASE_URL": "http://agentrig-endpoint.invalid/v1",
        "OPENAI_API_KEY": "fuzz-key",
        "ANTHROPIC_BASE_URL": "http://agentrig-endpoint.invalid",
        "ANTHROPIC_API_KEY": "fuzz-key",
        "AGENTRIG_PROMPT": "Weather in Paris?",
        "KEPT": "from the parent",
    }


def test_a_command_that_exits_with_another_status_failed_with_its_stderr(ep):
    script = "import sys; print('partial'); print('\\n'.join(map(str, range(12))), file=sys.stderr)"
    argv = (sys.executable, "-c", script + "; sys.exit(3)")
    out, error = CommandTarget(argv).run(ep, "Hi")
    assert out == "partial\n"
    assert isinstance(error, CommandFailed)
    assert error.status == 3
    assert error.stderr == "\n".join(map(str, range(12))) + "\n"
    tail = "\n".join(map(str, range(4, 12)))  # its last 8 lines
    assert str(error) == f"{shlex.join(argv)} exited with status 3:\n{tail}"


def test_a_failed_command_without_stderr_says_only_its_status():
    assert str(CommandFailed("agent run", 1, " \n")) == "agent run exited with status 1"


def test_a_command_that_takes_too_long_or_cannot_start_is_an_error_not_a_crash(ep, tmp_path):
    slow = CommandTarget((sys.executable, "-c", "import time; time.sleep(30)"), timeout=0.5)
    out, error = slow.run(ep, "Hi")
    assert out is None
    assert isinstance(error, subprocess.TimeoutExpired)
    out, error = CommandTarget((str(tmp_path / "no-such-agent"),)).run(ep, "Hi")
    assert out is None
    assert isinstance(error, FileNotFoundError)

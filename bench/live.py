"""Live trials (``agentrig run --live``): the harness's own cost and its guarantees, measured in one
run with models that answer at no cost, so what is timed is agentrig.

The trial (five model calls, as the targets count them): the simulated user asks for a refund,
the agent calls ``issue_refund`` and answers, the user ends the conversation, and the judge
decides one rubric. Cases:

1. **overhead**: trials run one at a time with in-process function models (the models cost
   nothing: the time is the harness's: the loop, the user, the judge, the gateway, the
   scheduler); and the same trial over the openai SDK against the scenario endpoint on loopback,
   beside the floor of five bare SDK calls to the same server. Then trials/s at concurrency 8.
2. **cost**: the endpoint's scripted usage at the scenario's prices; the report's cost by role
   against the exact sum, and a scenario budget's overshoot against its bound (one call per
   trial in flight).
3. **429s**: 30% of the agent's calls answer 429 with ``Retry-After: 0`` (seeded), each call
   20 ms, the agent's provider capped at 8 in flight, in virtual time: trials lost, throughput
   against the cap's.
4. **the simulated user's mistakes**: a user that makes each kind of mistake: how many trials are
   set aside as the user's (never counted against the agent).
5. **replay**: a second identical run with the cache: model calls, and whether the verdict, its
   trials and successes are the same.

    .venv/bin/python bench/live.py
    .venv/bin/python bench/live.py --trials 50 --json bench/results/live.json
    .venv/bin/python bench/live.py --quick      # a smoke run: 5 trials a case, 16 floor calls
"""

from __future__ import annotations

import asyncio
import os
import random
import socket
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path
from typing import Any

import _common as common

from agentrig.errors import ProviderError
from agentrig.fakes import FunctionLLM
from agentrig.fakes.llm import Turn, call, reply
from agentrig.harness.live.limits import ProviderLimits, Traffic
from agentrig.harness.live.run import LiveRun, RoleModels, run_live_scenario
from agentrig.harness.live.trial import current_trial
from agentrig.harness.live.virtual_time import run_in_virtual_time
from agentrig.harness.live_results import LiveResult
from agentrig.harness.scenarios.loader import load_scenario
from agentrig.harness.scenarios.model import Scenario
from agentrig.messages import Role
from agentrig.state import InferenceRequest, InferenceResponse

CALLS_PER_TRIAL = 5
FLOOR_CALLS = 200
"""Bare SDK calls timed for the floor, one at a time (twice as many 8 at once)."""
QUICK_FLOOR_CALLS = 16
"""``--quick``'s: the floor's 600 calls were most of a smoke run's time (it times nothing)."""
AGENT_MODULE = '''
from agentrig import AgentBuilder, UseContextConfig, UseLlmConfig, tool
from agentrig.drivers.openai import OpenAIProvider
from agentrig.drivers.pricing import ModelPrice, PriceTable
from agentrig.fakes import FunctionLLM

MODEL = None  # set by the benchmark: an InferenceProvider (None: the endpoint, over the SDK)
ENDPOINT_MODEL = None  # the SDK provider, made once (as a production agent makes its client)


@tool
def issue_refund(order_id: str) -> str:
    """Refund an order."""
    return "refund issued"


def build() -> AgentBuilder:
    global ENDPOINT_MODEL
    if MODEL is None and ENDPOINT_MODEL is None:
        ENDPOINT_MODEL = OpenAIProvider(
            model="m", max_retries=0, prices=PriceTable({"m": ModelPrice(input=0.4, output=1.6)})
        )
    provider = MODEL or ENDPOINT_MODEL
    return (
        AgentBuilder.base()
        .with_tools([issue_refund])
        .with_capability(UseContextConfig("You handle refunds."))
        .with_capability(UseLlmConfig(provider, max_retries=1))
    )
'''
SCENARIO = """
name: bench-refund
agent: {builder: "bench_live_agent:build"}
user:
  persona: Dana
  goal: a refund for order A-1029
  knows: {order_id: A-1029}
  stop: {max_turns: 3}
  model: {provider: openai, name: u, api_key_env: BENCH_USER_KEY, price: {input: 0.4, output: 1.6}}
judge:
  criteria:
    - {id: refunded, check: {tool_called: "issue_refund(order_id=A-1029)"}}
    - {id: polite, rubric: the agent is polite}
  model: {provider: openai, name: j, api_key_env: BENCH_JUDGE_KEY, price: {input: 2, output: 8}}
trials: {TRIALS}
"""
MODELS = {
    "agent": """
name: bench-agent
turns:
  - user: I want a refund for order A-1029.
    model:
      - {call: "issue_refund(order_id=A-1029)", usage: {input: 100, output: 10}}
      - {say: Done. Your refund is on its way., usage: {input: 150, output: 12}}
""",
    "user": """
name: bench-user
turns:
  - user: start
    model: [{say: I want a refund for order A-1029., usage: {input: 60, output: 9}}]
  - user: the agent's answer
    model: [{call: end_conversation(reason=done), usage: {input: 90, output: 7}}]
invariants: {exclude: [user_turn_sent]}
""",
    "judge": """
name: bench-judge
turns:
  - user: the criterion
    model:
      - {call: "verdict(result=passed, reason=polite)", usage: {input: 300, output: 20}, repeat: true}
invariants: {exclude: [user_turn_sent]}
""",
}
PRICE = {
    "agent": (0.4, 1.6),
    "user": (0.4, 1.6),
    "judge": (2.0, 8.0),
}


# --- the in-process models ----------------------------------------------------------------


def agent_model(request: InferenceRequest) -> Turn:
    if request.messages[-1].role is Role.TOOL:
        return reply("Done. Your refund is on its way.")
    return call("issue_refund", order_id="A-1029")


def user_model(request: InferenceRequest) -> Turn:
    said = [m for m in request.messages if m.role is Role.ASSISTANT]
    if not said:
        return reply("I want a refund for order A-1029.")
    return call("end_conversation", reason="done")


def judge_model(request: InferenceRequest) -> Turn:
    return call("verdict", result="passed", reason="polite")


def in_process() -> RoleModels:
    return RoleModels(
        user=lambda _: FunctionLLM(user_model), judge=lambda _: FunctionLLM(judge_model)
    )


# --- set-up ------------------------------------------------------------------------------


class Workspace:
    """A temporary project: the agent's module on sys.path, scenarios written on demand."""

    def __init__(self) -> None:
        self.folder = Path(tempfile.mkdtemp(prefix="agentrig-bench-live-"))
        (self.folder / "bench_live_agent.py").write_text(AGENT_MODULE)
        sys.path.insert(0, str(self.folder))
        import bench_live_agent  # type: ignore[import-not-found]

        self.agent = bench_live_agent
        for role, text in MODELS.items():
            (self.folder / "models").mkdir(exist_ok=True)
            (self.folder / "models" / f"{role}.scenario.yaml").write_text(textwrap.dedent(text))
        os.environ.update(BENCH_USER_KEY="bench-user", BENCH_JUDGE_KEY="bench-judge")

    def scenario(self, trials: str) -> Scenario:
        path = self.folder / "bench.scenario.yaml"
        path.write_text(textwrap.dedent(SCENARIO).replace("{TRIALS}", trials))
        return load_scenario(path)


def fixed(n: int, concurrency: int, **extra: Any) -> str:
    more = "".join(f", {key}: {value}" for key, value in extra.items())
    return (
        f"{{require: {{metric: rate, at_least: 0.5}}, max: {n}, sequential: false, "
        f"concurrency: {concurrency}{more}}}"
    )


RUNNER = asyncio.Runner()
"""One event loop for every case, as one ``agentrig run --live`` has: the agent's SDK client,
made once, keeps its connections across runs."""


def live(scenario: Scenario, run: LiveRun) -> tuple[LiveResult, float]:
    started = time.perf_counter()
    result = RUNNER.run(run_live_scenario(scenario, run))
    return result, time.perf_counter() - started


# --- 1. overhead -------------------------------------------------------------------------


def overhead(space: Workspace, trials: int, floor_calls: int) -> list[list[Any]]:
    rows: list[list[Any]] = []
    space.agent.MODEL = FunctionLLM(agent_model)
    models = in_process()
    live(space.scenario(fixed(5, 1)), LiveRun(models=models))  # warm up
    one, seconds = live(space.scenario(fixed(trials, 1)), LiveRun(models=models))
    _check(one, trials)
    rows.append(
        [
            "in-process models, one at a time",
            trials,
            seconds / trials * 1000,
            None,
            trials / seconds,
        ]
    )
    eight, seconds = live(space.scenario(fixed(trials, 8)), LiveRun(models=models))
    _check(eight, trials)
    rows.append(
        ["in-process models, 8 at once", trials, seconds / trials * 1000, None, trials / seconds]
    )

    space.agent.MODEL = None
    floor_ms = _sdk_floor_ms(os.environ["OPENAI_BASE_URL"], floor_calls)
    floor8_ms = _sdk_floor_ms(os.environ["OPENAI_BASE_URL"], 2 * floor_calls, concurrency=8)
    live(space.scenario(fixed(5, 1)), LiveRun())  # warm up
    one, seconds = live(space.scenario(fixed(trials, 1)), LiveRun())
    _check(one, trials)
    per_trial = seconds / trials * 1000
    rows.append(
        [
            "endpoint over the openai SDK, one at a time",
            trials,
            per_trial,
            per_trial - CALLS_PER_TRIAL * floor_ms,
            trials / seconds,
        ]
    )
    eight, seconds = live(space.scenario(fixed(trials, 8)), LiveRun())
    _check(eight, trials)
    rows.append(
        [
            "endpoint over the openai SDK, 8 at once",
            trials,
            seconds / trials * 1000,
            None,
            trials / seconds,
        ]
    )
    rows.append(
        [
            f"floor: {CALLS_PER_TRIAL} bare SDK calls to the endpoint",
            trials,
            CALLS_PER_TRIAL * floor_ms,
            None,
            None,
        ]
    )
    rows.append(
        [
            f"floor: {CALLS_PER_TRIAL} bare SDK calls to the endpoint, 8 at once",
            trials,
            CALLS_PER_TRIAL * floor8_ms,
            None,
            1000 / (CALLS_PER_TRIAL * floor8_ms),
        ]
    )
    return rows


def _sdk_floor_ms(base_url: str, calls: int, concurrency: int = 1) -> float:
    """ms per call of the bare openai SDK against the endpoint (wall time over ``calls`` after
    a warm-up of at most 10, with ``concurrency`` calls in flight)."""
    import openai

    async def main() -> float:
        client = openai.AsyncOpenAI(api_key="bench-judge/floor", base_url=base_url, max_retries=0)
        messages = [{"role": "user", "content": "the criterion"}]
        tools = [
            {
                "type": "function",
                "function": {
                    "name": "verdict",
                    "parameters": {
                        "type": "object",
                        "properties": {"result": {"type": "string"}, "reason": {"type": "string"}},
                    },
                },
            }
        ]
        for _ in range(min(10, calls)):
            await client.chat.completions.create(model="j", messages=messages, tools=tools)

        async def worker(count: int) -> None:
            for _ in range(count):
                await client.chat.completions.create(model="j", messages=messages, tools=tools)

        started = time.perf_counter()
        await asyncio.gather(*(worker(calls // concurrency) for _ in range(concurrency)))
        elapsed = time.perf_counter() - started
        await client.close()
        return elapsed / calls * 1000

    return RUNNER.run(main())


def _check(result: LiveResult, trials: int) -> None:
    if result.trials != trials or result.successes != trials:
        aside = [r.reason for r in result.records if r.status != "success"][:3]
        raise SystemExit(f"the benchmark's trials did not all succeed: {result.reason}; {aside}")


# --- 2. cost -----------------------------------------------------------------------------


def cost(space: Workspace, trials: int) -> list[list[Any]]:
    space.agent.MODEL = None
    rows: list[list[Any]] = []
    result, _ = live(space.scenario(fixed(trials, 8)), LiveRun())
    _check(result, trials)
    usage = {  # tokens of one trial's calls, by role (the scripts above)
        "agent": [(100, 10), (150, 12)],
        "user": [(60, 9), (90, 7)],
        "judge": [(300, 20)],
    }
    expected = {
        role: trials * sum(i * PRICE[role][0] + o * PRICE[role][1] for i, o in calls) / 1e6
        for role, calls in usage.items()
    }
    reported = {"agent": result.cost.agent, "user": result.cost.user, "judge": result.cost.judge}
    for role in ("agent", "user", "judge"):
        difference = abs(reported[role] - expected[role])
        rows.append(
            [f"cost of the {role}", _usd(reported[role]), _usd(expected[role]), _usd(difference)]
        )
    per_success = sum(expected.values()) / trials
    reported_per_success = result.cost.per_success or 0.0
    rows.append(
        [
            "cost per success",
            _usd(reported_per_success),
            _usd(per_success),
            _usd(abs(reported_per_success - per_success)),
        ]
    )
    budget = 0.0025
    limited, _ = live(space.scenario(fixed(400, 8, budget_usd=budget)), LiveRun())
    call_cost = max(i * PRICE[r][0] + o * PRICE[r][1] for r, c in usage.items() for i, o in c)
    rows.append(["budget: spent, and the budget", _usd(limited.cost.total), _usd(budget), "-"])
    rows.append(
        [
            "  overshoot, and its bound (8 calls in flight)",
            _usd(limited.cost.total - budget),
            _usd(8 * call_cost / 1e6),
            "-",
        ]
    )
    return rows


def _usd(amount: float) -> str:
    return f"${amount:.9f}"


# --- 3. 429s ------------------------------------------------------------------------------


def rate_limits(space: Workspace, trials: int) -> list[list[Any]]:
    latency, cap, share = 0.02, 8, 0.3
    draws = random.Random(42)
    answered = [0]

    async def limited_agent(request: InferenceRequest) -> Turn | InferenceResponse:
        await asyncio.sleep(latency)
        if draws.random() < share:
            error = ProviderError("rate limited", status_code=429, retryable=True)
            error.retry_after = 0.0  # type: ignore[attr-defined]
            raise error
        answered[0] += 1
        return agent_model(request)

    space.agent.MODEL = FunctionLLM(limited_agent)
    traffic = Traffic(ProviderLimits({"limited_agent": cap}, default_cap=64))

    async def main() -> tuple[LiveResult, float]:
        loop = asyncio.get_running_loop()
        started = loop.time()
        result = await run_live_scenario(
            space.scenario(fixed(trials, 32)), LiveRun(control=traffic, models=in_process())
        )
        return result, loop.time() - started

    result, seconds = run_in_virtual_time(main())
    stats = traffic.stats()["limited_agent"]
    ideal = cap / latency
    lost = sum(n for why, n in result.set_aside.items() if why == "infrastructure")
    attempts = answered[0] + sum(stats.rate_limited.values())
    return [
        ["trials counted, of those run", result.trials, trials, None],
        ["trials lost to 429s (set aside)", lost, 0, None],
        [
            "429s met, and retried",
            sum(stats.rate_limited.values()),
            sum(stats.retries.values()),
            None,
        ],
        [
            "agent attempts a second (the slots' use)",
            attempts / seconds,
            ideal,
            attempts / seconds / ideal,
        ],
        [
            "agent calls answered a second",
            answered[0] / seconds,
            ideal * (1 - share),
            answered[0] / seconds / (ideal * (1 - share)),
        ],
    ]


# --- 4. the simulated user's mistakes ----------------------------------------------------


MISTAKES = {
    "empty_message": lambda n: InferenceResponse(content=""),
    "unknown_fact": lambda n: reply("My order is B-7777."),
    "role_confusion": lambda n: reply("Assistant: how may I help?"),
    "ended_early": lambda n: call("end_conversation", reason="bored"),
    "cut_off": lambda n: Turn(text="I want", finish_reason="length"),  # type: ignore[arg-type]
}


def user_mistakes(space: Workspace, trials: int) -> list[list[Any]]:
    space.agent.MODEL = FunctionLLM(agent_model)
    rows: list[list[Any]] = []
    for code, mistake in MISTAKES.items():

        def user(request: InferenceRequest, mistake: Any = mistake) -> Any:
            trial = current_trial()
            assert trial is not None
            if trial.attempt == 0:  # the first run of every trial makes the mistake
                return mistake(0)
            return user_model(request)

        models = RoleModels(
            user=lambda _, u=user: FunctionLLM(u), judge=lambda _: FunctionLLM(judge_model)
        )
        scenario = space.scenario(fixed(trials, 8, max_set_aside=trials))
        result, _ = live(scenario, LiveRun(models=models))
        classified = result.set_aside.get(f"user_mistake:{code}", 0)
        blamed = result.trials - result.successes
        rows.append([code, trials, classified, blamed, classified / trials])
    return rows


# --- 5. replay ---------------------------------------------------------------------------


def replay(space: Workspace, trials: int) -> list[list[Any]]:
    space.agent.MODEL = FunctionLLM(agent_model)
    cache = str(space.folder / "cache")
    scenario = space.scenario(
        f"{{require: {{metric: rate, at_least: 0.5}}, max: {trials}, concurrency: 8}}"
    )
    first, _ = live(scenario, LiveRun(models=in_process(), cache_dir=cache))
    second, _ = live(scenario, LiveRun(models=in_process(), cache_dir=cache))
    return [
        [
            "first run",
            sum(first.model_calls.values()),
            first.verdict,
            first.trials,
            first.successes,
        ],
        [
            "second run",
            sum(second.model_calls.values()),
            second.verdict,
            second.trials,
            second.successes,
        ],
    ]


def main() -> None:
    options = common.parser(__doc__.splitlines()[0])
    options.add_argument("--trials", type=int, default=200, help="trials a case (default 200)")
    args = options.parse_args()
    floor_calls = FLOOR_CALLS
    if args.quick:
        args.trials, floor_calls = 5, QUICK_FLOOR_CALLS
    space = Workspace()
    server = Server(space.folder / "models")
    os.environ.update(OPENAI_BASE_URL=server.openai_base_url, OPENAI_API_KEY="bench-agent")
    print(common.machine_line(common.machine()))
    report: dict[str, Any] = {}
    print(f"\n1. overhead of a {CALLS_PER_TRIAL}-call trial")
    rows = overhead(space, args.trials, floor_calls)
    report["overhead"] = rows
    print(common.table(["case", "trials", "ms a trial", "ms over the floor", "trials/s"], rows))
    print("\n2. cost (USD)")
    rows = cost(space, min(args.trials, 100))
    report["cost"] = rows
    print(common.table(["what", "reported", "expected", "difference"], rows))
    print("\n3. 30% of the agent's calls answer 429 (Retry-After: 0), cap 8, 20 ms a call")
    rows = rate_limits(space, args.trials)
    report["rate_limits"] = rows
    print(common.table(["what", "measured", "target", "ratio"], rows))
    print("\n4. the simulated user's mistakes, one kind per row")
    rows = user_mistakes(space, min(args.trials, 40))
    report["user_mistakes"] = rows
    print(
        common.table(
            ["mistake", "trials", "set aside as the user's", "counted failed", "share"], rows
        )
    )
    print("\n5. a second identical run, from the cache")
    rows = replay(space, min(args.trials, 60))
    report["replay"] = rows
    print(common.table(["run", "model calls", "verdict", "trials", "successes"], rows))
    common.save_json(args.json, {"machine": common.machine(), **report})
    server.stop()


class Server:
    """``agentrig serve`` in a process of its own (as a user runs it: the harness and the
    endpoint each get a core, and do not share one interpreter's lock)."""

    def __init__(self, models: Path) -> None:
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            port = probe.getsockname()[1]
        command = [
            str(Path(sys.executable).parent / "agentrig"),
            "serve",
            str(models),
            "--port",
            str(port),
            "--report-dir",
            str(models.parent / "serve-reports"),
        ]
        self.process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        self.openai_base_url = f"http://127.0.0.1:{port}/v1"
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                return
            except OSError:
                time.sleep(0.05)
        self.process.kill()
        raise SystemExit(f"agentrig serve did not start: {self.process.stderr.read().decode()}")

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait(timeout=30)


if __name__ == "__main__":
    main()

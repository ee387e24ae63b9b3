"""Scale-out on Dask (``agentrig run --executor dask``): what the engine costs and what it buys.

Live trials here are latency-bound, as real ones are: ``agentrig serve`` plays the three models of
``examples/live/`` (the refund agent over the openai SDK, the simulated user, the judge voting 3
times), each answer after ``--latency`` seconds. Cases:

1. **start-up**: two scripted scenarios run in this process, in a pool of 2 worker processes
   (``--workers 2``), and on a local cluster of 2 worker processes (started, every worker
   checked, closed): the time the cluster adds to a run, and its phases.
2. **throughput**: the same ``--trials`` trials (all run: ``sequential: false``) on local
   clusters of 1 and 4 workers, each worker running ``--slots`` trials at once; trials/s and
   the ratio (the target: 4 workers >= 3.5x 1 worker). A trial makes about 9 model calls, one
   after the other, so at the default ``--latency 1`` it waits about 9 s on its models: on a
   2-CPU machine a shorter latency makes the trials CPU-bound (four workers, the server and
   this process share two CPUs) and measures the CPUs instead.
   The same with the three models answering inside the workers (no server between), at
   half the latency and twice the trials: what the engine itself adds.
3. **deterministic suite**: ``--scenarios`` scripted scenarios (the bundled tools scenarios, copied
   under new names) run as a user runs them: ``agentrig run DIR --workers 2`` (the process pool)
   and ``agentrig run DIR --executor dask --workers 2`` (a 2-worker local cluster), each a
   process of its own timed from its start to its end (start-up, loading, the workers' start
   or the cluster's opening, the run, the reports), in turn; the ratio of each pair (the
   target: within 1.3x), and on Linux that of the CPU seconds of each run's whole process
   tree (its workers, and a Dask run's worker server, included), which the load of a shared
   machine blurs less (on two CPUs a run takes at least half its CPU seconds). **suite_cpu**: the same two in this process, with the CPU seconds of
   this process and of the workers, which a shared machine's load blurs less, and the
   cluster's opening apart. **floor**: the engine's own cost per task, agentrig aside: as many no-op tasks, submitted
   and fetched as the suite's, on the same cluster; CPU ms per task of this process (the
   client, the scheduler and the nannies) and of the workers, and what the open cluster costs
   a second doing nothing. **alone**: the suite with one worker (``--workers 1``: this process
   runs it) against one Dask worker, whose client and scheduler then have the second CPU to
   themselves instead of competing with the workers.
4. **a worker killed**: ``--kill-trials`` trials on 2 workers (``--kill-slots`` trials each at
   once, answers after ``--kill-latency``); one worker process is killed (SIGKILL) once it holds
   trials; the trials recorded, any recorded twice, the verdict against an undisturbed run's.

    .venv/bin/python bench/scale.py
    .venv/bin/python bench/scale.py --quick --json bench/results/scale.json
    .venv/bin/python bench/scale.py --cases suite --repeats 3     # the scripted suite alone
    .venv/bin/python bench/scale.py --cases suite_cpu,floor,alone # and what the engine costs
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import os
import pickle
import re
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import _common as common
import psutil
import yaml
from distributed import Client
from live import Server

from agentrig.harness.live.run import LiveRun, run_live_scenario
from agentrig.harness.live.trial import TrialOutcome, TrialSetup
from agentrig.harness.live_results import LiveResult
from agentrig.harness.scale.cluster import DaskExecutor, dask_client
from agentrig.harness.scale.control import ClusterLimits
from agentrig.harness.scale.session import dask_session
from agentrig.harness.scale.suite import run_suite_on_dask
from agentrig.harness.scale.tasks import finished, map_tasks
from agentrig.harness.scale.trials import DaskTrials
from agentrig.harness.scale.workers import check_workers, needs_of
from agentrig.harness.scenarios.loader import load_scenario, load_suite
from agentrig.harness.scenarios.model import Scenario
from agentrig.harness.suites.suite import run_suite

ROOT = Path(__file__).parents[1]
CASES = ("startup", "suite", "suite_cpu", "floor", "alone", "models", "throughput", "killed")
EXAMPLE = ROOT / "examples" / "live"
NO_CAP = ClusterLimits(default_cap=100_000)
IN_WORKER_MODELS = '''
"""The example's three models inside the worker, each answer after LATENCY seconds."""
import asyncio

from agentrig import AgentBuilder, UseContextConfig, UseLlmConfig, tool
from agentrig.fakes import FunctionLLM
from agentrig.fakes.llm import call, reply
from agentrig.harness.live.run import RoleModels
from agentrig.messages import Role

LATENCY = {latency}


@tool
def issue_refund(order_id: str) -> str:
    """Refund an order."""
    return "refund issued"


class Slow:
    def __init__(self, function):
        self.model = FunctionLLM(function)

    def infer(self, request):
        return self.model.infer(request)

    async def ainfer(self, request):
        await asyncio.sleep(LATENCY)
        return self.model.infer(request)


def agent(request):
    if request.messages[-1].role is Role.TOOL:
        return reply("Done. Your refund for A-1029 is on its way.")
    if "A-1029" in " ".join(m.content for m in request.messages if m.role is Role.USER):
        return call("issue_refund", order_id="A-1029")
    return reply("Which order is it?")


def user(request):
    said = [m.content for m in request.messages if m.role is Role.USER][1:]
    if not said:
        return reply("My mug arrived broken. I want a refund.")
    if "Which order" in said[-1]:
        return reply("It is order A-1029.")
    return call("end_conversation", reason="done")


def judge(request):
    return call("verdict", result="passed", reason="polite")


def build():
    return (
        AgentBuilder.base()
        .with_tools([issue_refund])
        .with_capability(UseContextConfig("You handle refunds for a shop."))
        .with_capability(UseLlmConfig(Slow(agent)))
    )


def user_model(context):
    return Slow(user)


def judge_model(context):
    return Slow(judge)


def models():
    return RoleModels(user=user_model, judge=judge_model)
'''
"""A module of models that answer in the worker itself: no server between."""
_REPLY = re.compile(r"^( *)- (?:say|call): .*$", re.MULTILINE)
"""A model's reply in a script (each gets its latency on the next line)."""
_INDEX = re.compile(r"-(\d+)\.\d+-[0-9a-f]+$")
"""A trial's index in its task's key."""


class Workspace:
    """A copy of ``examples/live`` whose model scripts answer after ``latency`` seconds, served
    by ``agentrig serve``, the agent's module on ``sys.path`` (the local workers inherit it)."""

    def __init__(self, latency: float) -> None:
        self.folder = Path(tempfile.mkdtemp(prefix="agentrig-bench-scale-"))
        shutil.copytree(EXAMPLE, self.folder, dirs_exist_ok=True)
        for script in (self.folder / "models").glob("*.scenario.yaml"):
            script.write_text(_REPLY.sub(rf"\g<0>\n\1  latency: {latency}", script.read_text()))
        self.server = Server(self.folder / "models")
        os.environ.update(
            OPENAI_BASE_URL=self.server.openai_base_url,
            OPENAI_API_KEY="refund-model",
            REFUND_USER_KEY="refund-user",
            REFUND_JUDGE_KEY="refund-judge",
        )
        sys.path.insert(0, str(self.folder))

    def restart(self) -> None:
        """A fresh server, with no session: a run of an earlier run's id draws the same."""
        self.server.stop()
        self.server = Server(self.folder / "models")
        os.environ["OPENAI_BASE_URL"] = self.server.openai_base_url

    def scenario(self, trials: int, concurrency: int) -> Scenario:
        data = yaml.safe_load((self.folder / "refund.scenario.yaml").read_text())
        data["trials"].update(max=trials, sequential=False, concurrency=concurrency)
        data["trials"]["require"]["at_least"] = 0.3  # decidable from 3 trials: any count runs
        path = self.folder / f"refund-{trials}.scenario.yaml"
        path.write_text(yaml.safe_dump(data, sort_keys=False))
        return load_scenario(path)

    def close(self) -> None:
        self.server.stop()
        shutil.rmtree(self.folder, ignore_errors=True)


@contextlib.contextmanager
def cluster(workers: int, slots: int = 1) -> Iterator[Client]:
    with dask_client(DaskExecutor(), workers=workers, threads_per_worker=slots) as client:
        yield client


def trials_on(
    client: Client,
    scenario: Scenario,
    run_id: str | None = None,
    took: list[float] | None = None,
    launcher: DaskTrials | None = None,
) -> tuple[LiveResult, float]:
    """``scenario``'s trials on ``client``'s cluster, and the seconds they took; ``took`` gets
    each trial's own seconds (on its worker). With ``launcher``, the workers keep the setups of
    its earlier runs (else a new one is made, and closed after)."""
    given = launcher
    launcher = launcher or DaskTrials(client, NO_CAP)

    async def timed(setup: TrialSetup, index: int, attempt: int) -> TrialOutcome:
        outcome = await launcher(setup, index, attempt)
        if took is not None:
            took.append(outcome.wall_time_s)
        return outcome

    run = LiveRun(launcher=timed, run_id=run_id or f"bench-{time.monotonic_ns()}")
    started = time.perf_counter()
    try:
        return asyncio.run(run_live_scenario(scenario, run)), time.perf_counter() - started
    finally:
        if given is None:
            launcher.close()


# --- the cases --------------------------------------------------------------------------


def startup(repeats: int) -> dict[str, float]:
    """Median seconds of ``agentrig run`` on two scripted scenarios, as a user runs it (a
    process of its own, its workers' start-up and close included): in a pool of 2 worker
    processes (``--workers 2``) and on a 2-worker local cluster (``--executor dask``), taken in
    turn; then, in this process, the cluster's phases and a worker process's memory."""
    folder = Path(tempfile.mkdtemp(prefix="agentrig-bench-scale-startup-"))
    for source in sorted((ROOT / "scenarios" / "tools").glob("*.scenario.yaml"))[:2]:
        shutil.copy(source, folder)
    times: dict[str, list[float]] = {}
    for _ in range(repeats):
        for name, seconds in _pool_and_dask(folder, 2).items():
            times.setdefault(name, []).append(seconds)
    medians = {name: common.median(values) for name, values in times.items()}
    medians["added_over_pool_s"] = medians["dask_2_workers_s"] - medians["pool_2_workers_s"]
    two = list(load_suite([folder]).scenarios)
    memory: list[float] = []
    phases: dict[str, list[float]] = {}

    def timed(name: str, started: float) -> float:
        now = time.perf_counter()
        phases.setdefault(name, []).append(now - started)
        return now

    for _ in range(repeats):  # this process's forkserver is up after the first
        started = time.perf_counter()
        with dask_client(DaskExecutor(), workers=2) as client:
            started = timed("in_process_cluster_up_s", started)
            check_workers(client, needs_of(two, ()))
            started = timed("workers_checked_s", started)
            run_suite_on_dask(client, two)
            started = timed("ran_s", started)
            memory += client.run(_rss_mib).values()
        timed("closed_s", started)
    medians.update({name: common.median(values) for name, values in phases.items()})
    medians["worker_rss_mib"] = common.median(memory)
    shutil.rmtree(folder, ignore_errors=True)
    return medians


def _pool_and_dask(folder: Path, workers: int, dask_first: bool = False) -> dict[str, float]:
    """Seconds of ``agentrig run -q FOLDER --workers WORKERS``, and of the same with
    ``--executor dask``, each a process of its own (this interpreter's ``agentrig``; the
    ``agentrig`` it imports is the one on ``PYTHONPATH``), one after the other; and on Linux
    the CPU seconds of each run's whole process tree (``..._cpu_s``)."""
    command = [str(Path(sys.executable).parent / "agentrig"), "run", "-q", str(folder)]
    command += ["--report-dir", str(folder.parent / f"{folder.name}-reports")]
    command += ["--workers", str(workers)]
    runs = [
        (f"pool_{workers}_workers", []),
        (f"dask_{workers}_workers", ["--executor", "dask"]),
    ]
    adopted = _adopt_orphans()
    measured = {}
    for name, extra in reversed(runs) if dask_first else runs:
        before = {child.pid for child in psutil.Process().children()}
        cpu, started = _children_cpu(), time.perf_counter()
        subprocess.run([*command, *extra], check=True, stdout=subprocess.DEVNULL)
        measured[f"{name}_s"] = time.perf_counter() - started
        if adopted:
            _reap(set(psutil.Process().children()) - before)
            measured[f"{name}_cpu_s"] = _children_cpu() - cpu
    shutil.rmtree(folder.parent / f"{folder.name}-reports", ignore_errors=True)
    return measured


def _adopt_orphans() -> bool:
    """Become the parent of this process's descendants whose parent ends (Linux's child
    subreaper): a Dask run leaves the process its workers were forked from to end after it,
    and only a process waited for (with what it waited for: the workers) counts in this
    process's children's CPU seconds. Whether it could."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return bool(libc.prctl(36, 1, 0, 0, 0) == 0)  # PR_SET_CHILD_SUBREAPER
    except (OSError, AttributeError):
        return False


def _reap(orphans: set[psutil.Process], timeout_s: float = 60.0) -> None:
    """Wait for ``orphans`` to end (each ends once the run that started it has)."""
    deadline = time.monotonic() + timeout_s
    for orphan in orphans:
        while time.monotonic() < deadline:
            with contextlib.suppress(ChildProcessError):
                if os.waitpid(orphan.pid, os.WNOHANG)[0] == 0:
                    time.sleep(0.01)
                    continue
            break


def _children_cpu() -> float:
    """CPU seconds (user and system) of this process's children that were waited for."""
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    return used.ru_utime + used.ru_stime


def _warm() -> None:
    """On a worker: import what a trial needs, as a run's first trials would."""
    import refund_agent  # type: ignore[import-not-found]  # noqa: F401

    import agentrig.harness.live.trial
    import agentrig.harness.scale.trials  # noqa: F401


def _rss_mib() -> float:
    return float(psutil.Process().memory_info().rss) / 2**20


def throughput(space: Workspace, trials: int, slots: int) -> dict[str, Any]:
    """Trials/s on 1 and 4 workers against one ``agentrig serve``, with the CPU seconds each
    part spent per trial (this process: the client and the scheduler; the server; the
    workers) and the share of the machine's CPUs they kept busy: near 1, the machine is the
    limit, not the engine."""
    scenario = space.scenario(trials, concurrency=trials)
    rates: dict[str, Any] = {}
    cpus = common.machine().get("cpus") or os.cpu_count() or 1
    server = psutil.Process(space.server.process.pid)
    for workers in (1, 4):
        with cluster(workers, slots) as client:
            client.run(_warm)
            # A worker's first trial of a scenario sets it up (the agent built, the SDK clients
            # made): a fixed cost per worker, paid by all at once, timed apart here.
            launcher = DaskTrials(client, NO_CAP)
            first = space.scenario(max(3, workers * slots), concurrency=workers * slots)
            rates[f"{workers}_workers_first_round_s"] = trials_on(
                client, first, None, None, launcher
            )[1]
            before = _cpu_seconds(client, server)
            took: list[float] = []
            result, seconds = trials_on(client, scenario, took=took, launcher=launcher)
            after = _cpu_seconds(client, server)
            launcher.close()
        assert result.trials == trials, result.reason
        rates[f"{workers}_workers_trials_per_s"] = trials / seconds
        rates[f"{workers}_workers_s"] = seconds
        # a trial's own seconds, and the share of the run its slots were running one: a longer
        # trial is contention (CPUs, server); idle slots are the last trials' tail
        rates[f"{workers}_workers_trial_s"] = common.median(took)
        rates[f"{workers}_workers_slots_busy"] = sum(took) / (seconds * workers * slots)
        spent = {part: after[part] - before[part] for part in after}
        for part, used in spent.items():
            rates[f"{workers}_workers_cpu_s_per_trial_{part}"] = used / trials
        rates[f"{workers}_workers_cpu_busy"] = sum(spent.values()) / (seconds * cpus)
    rates["ratio"] = rates["4_workers_trials_per_s"] / rates["1_workers_trials_per_s"]
    return rates


def _cpu_seconds(client: Client, server: psutil.Process) -> dict[str, float]:
    """CPU seconds so far: this process's, the server's, the workers' (summed)."""

    def used(process: psutil.Process) -> float:
        times = process.cpu_times()
        return float(times.user + times.system)

    workers = client.run(lambda: used(psutil.Process()))
    return {
        "client": used(psutil.Process()),
        "server": used(server),
        "workers": sum(workers.values()),
    }


def throughput_in_workers(latency: float, trials: int, slots: int) -> dict[str, Any]:
    """The throughput case with the models inside the workers (``IN_WORKER_MODELS``): what
    the engine adds, without one server that every worker's calls share."""
    folder = Path(tempfile.mkdtemp(prefix="agentrig-bench-scale-models-"))
    (folder / "bench_scale_models.py").write_text(IN_WORKER_MODELS.format(latency=latency))
    sys.path.insert(0, str(folder))
    import bench_scale_models  # type: ignore[import-not-found]

    text = (EXAMPLE / "refund.scenario.yaml").read_text()
    data = yaml.safe_load(text)
    data["agent"] = {"builder": "bench_scale_models:build"}
    data["judge"]["criteria"] = [data["judge"]["criteria"][0]]  # the judge's model: no votes
    data["trials"].update(max=trials, sequential=False, concurrency=trials)
    data["trials"]["require"]["at_least"] = 0.3
    path = folder / "refund.scenario.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    scenario = load_scenario(path)
    rates: dict[str, Any] = {}
    for workers in (1, 4):
        with cluster(workers, slots) as client:
            client.run(lambda: bench_scale_models.build().build())
            launcher = DaskTrials(client, NO_CAP)
            run = LiveRun(launcher=launcher, models=bench_scale_models.models())
            started = time.perf_counter()
            result = asyncio.run(run_live_scenario(scenario, run))
            seconds = time.perf_counter() - started
            launcher.close()
        assert result.trials == trials, result.reason
        rates[f"{workers}_workers_trials_per_s"] = trials / seconds
    rates["ratio"] = rates["4_workers_trials_per_s"] / rates["1_workers_trials_per_s"]
    shutil.rmtree(folder, ignore_errors=True)
    return rates


def _suite_folder(count: int) -> Path:
    """A folder of ``count`` scripted scenarios (the bundled tools scenarios, copied under new
    names)."""
    folder = Path(tempfile.mkdtemp(prefix="agentrig-bench-scale-suite-")) / "suite"
    folder.mkdir()
    sources = sorted((ROOT / "scenarios" / "tools").glob("*.scenario.yaml"))
    for i in range(count):
        source = sources[i % len(sources)]
        text = source.read_text().replace("\nname: ", f"\nname: copy-{i}-", 1)
        (folder / f"copy-{i}.scenario.yaml").write_text(text)
    return folder


def _suite(count: int) -> tuple[Path, list[Scenario]]:
    """The folder of :func:`_suite_folder`, and its scenarios loaded."""
    folder = _suite_folder(count)
    scenarios = list(load_suite([folder]).scenarios)
    assert len(scenarios) == count
    return folder.parent, scenarios


def suite_as_run(count: int, turn: int, workers: int = 2) -> dict[str, float]:
    """``count`` scripted scenarios run as a user runs them: ``agentrig run DIR --workers
    WORKERS`` against ``agentrig run DIR --executor dask --workers WORKERS``, each a process
    of its own timed whole (its start-up, the loading, the workers' start or the cluster's
    opening, the run and the reports), the pool first on even ``turn``s, Dask first on odd
    ones; the ratio of their wall times and the load average at the end."""
    folder = _suite_folder(count)
    measured = _pool_and_dask(folder, workers, dask_first=turn % 2 == 1)
    shutil.rmtree(folder.parent, ignore_errors=True)
    pool, dask = measured[f"pool_{workers}_workers_s"], measured[f"dask_{workers}_workers_s"]
    ratios = {"ratio": dask / pool}
    if f"pool_{workers}_workers_cpu_s" in measured:  # on two CPUs, a run takes at least half
        ratios["cpu_ratio"] = (
            measured[f"dask_{workers}_workers_cpu_s"] / measured[f"pool_{workers}_workers_cpu_s"]
        )
    return {**measured, **ratios, "load": os.getloadavg()[0]}


def suite_overhead(count: int, workers: int = 2) -> dict[str, float]:
    """``count`` scripted scenarios in a pool of ``workers`` processes (``--workers``; one:
    this process alone) and on a local cluster of as many workers: wall times (the cluster's
    opening included) and the CPU seconds of this process and of the workers."""
    folder, scenarios = _suite(count)
    here = psutil.Process()
    started, cpu, pool_cpu = time.perf_counter(), _cpu(here), os.times()
    pool = run_suite(scenarios, workers=workers)
    pool_s = time.perf_counter() - started
    ended = os.times()  # the pool's workers, waited for, are this process's children
    pool_workers_cpu = sum(ended[2:4]) - sum(pool_cpu[2:4])
    pool_main_cpu = _cpu(here) - cpu
    started = time.perf_counter()
    with dask_session(DaskExecutor(), scenarios, workers=workers) as client:
        opened_s = time.perf_counter() - started
        processes = [psutil.Process(pid) for pid in client.run(os.getpid).values()]
        cpu, workers_cpu = _cpu(here), sum(map(_cpu, processes))
        dask = run_suite_on_dask(client, scenarios)
        ran_s = time.perf_counter() - started - opened_s
        dask_main_cpu = _cpu(here) - cpu
        dask_workers_cpu = sum(map(_cpu, processes)) - workers_cpu
    dask_s = time.perf_counter() - started
    assert [s.passed for s in dask.scenarios] == [s.passed for s in pool.scenarios]
    shutil.rmtree(folder, ignore_errors=True)
    return {
        f"pool_{workers}_workers_s": pool_s,
        f"dask_{workers}_workers_s": dask_s,
        "dask_open_s": opened_s,
        "dask_run_s": ran_s,
        "ratio": dask_s / pool_s,
        "ratio_run_alone": ran_s / pool_s,
        # CPU seconds: the pool's include its workers' start (one worker: this process runs
        # the scenarios); Dask's, the run alone
        "pool_main_cpu_s": pool_main_cpu,
        "pool_workers_cpu_s": pool_workers_cpu,
        "dask_main_cpu_s": dask_main_cpu,
        "dask_workers_cpu_s": dask_workers_cpu,
        "load": os.getloadavg()[0],
    }


def _noop(payload: bytes) -> int:
    """On a worker: a task that does nothing with what it was sent."""
    return len(payload)


def floor(count: int, idle_s: float = 2.0) -> dict[str, float]:
    """What the engine costs per task, agentrig aside: ``count`` tasks that do nothing, each
    sent a pickled scenario's bytes, submitted and fetched as a suite's are
    (``map_tasks``/``finished``) on a local 2-worker cluster: the CPU milliseconds a task of this
    process (the client, the scheduler, the nannies) and of the workers; and what the open
    cluster costs a second when it runs nothing."""
    folder, scenarios = _suite(1)
    payload = pickle.dumps(scenarios[0], pickle.HIGHEST_PROTOCOL)
    shutil.rmtree(folder, ignore_errors=True)
    here = psutil.Process()
    with dask_session(DaskExecutor(), scenarios, workers=2) as client:
        processes = [psutil.Process(pid) for pid in client.run(os.getpid).values()]

        def used() -> tuple[float, float]:
            return _cpu(here), sum(map(_cpu, processes))

        (main, workers), started = used(), time.perf_counter()
        futures = map_tasks(client, _noop, [payload] * count, name="bench-noop")
        assert sum(1 for _, result in finished(client, futures) if result == len(payload)) == count
        seconds = time.perf_counter() - started
        del futures
        time.sleep(0.5)  # the results released
        (main_after, workers_after) = used()
        time.sleep(idle_s)
        main_idle, workers_idle = used()
    return {
        "main_cpu_ms_per_task": 1000 * (main_after - main) / count,
        "workers_cpu_ms_per_task": 1000 * (workers_after - workers) / count,
        "tasks_per_s": count / seconds,
        "idle_main_cpu_s_per_s": (main_idle - main_after) / idle_s,
        "idle_workers_cpu_s_per_s": (workers_idle - workers_after) / idle_s,
        "load": os.getloadavg()[0],
    }


def _cpu(process: psutil.Process) -> float:
    """``process``'s CPU seconds so far (user and system)."""
    times = process.cpu_times()
    return float(times.user + times.system)


def killed_worker(space: Workspace, trials: int, slots: int) -> dict[str, Any]:
    scenario = space.scenario(trials, concurrency=trials)
    with cluster(2, slots) as client:
        calm, _ = trials_on(client, scenario, "kill")
    space.restart()
    with cluster(2, slots) as client:
        pids = client.run(os.getpid)
        victim = sorted(pids)[0]
        held: list[str] = []
        killer = threading.Thread(target=_kill_when_busy, args=(client, victim, pids, held))
        killer.start()
        result, seconds = trials_on(client, scenario, "kill")
        killer.join()
    recorded = Counter((r.index, r.attempt) for r in result.records)
    counted = {r.index: r.status for r in result.records if r.counted}
    undisturbed = {r.index: r.status for r in calm.records if r.counted}
    run_again = {r.index for r in result.records if r.attempt > 0}
    return {
        "trials_held_by_the_killed_worker": len(held),
        "trials_counted": result.trials,
        "records": len(result.records),
        "recorded_twice": sum(1 for n in recorded.values() if n > 1),
        "indices_missing": len(set(range(trials)) - {index for index, _ in recorded}),
        "trials_run_again": len(run_again),
        "verdict": f"{result.verdict} {result.successes}/{result.trials}",
        "undisturbed_verdict": f"{calm.verdict} {calm.successes}/{calm.trials}",
        "outcomes_differing_from_undisturbed_outside_those_run_again": sum(
            1
            for i, status in counted.items()
            if i not in run_again and undisturbed.get(i) != status
        ),
        "seconds": seconds,
    }


def _kill_when_busy(client: Client, victim: str, pids: dict[str, int], held: list[str]) -> None:
    """SIGKILL ``victim``'s process once it holds trials past the first few."""
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        keys = [str(key) for key in client.processing().get(victim, ())]
        running = [key for key in keys if int(_INDEX.search(key)[1]) >= 10]  # type: ignore[index]
        if running:
            os.kill(pids[victim], signal.SIGKILL)
            held.extend(running)
            return
        time.sleep(0.01)


def main() -> None:
    parser = common.parser(__doc__ or "")
    parser.add_argument("--latency", type=float, default=1.0, help="seconds a model answer takes")
    parser.add_argument("--trials", type=int, default=8, help="trials of the throughput case")
    parser.add_argument("--slots", type=int, default=1, help="trials a worker runs at once")
    parser.add_argument(
        "--kill-latency", type=float, default=0.05, help="seconds an answer takes, kill case"
    )
    parser.add_argument("--kill-slots", type=int, default=8, help="trials a worker runs, kill case")
    parser.add_argument("--scenarios", type=int, default=1000, help="the deterministic suite")
    parser.add_argument("--kill-trials", type=int, default=200, help="trials of the kill case")
    parser.add_argument(
        "--cases",
        default=",".join(CASES),
        help=f"which cases to run, comma-separated ({', '.join(CASES)}); each --repeats times",
    )
    args = parser.parse_args()
    if args.quick:
        args.trials, args.scenarios, args.kill_trials, args.latency = 8, 100, 40, 0.1
    cases = args.cases.split(",")
    if unknown := set(cases) - set(CASES):
        parser.error(f"--cases: unknown {', '.join(sorted(unknown))}")
    print(common.machine_line(common.machine()))
    print(common.command_line(), "\n")
    results: dict[str, Any] = {}
    if "startup" in cases:
        results["startup"] = startup(1 if args.quick else args.repeats or 3)
        print("start-up of a 2-worker local cluster:", _shown(results["startup"]))
    if "suite" in cases:
        for turn in range(args.repeats or 1):
            results["suite"] = suite_as_run(args.scenarios, turn)
            print(
                f"agentrig run, {args.scenarios} scripted scenarios, 2 workers:",
                _shown(results["suite"]),
            )
    if "suite_cpu" in cases:
        for _ in range(args.repeats or 1):
            results["suite_cpu"] = suite_overhead(args.scenarios)
            print(
                f"{args.scenarios} scripted scenarios, 2 workers, in this process:",
                _shown(results["suite_cpu"]),
            )
    if "floor" in cases:
        for _ in range(args.repeats or 1):
            results["floor"] = floor(args.scenarios)
            print(f"{args.scenarios} no-op tasks, 2 workers:", _shown(results["floor"]))
    if "alone" in cases:
        for _ in range(args.repeats or 1):
            results["alone"] = suite_overhead(args.scenarios, workers=1)
            print(f"{args.scenarios} scripted scenarios, 1 worker:", _shown(results["alone"]))
    if "models" in cases:
        results["throughput_models_in_workers"] = throughput_in_workers(
            args.latency / 2, 2 * args.trials, args.slots
        )
        print(
            f"{2 * args.trials} trials, models in the workers, 1 vs 4 workers:",
            _shown(results["throughput_models_in_workers"]),
        )
    if "throughput" in cases:
        space = Workspace(args.latency)
        try:
            results["throughput"] = throughput(space, args.trials, args.slots)
            print(
                f"{args.trials} latency-bound trials, 1 vs 4 workers:",
                _shown(results["throughput"]),
            )
        finally:
            space.close()
    if "killed" in cases:
        space = Workspace(args.kill_latency)
        try:
            results["killed"] = killed_worker(space, args.kill_trials, args.kill_slots)
            print(f"{args.kill_trials} trials, a worker killed:", _shown(results["killed"]))
        finally:
            space.close()
    common.save_json(args.json, {"command": common.command_line(), **results})


def _shown(values: dict[str, Any]) -> str:
    return ", ".join(f"{key} {common._cell(value)}" for key, value in values.items())


if __name__ == "__main__":
    main()

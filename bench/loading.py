"""Start-up and loading of a scenario suite: what a user waits for before the first scenario runs.

Generates the scenario files of ``bench/suite.py`` (1,000 by default) and times, each in a fresh
interpreter and ``--repeats`` times (taking turns, so that a spell of machine load hits each
alike; medians):

- ``import``: importing the loader alone (the interpreter's start-up included);
- ``load``: the same interpreter importing the loader and loading every file (``load_suite``),
  the target "start-up plus loading 1,000 scenario files <= 1 s";
- ``collect``: ``pytest --agentrig-scenarios DIR --collect-only`` in one process, the target
  "collecting them <= 2 s";
- ``import run``: importing the runner as a worker process does (``agentrig.harness.runner``).

Each row gives the wall seconds and the CPU seconds (user + system, of the child process: on a
shared machine CPU time says more than wall time) and the peak resident memory (MiB), after one
untimed run of each that writes Python's bytecode caches (the children run without
``PYTHONDONTWRITEBYTECODE``). It also checks that a file with a mistake is still reported with
its file, line and field.

    .venv/bin/python bench/loading.py                 # 1,000 files, 5 repeats
    .venv/bin/python bench/loading.py --quick         # 20 files, 1 repeat, no warm-up run
    .venv/bin/python bench/loading.py --sizes 200,1000 --repeats 3
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import _common as common
import suite

from agentrig.harness.errors import ScenarioFileError
from agentrig.harness.scenarios.loader import load_scenario

SIZES = (1000,)
QUICK_SIZES = (20,)
REPEATS = 5
QUICK_REPEATS = 1

CLOCK = "AGENTRIG_BENCH_CLOCK"
"""The file a measured command writes, when it is ready, its wall clock and CPU time."""

_LOAD = (
    "import os, sys, time\n"
    "from agentrig.harness.scenarios.loader import load_suite\n"
    "loaded = load_suite(sys.argv[1])\n"
    # ready: what follows is the interpreter's exit
    f"open(os.environ[{CLOCK!r}], 'w').write(f'{{time.time()!r}} {{time.process_time()!r}}')\n"
    "assert not loaded.broken, loaded.broken[:1]\n"
    "assert len(loaded.scenarios) == int(sys.argv[2]), len(loaded.scenarios)\n"
)


def child_environment() -> dict[str, str]:
    """This environment, with Python's bytecode cache on: a user's installed agentrig has its
    ``.pyc`` files, while a machine that sets ``PYTHONDONTWRITEBYTECODE`` (this one does) would
    compile every module of a source checkout at each start."""
    return {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def measured(
    command: list[str], cwd: Path | None = None, environment: dict[str, str] | None = None
) -> dict[str, Any]:
    """Run ``command`` in a child process: wall s, CPU s and peak MiB of it (``wait4``'s
    figures of that child, and of any process it waited for), and the wall s and CPU s until it
    was ready (``ready_wall_s``, ``ready_cpu_s``) when it says so in the file named by
    :data:`CLOCK`."""
    with tempfile.TemporaryDirectory(prefix="agentrig-bench-clock-") as temp:
        clock = Path(temp) / "ready"
        output = [Path(temp) / "stdout", Path(temp) / "stderr"]
        env = {**child_environment(), **(environment or {}), CLOCK: str(clock)}
        with output[0].open("w") as stdout, output[1].open("w") as stderr:
            started_at, started = time.time(), time.perf_counter()
            process = subprocess.Popen(command, cwd=cwd, env=env, stdout=stdout, stderr=stderr)
            _, status, usage = os.wait4(process.pid, 0)
            wall = time.perf_counter() - started
        process.returncode = code = os.waitstatus_to_exitcode(status)  # waited for: reaped
        ready = clock.read_text().split() if clock.exists() else []
        out, err = (path.read_text(errors="replace")[-4000:] for path in output)
    if code != 0:
        print(out, err, sep="\n", file=sys.stderr)
        raise SystemExit(f"{command[:4]} exited {code}")
    sample = {
        "wall_s": wall,
        "cpu_s": usage.ru_utime + usage.ru_stime,
        "peak_mib": usage.ru_maxrss / 1024,
        "stdout": out,
    }
    if ready:
        sample["ready_wall_s"] = float(ready[0]) - started_at
        sample["ready_cpu_s"] = float(ready[1])
    return sample


_BENCH_PATH = os.pathsep.join(
    [str(Path(__file__).parent), *filter(None, [os.environ.get("PYTHONPATH")])]
)
COLLECT_ALONE = {"PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1", "PYTHONPATH": _BENCH_PATH}
"""``collect``'s environment: no pytest plugin loads but agentrig's and the one that says when
collection ended (``-p``), where ``collect, every plugin`` loads whatever this environment has
installed (the frameworks' own pytest plugins, langsmith's among them). The bench folder comes
first on the path, then this environment's own ``PYTHONPATH`` (a worktree's ``src``: the code
measured)."""


def commands(folder: Path, count: int) -> dict[str, tuple[list[str], dict[str, str]]]:
    """The measured commands and the environment each adds, by row name."""
    python = sys.executable
    collect = [python, "-m", "pytest", "--agentrig-scenarios", str(folder), "--collect-only"]
    collect += ["-q", "-p", "no:cacheprovider", "-p", "no:xdist", "-p", "no:randomly"]
    collect += ["-p", "_collected_clock"]
    return {
        "import": ([python, "-c", "import agentrig.harness.scenarios.loader"], {}),
        "load": ([python, "-c", _LOAD, str(folder), str(count)], {}),
        "collect": ([*collect, "-p", "agentrig"], COLLECT_ALONE),
        "collect, every plugin": (collect, {"PYTHONPATH": COLLECT_ALONE["PYTHONPATH"]}),
        "import run": ([python, "-c", "import agentrig.harness.runner"], {}),
    }


def _row(count: int, steps: int, name: str, samples: list[dict[str, Any]]) -> dict[str, Any]:
    """One row of the table: the medians of ``samples`` of the command ``name``."""
    row: dict[str, Any] = {
        "files": count,
        "steps": steps,
        "what": name,
        "wall_s": common.median([s["wall_s"] for s in samples]),
        "cpu_s": common.median([s["cpu_s"] for s in samples]),
        "peak_mib": max(s["peak_mib"] for s in samples),
    }
    if all("ready_wall_s" in s for s in samples):
        row["ready_wall_s"] = common.median([s["ready_wall_s"] for s in samples])
        row["ready_cpu_s"] = common.median([s["ready_cpu_s"] for s in samples])
    return row


def check_bad_file(folder: Path) -> str:
    """A file with a mistake still names its file, line and field: the first error line. (In
    this process: what it checks is the message, not a start-up.)"""
    bad = folder / "broken.scenario.yaml"
    text = (folder / "bench-00000.scenario.yaml").read_text(encoding="utf-8")
    bad.write_text(text.replace("trace_mode: separated", "trace_mode: sideways", 1), "utf-8")
    try:
        load_scenario(bad)
    except ScenarioFileError as error:
        first = str(error).splitlines()[0]
    else:
        first = "no error"
    line = next(i for i, row in enumerate(text.splitlines(), 1) if "trace_mode:" in row)
    expected = f"{bad}:{line}:15: agent.trace_mode: 'sideways' is not one of"
    if not first.startswith(expected):
        raise SystemExit(f"a bad file is reported as {first!r}, not {expected!r}...")
    bad.unlink()
    return first


def main() -> None:
    parser = common.parser(__doc__.splitlines()[0])
    args = parser.parse_args()
    sizes, repeats = common.resolve(
        args, sizes=SIZES, quick_sizes=QUICK_SIZES, repeats=REPEATS, quick_repeats=QUICK_REPEATS
    )
    info = common.machine()
    print("bench/loading.py: start-up, loading and collecting a scenario suite")
    print(common.machine_line(info))
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="agentrig-bench-") as temp:
        for count in sizes:
            folder = Path(temp) / f"scenarios-{count}"
            folder.mkdir()
            steps = suite.write_scenarios(folder, count)
            reported = check_bad_file(folder)
            runs: dict[str, list[dict[str, Any]]] = {}
            if not args.quick:  # a smoke run times nothing worth warming up for
                for command, adds in commands(folder, count).values():  # writes bytecode caches
                    measured(command, cwd=Path(temp), environment=adds)
            for _ in range(repeats):
                for name, (command, adds) in commands(folder, count).items():
                    sample = measured(command, cwd=Path(temp), environment=adds)
                    runs.setdefault(name, []).append(sample)
            for name in ("collect", "collect, every plugin"):
                collected = runs[name][-1]["stdout"]
                if f"{count} tests collected" not in collected:
                    raise SystemExit(f"pytest did not collect {count} tests: {collected[-400:]}")
            rows += [_row(count, steps, name, samples) for name, samples in runs.items()]
    print(f"\nmedians of {repeats} runs, each in a fresh interpreter; a bad file: {reported}\n")
    print(
        common.table(
            ("files", "what", "wall s", "CPU s", "ready: wall s", "CPU s", "peak MiB"),
            [
                (
                    r["files"],
                    r["what"],
                    r["wall_s"],
                    r["cpu_s"],
                    r.get("ready_wall_s", "-"),
                    r.get("ready_cpu_s", "-"),
                    r["peak_mib"],
                )
                for r in rows
            ],
        )
    )
    print(
        "\nready: from the start of the process to the moment loading (load_suite) or collecting "
        "(pytest_collection_finish) ended; the rest of each process is pytest's report and the "
        "interpreter's exit (its last full collection, and freeing every object). collect: "
        "pytest with agentrig's plugin alone; collect, every plugin: with every pytest plugin "
        "this environment has installed"
    )
    targets = {"load": 1.0, "collect": 2.0}
    print(
        "\ntargets (1,000 files), wall s until ready: start-up + loading <= 1 s, pytest "
        "collecting <= 2 s\n"
        + common.table(
            ("files", "measure", "ready: wall s", "CPU s", "whole process: wall s", "target s"),
            [
                (
                    r["files"],
                    r["what"],
                    r["ready_wall_s"],
                    r["ready_cpu_s"],
                    r["wall_s"],
                    targets[r["what"]],
                )
                for r in rows
                if r["what"] in targets
            ],
        )
    )
    common.save_json(
        args.json,
        {
            "benchmark": "loading",
            "command": common.command_line(),
            "machine": info,
            "repeats": repeats,
            "rows": rows,
        },
    )


if __name__ == "__main__":
    main()

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

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import _common as common
import suite

SIZES = (1000,)
QUICK_SIZES = (20,)
REPEATS = 5
QUICK_REPEATS = 1

_PROBE = (
    "import json, resource, subprocess, sys, time\n"
    "started = time.perf_counter()\n"
    "done = subprocess.run(sys.argv[1:], capture_output=True, text=True, check=False)\n"
    "wall = time.perf_counter() - started\n"
    "usage = resource.getrusage(resource.RUSAGE_CHILDREN)\n"
    "print(json.dumps([done.returncode, done.stdout[-4000:], done.stderr[-4000:], wall,\n"
    "                  usage.ru_utime + usage.ru_stime, usage.ru_maxrss]))\n"
)

_LOAD = (
    "import sys, time\n"
    "from agentrig.harness.scenarios.loader import load_suite\n"
    "loaded = load_suite(sys.argv[1])\n"
    "print(time.process_time())\n"  # CPU s until loaded: the rest is the interpreter's exit
    "assert not loaded.broken, loaded.broken[:1]\n"
    "assert len(loaded.scenarios) == int(sys.argv[2]), len(loaded.scenarios)\n"
)


def child_environment() -> dict[str, str]:
    """This environment, with Python's bytecode cache on: a user's installed agentrig has its
    ``.pyc`` files, while a machine that sets ``PYTHONDONTWRITEBYTECODE`` (this one does) would
    compile every module of a source checkout at each start."""
    return {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def measured(command: list[str], cwd: Path | None = None) -> dict[str, float]:
    """Run ``command`` in a child of a one-off process: wall s, CPU s and peak MiB of it."""
    wrapper = subprocess.run(
        [sys.executable, "-c", _PROBE, *command],
        capture_output=True,
        text=True,
        check=True,
        cwd=cwd,
        env=child_environment(),
    )
    code, stdout, stderr, wall, cpu, peak_kib = json.loads(wrapper.stdout)
    if code != 0:
        print(stdout, stderr, sep="\n", file=sys.stderr)
        raise SystemExit(f"{command[:4]} exited {code}")
    return {"wall_s": wall, "cpu_s": cpu, "peak_mib": peak_kib / 1024, "stdout": stdout}


def commands(folder: Path, count: int) -> dict[str, list[str]]:
    """The measured commands, by row name."""
    python = sys.executable
    collect = [python, "-m", "pytest", "--agentrig-scenarios", str(folder), "--collect-only"]
    collect += ["-q", "-p", "no:cacheprovider", "-p", "no:xdist", "-p", "no:randomly"]
    return {
        "import": [python, "-c", "import agentrig.harness.scenarios.loader"],
        "load": [python, "-c", _LOAD, str(folder), str(count)],
        "collect": collect,
        "import run": [python, "-c", "import agentrig.harness.runner"],
    }


def check_bad_file(folder: Path) -> str:
    """A file with a mistake still names its file, line and field: the first error line."""
    bad = folder / "broken.scenario.yaml"
    text = (folder / "bench-00000.scenario.yaml").read_text(encoding="utf-8")
    bad.write_text(text.replace("trace_mode: separated", "trace_mode: sideways", 1), "utf-8")
    code = (
        "import sys\n"
        "from agentrig.harness.scenarios.loader import load_scenario\n"
        "from agentrig.harness.errors import ScenarioFileError\n"
        "try:\n"
        "    load_scenario(sys.argv[1])\n"
        "except ScenarioFileError as error:\n"
        "    print(str(error).splitlines()[0])\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, str(bad)], capture_output=True, text=True, check=True
    )
    line = next(i for i, row in enumerate(text.splitlines(), 1) if "trace_mode:" in row)
    first = done.stdout.strip()
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
            runs: dict[str, list[dict[str, float]]] = {}
            if not args.quick:  # a smoke run times nothing worth warming up for
                for command in commands(folder, count).values():  # writes the bytecode caches
                    measured(command, cwd=Path(temp))
            for _ in range(repeats):
                for name, command in commands(folder, count).items():
                    runs.setdefault(name, []).append(measured(command, cwd=Path(temp)))
            collected = runs["collect"][-1]["stdout"]
            if f"{count} tests collected" not in collected:
                raise SystemExit(f"pytest did not collect {count} tests: {collected[-400:]}")
            for name, samples in runs.items():
                row: dict[str, Any] = {
                    "files": count,
                    "steps": steps,
                    "what": name,
                    "wall_s": common.median([s["wall_s"] for s in samples]),
                    "cpu_s": common.median([s["cpu_s"] for s in samples]),
                    "peak_mib": max(s["peak_mib"] for s in samples),
                }
                if name == "load":  # its child prints the CPU s it took until loaded
                    until = [float(str(s["stdout"]).split()[-1]) for s in samples]
                    row["cpu_until_loaded_s"] = common.median(until)
                rows.append(row)
    print(f"\nmedians of {repeats} runs, each in a fresh interpreter; a bad file: {reported}\n")
    print(
        common.table(
            ("files", "what", "wall s", "CPU s", "peak MiB"),
            [(r["files"], r["what"], r["wall_s"], r["cpu_s"], r["peak_mib"]) for r in rows],
        )
    )
    for row in rows:
        if "cpu_until_loaded_s" in row:
            exit_s = row["cpu_s"] - row["cpu_until_loaded_s"]
            print(
                f"\nload, {row['files']:,} files: {row['cpu_until_loaded_s']:.2f} CPU s until "
                f"load_suite returned; the other {exit_s:.2f} s are the interpreter's exit (its "
                "last full collection, and freeing every object)"
            )
    targets = {"load": 1.0, "collect": 2.0}
    print(
        "\ntargets (1,000 files): start-up + loading <= 1 s, pytest collecting <= 2 s\n"
        + common.table(
            ("files", "measure", "wall s", "CPU s", "target s"),
            [
                (r["files"], r["what"], r["wall_s"], r["cpu_s"], targets[r["what"]])
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

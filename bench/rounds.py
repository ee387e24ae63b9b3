"""bench/loop.py in rounds, under one or more interpreters, with a pause between rounds.

A single run of ``bench/loop.py`` tells how fast agentrig was during the seconds it took. On a
shared machine whose speed drifts with its neighbours' load, several runs spread over minutes tell
more; and the interpreter's build (how it was compiled and linked) changes the figures as much as
the machine does. This script runs ``loop.py`` once per interpreter per round, the interpreters
taking turns, and prints every run and a summary per interpreter.

    .venv/bin/python bench/rounds.py                                   # this interpreter, 6 rounds
    .venv/bin/python bench/rounds.py --python /usr/bin/python3.11      # and the system's build
    .venv/bin/python bench/rounds.py --quick --rounds 1 --pause 0      # a smoke run

Another interpreter must be the same Python version as this one: it runs with this checkout's
``src`` and this environment's packages on its path (compiled packages such as pydantic-core are
built for one Python version).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import sysconfig
import tempfile
import time
from pathlib import Path
from typing import Any

import _common as common

BENCH = Path(__file__).resolve().parent
SRC = BENCH.parent / "src"
ROUNDS = 6
PAUSE_S = 30.0


def version_of(python: str) -> str:
    """``major.minor`` of the interpreter at ``python``; exits with a clear message if it won't run."""
    try:
        done = subprocess.run(
            [python, "-c", "import sys; print('%d.%d' % sys.version_info[:2])"],
            capture_output=True,
            text=True,
            check=True,
            timeout=60,
        )
    except (OSError, subprocess.SubprocessError) as error:
        raise SystemExit(f"--python {python}: cannot run it ({error})") from None
    return done.stdout.strip()


def environment_for(python: str) -> dict[str, str]:
    """The environment ``python`` runs ``loop.py`` in: for another interpreter, this checkout's
    ``src`` and this environment's packages on ``PYTHONPATH``."""
    env = dict(os.environ)
    if Path(python).resolve() == Path(sys.executable).resolve():
        return env
    here = f"{sys.version_info[0]}.{sys.version_info[1]}"
    there = version_of(python)
    if there != here:
        raise SystemExit(
            f"--python {python} is Python {there}, this one is {here}: run this script with a "
            f"Python {there} environment that has agentrig installed, or pick a {here} interpreter"
        )
    paths = [str(SRC), sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]]
    if env.get("PYTHONPATH"):
        paths.append(env["PYTHONPATH"])
    env["PYTHONPATH"] = os.pathsep.join(dict.fromkeys(paths))
    return env


def run_loop(python: str, env: dict[str, str], loop_args: list[str]) -> dict[str, Any]:
    """One run of ``loop.py`` under ``python``; its saved results."""
    with tempfile.TemporaryDirectory() as folder:
        saved = Path(folder) / "loop.json"
        done = subprocess.run(
            [python, str(BENCH / "loop.py"), *loop_args, "--json", str(saved)],
            env=env,
            capture_output=True,
            text=True,
            check=False,
        )
        if done.returncode != 0:
            raise SystemExit(f"bench/loop.py under {python} failed:\n{done.stdout}{done.stderr}")
        data: dict[str, Any] = json.loads(saved.read_text())
        return data


def run_row(round_number: int, python: str, data: dict[str, Any]) -> dict[str, Any]:
    """What the table shows of one run."""
    results = data["results"]
    agentrig = [row["agentrig_us_per_step"] for row in results]
    floor = [row["floor_us_per_step"] for row in results]
    targets = data["targets"]
    return {
        "round": round_number,
        "python": python,
        "interpreter": f"{data['machine']['python']}, libpython {data['machine']['libpython']}",
        "started": data["machine"]["date"],
        "sizes": [row["n"] for row in results],
        "agentrig_us_per_step": agentrig,
        "floor_us_per_step": floor,
        "target_us_per_step": targets["us_per_step_target"],
        "worst_us_per_step": targets["worst_us_per_step"],
        "met_as_measured": targets["met_as_measured"],
        "worst_us_per_step_scaled_to_reference": targets["worst_us_per_step_scaled_to_reference"],
        "growth_ratio": data["growth_ratio"]["agentrig"],
    }


def summary(runs: list[dict[str, Any]], pythons: list[str]) -> list[dict[str, Any]]:
    """Per interpreter: how many runs met the target as measured, and the spread of the worst N."""
    rows = []
    for python in pythons:
        mine = [run for run in runs if run["python"] == python]
        worst = [run["worst_us_per_step"] for run in mine]
        floors = [value for run in mine for value in run["floor_us_per_step"]]
        rows.append(
            {
                "python": python,
                "runs": len(mine),
                "met_as_measured": sum(run["met_as_measured"] for run in mine),
                "worst_us_per_step_median": statistics.median(worst),
                "worst_us_per_step_min": min(worst),
                "worst_us_per_step_max": max(worst),
                "floor_us_per_step_min": min(floors),
                "floor_us_per_step_max": max(floors),
                "worst_scaled_to_reference_max": max(
                    run["worst_us_per_step_scaled_to_reference"] for run in mine
                ),
            }
        )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--python",
        action="append",
        default=[],
        metavar="PATH",
        help="another interpreter to run loop.py under (repeatable); this one always runs",
    )
    parser.add_argument("--rounds", type=int, default=ROUNDS, help=f"default {ROUNDS}")
    parser.add_argument(
        "--pause", type=float, default=PAUSE_S, help=f"seconds between rounds (default {PAUSE_S})"
    )
    parser.add_argument("--quick", action="store_true", help="pass --quick to loop.py")
    parser.add_argument("--sizes", type=common.sizes_option, default=None, help="for loop.py")
    parser.add_argument("--repeats", type=int, default=None, help="for loop.py")
    parser.add_argument("--json", type=Path, default=None, metavar="PATH", help="save results")
    args = parser.parse_args()
    if args.rounds < 1:
        raise SystemExit("--rounds must be >= 1")
    if args.pause < 0:
        raise SystemExit("--pause must be >= 0")
    pythons = list(dict.fromkeys([sys.executable, *args.python]))
    environments = {python: environment_for(python) for python in pythons}
    loop_args = ["--quick"] if args.quick else []
    if args.sizes:
        loop_args += ["--sizes", ",".join(str(size) for size in args.sizes)]
    if args.repeats:
        loop_args += ["--repeats", str(args.repeats)]

    info = common.machine()
    print("bench/rounds.py: bench/loop.py in rounds, interpreters taking turns")
    print(common.machine_line(info))
    print(f"{args.rounds} round(s), {args.pause:g} s apart; loop.py {' '.join(loop_args)}\n")
    runs = []
    for round_number in range(1, args.rounds + 1):
        if round_number > 1:
            time.sleep(args.pause)
        for python in pythons:
            data = run_loop(python, environments[python], loop_args)
            runs.append(run_row(round_number, python, data))
    sizes, target = runs[0]["sizes"], runs[0]["target_us_per_step"]
    print(
        common.table(
            (
                "round",
                "python",
                "started",
                *(f"N={size}" for size in sizes),
                "floor us/step",
                "worst",
                f"<= {target:.0f}",
            ),
            [
                (
                    run["round"],
                    run["python"],
                    run["started"][11:],
                    *run["agentrig_us_per_step"],
                    f"{min(run['floor_us_per_step']):.1f}-{max(run['floor_us_per_step']):.1f}",
                    run["worst_us_per_step"],
                    "yes" if run["met_as_measured"] else "no",
                )
                for run in runs
            ],
        )
    )
    totals = summary(runs, pythons)
    print("\nagentrig us/step, the worst N of each run:")
    for row in totals:
        interpreter = next(run["interpreter"] for run in runs if run["python"] == row["python"])
        print(
            f"  {row['python']} ({interpreter}): median {row['worst_us_per_step_median']:.0f},"
            f" {row['worst_us_per_step_min']:.0f} to {row['worst_us_per_step_max']:.0f};"
            f" {row['met_as_measured']} of {row['runs']} run(s) <= {target:.0f} us/step as"
            " measured;"
            f" floor {row['floor_us_per_step_min']:.1f} to {row['floor_us_per_step_max']:.1f};"
            f" scaled to the reference floor at most {row['worst_scaled_to_reference_max']:.0f}"
        )
    common.save_json(
        args.json,
        {
            "benchmark": "rounds",
            "command": common.command_line(),
            "machine": info,
            "rounds": args.rounds,
            "pause_s": args.pause,
            "loop_args": loop_args,
            "runs": runs,
            "summary": totals,
        },
    )


if __name__ == "__main__":
    main()

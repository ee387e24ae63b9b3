"""bench/loop.py in rounds, under one or more interpreters, with a pause between rounds.

A single run of ``bench/loop.py`` tells how fast agentrig was during the seconds it took. On a
shared machine whose speed drifts with its neighbours' load, several runs spread over minutes tell
more; and the interpreter's build (how it was compiled and linked) changes the figures as much as
the machine does. This script runs ``loop.py`` once per interpreter per round, the interpreters
taking turns, and prints every run and a summary per interpreter.

With ``--against REF`` an earlier revision of this repository takes its turn too: its own
``loop.py`` on its own ``src`` (checked out into a temporary git worktree), so that a change is
measured against its parent in the same spell of the machine. Every ``loop.py`` then runs with
``--sync-only`` where it has the option (earlier ones time only the sync path anyway), so that
all time the same work. The summary then gives, per N,
this checkout's time over REF's in each round and the median of those ratios: on a machine
whose speed drifts 2x within minutes, that paired ratio is the figure that survives the noise.

    .venv/bin/python bench/rounds.py                                   # this interpreter, 6 rounds
    .venv/bin/python bench/rounds.py --python /usr/bin/python3.11      # and the system's build
    .venv/bin/python bench/rounds.py --against main~3                  # and an earlier revision
    .venv/bin/python bench/rounds.py --quick --rounds 1 --pause 0      # a smoke run

Another interpreter must be the same Python version as this one: it runs with this checkout's
``src`` and this environment's packages on its path (compiled packages such as pydantic-core are
built for one Python version).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import statistics
import subprocess
import sys
import sysconfig
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
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


@dataclass(frozen=True)
class Contender:
    """One way to run ``loop.py``: an interpreter, and the checkout whose ``loop.py`` and ``src``
    it runs (this one, or an earlier revision's worktree)."""

    label: str
    python: str
    loop: Path
    env: dict[str, str]
    options: tuple[str, ...] = ()
    """Options of its own for ``loop.py`` (``--sync-only``, where the script has it)."""


def run_loop(contender: Contender, loop_args: list[str]) -> dict[str, Any]:
    """One run of ``loop.py`` for ``contender``; its saved results."""
    with tempfile.TemporaryDirectory() as folder:
        saved = Path(folder) / "loop.json"
        done = subprocess.run(
            [
                contender.python,
                str(contender.loop),
                *loop_args,
                *contender.options,
                "--json",
                str(saved),
            ],
            env=contender.env,
            capture_output=True,
            text=True,
            check=False,
        )
        if done.returncode != 0:
            raise SystemExit(
                f"bench/loop.py of {contender.label} failed:\n{done.stdout}{done.stderr}"
            )
        data: dict[str, Any] = json.loads(saved.read_text())
        return data


def git(*args: str, refused: str | None = None) -> str:
    """``git -C <this checkout> args``; its output. When git refuses, exit with ``refused`` (or
    git's own message)."""
    try:
        done = subprocess.run(
            ["git", "-C", str(BENCH.parent), *args],
            capture_output=True,
            text=True,
            check=True,
            timeout=120,
        )
    except FileNotFoundError:
        raise SystemExit("--against needs git on PATH") from None
    except subprocess.CalledProcessError as error:
        raise SystemExit(
            refused or f"git {' '.join(args)} failed: {error.stderr.strip()}"
        ) from None
    return done.stdout.strip()


@contextlib.contextmanager
def revision(ref: str) -> Iterator[Contender]:
    """``ref``'s ``bench`` and ``src`` checked out into a temporary worktree, as a contender run
    by this interpreter; the worktree is removed afterwards."""
    refused = f"--against {ref}: not a commit of this repository ({BENCH.parent})"
    commit = git("rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}", refused=refused)
    with tempfile.TemporaryDirectory() as folder:
        tree = Path(folder) / commit[:12]
        # only what loop.py runs (its folder and the package): the whole tree took 0.3 s
        git("worktree", "add", "--detach", "--no-checkout", str(tree), commit)
        try:
            if held := git("ls-tree", "--name-only", commit, "--", "bench", "src").split():
                git("-C", str(tree), "restore", "--source=HEAD", "--staged", "--worktree",
                    "--", *held)  # fmt: skip
            loop = tree / "bench" / "loop.py"
            if not loop.is_file():
                raise SystemExit(f"--against {ref}: that revision has no bench/loop.py")
            env = dict(os.environ)
            env["PYTHONPATH"] = os.pathsep.join(
                [str(tree / "src"), *filter(None, [env.get("PYTHONPATH")])]
            )
            label = ref if commit.startswith(ref) else f"{ref} ({commit[:9]})"
            yield Contender(label, sys.executable, loop, env, _sync_only(loop))
        finally:
            git("worktree", "remove", "--force", str(tree))


def _sync_only(loop: Path) -> tuple[str, ...]:
    """``--sync-only`` for a ``loop.py`` that has it (earlier ones time only the sync path)."""
    return ("--sync-only",) if "--sync-only" in loop.read_text(encoding="utf-8") else ()


def run_row(round_number: int, contender: Contender, data: dict[str, Any]) -> dict[str, Any]:
    """What the table shows of one run."""
    results = data["results"]
    agentrig = [row["agentrig_us_per_step"] for row in results]
    floor = [row["floor_us_per_step"] for row in results]
    targets = data["targets"]
    return {
        "round": round_number,
        "contender": contender.label,
        "python": contender.python,
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


def summary(runs: list[dict[str, Any]], labels: list[str]) -> list[dict[str, Any]]:
    """Per contender: how many runs met the target as measured, and the spread of the worst N."""
    rows = []
    for label in labels:
        mine = [run for run in runs if run["contender"] == label]
        worst = [run["worst_us_per_step"] for run in mine]
        floors = [value for run in mine for value in run["floor_us_per_step"]]
        rows.append(
            {
                "contender": label,
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


def paired(runs: list[dict[str, Any]], this: str, other: str) -> dict[str, Any]:
    """Per N, this checkout's µs/step over ``other``'s in each round, and their median."""
    mine = {run["round"]: run for run in runs if run["contender"] == this}
    theirs = {run["round"]: run for run in runs if run["contender"] == other}
    sizes = next(iter(mine.values()))["sizes"]
    ratios: dict[str, list[float]] = {str(size): [] for size in sizes}
    for number, run in mine.items():
        for size, ours, base in zip(
            sizes, run["agentrig_us_per_step"], theirs[number]["agentrig_us_per_step"], strict=True
        ):
            ratios[str(size)].append(ours / base)
    return {
        "against": other,
        "ratios": ratios,
        "median": {size: statistics.median(values) for size, values in ratios.items()},
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--python",
        action="append",
        default=[],
        metavar="PATH",
        help="another interpreter to run loop.py under (repeatable); this one always runs",
    )
    parser.add_argument(
        "--against",
        action="append",
        default=[],
        metavar="REF",
        help="an earlier git revision to run its own loop.py on its own src (repeatable)",
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
    # Against an earlier revision, every loop.py times the same work: the sync path and the
    # floor (async samples in between move the sync figures by a few percent).
    options = ("--sync-only",) if args.against else ()
    this = [
        Contender(python, python, BENCH / "loop.py", environment_for(python), options)
        for python in pythons
    ]
    loop_args = ["--quick"] if args.quick else []
    if args.sizes:
        loop_args += ["--sizes", ",".join(str(size) for size in args.sizes)]
    if args.repeats:
        loop_args += ["--repeats", str(args.repeats)]
    with contextlib.ExitStack() as stack:
        earlier = [stack.enter_context(revision(ref)) for ref in dict.fromkeys(args.against)]
        report(args, this + earlier, loop_args)


def report(args: argparse.Namespace, contenders: list[Contender], loop_args: list[str]) -> None:
    """Run the rounds, print the table and the summaries, save the results."""
    info = common.machine()
    print("bench/rounds.py: bench/loop.py in rounds, contenders taking turns")
    print(common.machine_line(info))
    shown = " ".join([*loop_args, *contenders[0].options])
    print(f"{args.rounds} round(s), {args.pause:g} s apart; loop.py {shown}\n")
    runs = []
    for round_number in range(1, args.rounds + 1):
        if round_number > 1:
            time.sleep(args.pause)
        for contender in contenders:
            data = run_loop(contender, loop_args)
            runs.append(run_row(round_number, contender, data))
    sizes, target = runs[0]["sizes"], runs[0]["target_us_per_step"]
    print(
        common.table(
            (
                "round",
                "contender",
                "started",
                *(f"N={size}" for size in sizes),
                "floor us/step",
                "worst",
                f"<= {target:.0f}",
            ),
            [
                (
                    run["round"],
                    run["contender"],
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
    labels = [contender.label for contender in contenders]
    totals = summary(runs, labels)
    print("\nagentrig us/step, the worst N of each run:")
    for row in totals:
        interpreter = next(
            run["interpreter"] for run in runs if run["contender"] == row["contender"]
        )
        print(
            f"  {row['contender']} ({interpreter}): median {row['worst_us_per_step_median']:.0f},"
            f" {row['worst_us_per_step_min']:.0f} to {row['worst_us_per_step_max']:.0f};"
            f" {row['met_as_measured']} of {row['runs']} run(s) <= {target:.0f} us/step as"
            " measured;"
            f" floor {row['floor_us_per_step_min']:.1f} to {row['floor_us_per_step_max']:.1f};"
            f" scaled to the reference floor at most {row['worst_scaled_to_reference_max']:.0f}"
        )
    comparisons = [
        paired(runs, labels[0], contender.label)
        for contender in contenders
        if contender.loop != BENCH / "loop.py"
    ]
    for comparison in comparisons:
        print(f"\n{labels[0]} us/step over {comparison['against']}'s, round by round:")
        for size, values in comparison["ratios"].items():
            each = ", ".join(f"{value:.2f}" for value in values)
            print(f"  N={size}: {each}; median {comparison['median'][size]:.2f}")
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
            "paired": comparisons,
        },
    )


if __name__ == "__main__":
    main()

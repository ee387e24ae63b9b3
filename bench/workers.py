"""Worker processes of ``agentrig run``: the speed-up of 2 workers over 1, the number chosen when
``--workers`` is not given, and the peak memory of the main process and of each worker.

Generates the scenario files of ``bench/suite.py`` (1,000 by default; every invariant on) and
runs ``agentrig run DIR`` with ``--workers 1``, ``--workers 2`` and without ``--workers``, each
in a fresh interpreter that runs the command in process, so that ``getrusage`` tells the main
process (``RUSAGE_SELF``) from its workers (``RUSAGE_CHILDREN``: their CPU time together, and
that of the worker server they are forked from, which is ended and waited for at the exit). A
worker's peak memory is its own ``VmHWM``, read from ``/proc`` every 0.1 s while it runs (the
rusage figure of a child would count the pages of the process it was forked from). Runs take turns for ``--repeats`` rounds; medians (peaks:
the largest).

    .venv/bin/python bench/workers.py                 # 1,000 scenarios, 1 round
    .venv/bin/python bench/workers.py --quick         # 10 scenarios, no warm-up run
    .venv/bin/python bench/workers.py --sizes 300 --repeats 3
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import _common as common
import suite

SIZES = (1000,)
QUICK_SIZES = (10,)
REPEATS = 1
QUICK_REPEATS = 1
CHOICES: tuple[int | None, ...] = (1, 2, None)

_PROBE = """
import json, os, resource, sys, threading, time

PEAKS = {}  # worker pid -> its VmHWM (KiB): its own high-water mark since it started

def _children(pid):
    found = []
    try:
        for task in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{task}/children") as listed:
                found += listed.read().split()
    except OSError:
        pass
    return found

def _is_worker_server(pid):
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as command:
            return b"multiprocessing.forkserver" in command.read()
    except OSError:
        return False

def _watch():
    # the workers: this process's children, or those of the worker server it started (the
    # process they are forked from, not a worker itself)
    while True:
        for child in _children(os.getpid()):
            for pid in _children(child) if _is_worker_server(child) else [child]:
                try:
                    with open(f"/proc/{pid}/status") as status:
                        for line in status:
                            if line.startswith("VmHWM:"):
                                kib = int(line.split()[1])
                                PEAKS[pid] = max(PEAKS.get(pid, 0), kib)
                except OSError:
                    pass
        time.sleep(0.1)

def _report(started):
    wall = time.perf_counter() - started  # the command's, which does not wait for the server
    # The worker server (when one started) would end after this process, and only a process
    # waited for counts in RUSAGE_CHILDREN, with the workers it waited for: end it now.
    forkserver = sys.modules.get("multiprocessing.forkserver")
    if forkserver is not None:
        try:  # it has ended once this raises: multiprocessing removed its folder already
            forkserver._forkserver._stop()
        except FileNotFoundError:
            pass
    me = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    print("PROBE " + json.dumps({
        "wall_s": wall,
        "main_cpu_s": me.ru_utime + me.ru_stime,
        "workers_cpu_s": children.ru_utime + children.ru_stime,
        "main_peak_mib": me.ru_maxrss / 1024,
        "worker_peak_mib": max(PEAKS.values(), default=0) / 1024,
        "workers_seen": len(PEAKS),
    }), file=sys.stderr)

if __name__ == "__main__":  # a spawned worker imports this module too
    import atexit
    atexit.register(_report, time.perf_counter())
    if os.path.isdir(f"/proc/{os.getpid()}/task"):
        threading.Thread(target=_watch, daemon=True).start()
    sys.argv = ["agentrig", *sys.argv[1:]]
    from agentrig.harness.cli import main
    main()
"""


def run(folder: Path, workers: int | None, probe: Path, reports: Path) -> dict[str, Any]:
    """``agentrig run folder`` with ``workers`` (None: chosen by agentrig): its figures."""
    chosen = () if workers is None else ("--workers", str(workers))
    command = [sys.executable, str(probe), "run", str(folder), *chosen, "--quiet"]
    command += ["--report-dir", str(reports)]
    environment = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    done = subprocess.run(command, capture_output=True, text=True, check=False, env=environment)
    found = re.search(r"^PROBE (.*)$", done.stderr, re.MULTILINE)
    passed = re.search(r"(\d+) passed, 0 failed", done.stdout)
    if done.returncode != 0 or found is None or passed is None:
        print(done.stdout[-3000:], done.stderr[-3000:], sep="\n", file=sys.stderr)
        raise SystemExit(f"agentrig run --workers {workers} exited {done.returncode}")
    figures: dict[str, Any] = json.loads(found.group(1))
    return figures


def main() -> None:
    parser = common.parser(__doc__.splitlines()[0])
    args = parser.parse_args()
    sizes, repeats = common.resolve(
        args, sizes=SIZES, quick_sizes=QUICK_SIZES, repeats=REPEATS, quick_repeats=QUICK_REPEATS
    )
    info = common.machine()
    print("bench/workers.py: agentrig run with 1, 2 and the chosen number of workers")
    print(common.machine_line(info))
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="agentrig-bench-") as temp:
        probe = Path(temp) / "probe.py"
        probe.write_text(_PROBE, encoding="utf-8")
        for count in sizes:
            folder = Path(temp) / f"scenarios-{count}"
            folder.mkdir()
            steps = suite.write_scenarios(folder, count)
            if not args.quick:  # a smoke run times nothing worth warming up for
                run(folder, 1, probe, Path(temp) / "warm-up")  # writes the bytecode caches
            samples: dict[int | None, list[dict[str, Any]]] = {}
            for _ in range(repeats):
                for workers in CHOICES:
                    figures = run(folder, workers, probe, Path(temp) / f"reports-{workers}")
                    samples.setdefault(workers, []).append(figures)
            one = common.median([s["wall_s"] for s in samples[1]])
            for workers, runs in samples.items():
                wall = common.median([s["wall_s"] for s in runs])
                rows.append(
                    {
                        "scenarios": count,
                        "steps": steps,
                        "workers": "auto" if workers is None else workers,
                        "wall_s": wall,
                        "main_cpu_s": common.median([s["main_cpu_s"] for s in runs]),
                        "workers_cpu_s": common.median([s["workers_cpu_s"] for s in runs]),
                        "main_peak_mib": max(s["main_peak_mib"] for s in runs),
                        "worker_peak_mib": max(s["worker_peak_mib"] for s in runs),
                        "speed_up": one / wall,
                    }
                )
    print(
        f"\nmedians of {repeats} round(s); wall s is the whole command; CPU s user + system; "
        "a worker's peak is the largest worker's (0: no worker process)\n"
    )
    print(
        common.table(
            (
                "scenarios",
                "workers",
                "wall s",
                "main CPU s",
                "workers CPU s",
                "main peak MiB",
                "worker peak MiB",
                "over 1 worker",
            ),
            [
                (
                    r["scenarios"],
                    r["workers"],
                    r["wall_s"],
                    r["main_cpu_s"],
                    r["workers_cpu_s"],
                    r["main_peak_mib"],
                    r["worker_peak_mib"],
                    f"{r['speed_up']:.2f}x",
                )
                for r in rows
            ],
        )
    )
    print(
        "\ntargets: 2 workers >= 1.7x one worker (idle 2-CPU machine); peak per worker <= 150 MiB"
    )
    common.save_json(
        args.json,
        {
            "benchmark": "workers",
            "command": common.command_line(),
            "machine": info,
            "repeats": repeats,
            "rows": rows,
        },
    )


if __name__ == "__main__":
    main()

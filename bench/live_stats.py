"""The statistics of live-trial verdicts (agentrig.harness.live.stats), measured by seeded
simulation: interval coverage, the sequential test's trials and errors, and the cost of a call.

    .venv/bin/python bench/live_stats.py                     # 2,000 suites a cell, seed 1
    .venv/bin/python bench/live_stats.py --quick             # a smoke run (samples of 2 ms)
    .venv/bin/python bench/live_stats.py --suites 10000 --seed 7 --json results/live_stats.json

1. Coverage: for each true rate p and number of trials n, ``--suites`` suites of n trials; the
   share whose 95% interval (two-sided, ``clopper_pearson`` and ``wilson``) holds p, beside the
   exact coverage (summed over every count). Clopper-Pearson is at least 95% in every cell by
   construction; Wilson dips below it in some.
2. The truncated SPRT (``sequential_verdict``, default requirement: confidence 0.95,
   indifference 0.05, ``--max-trials`` 200) at rates 0.1 either side of each threshold p0 (or
   1), at the indifference edges ``p_low`` and ``p_high`` (p0 -/+ 0.05, clamped near 1) and at
   p0 itself: the share of PASS / FAIL / INCONCLUSIVE, the share of wrong verdicts (PASS below
   the threshold, FAIL at or above it), and the median, 90th percentile and mean trials used;
   ``exact wrong`` is the same share summed over every path of the test.
3. Cost: µs per call (median of samples of at least 20 ms; see _common.py), against the target
   of 50 µs for ``clopper_pearson``, which runs after every trial.

Output of ``bench/live_stats.py`` (2,000 suites a cell, seed 1) on the 2-core machine:

    bench/live_stats.py: live-trial verdicts by seeded simulation
    machine: AMD EPYC, 2 CPUs, Linux-6.18.44-fc-v669-x86_64-with-glibc2.36, load 1.3; 2026-11-29 06:53 UTC
    python: CPython 3.11.7 (main May  9 2026 07:35:25), /work/main/.venv/bin/python, libpython shared
    2,000 suites a cell, seed 1

    1. coverage of the two-sided 95% intervals (simulated; summed exactly)
       p    n   exact  exact (sum)  wilson  wilson (sum)
    ----  ---  ------  -----------  ------  ------------
    0.50    5  1.0000       1.0000  0.9355        0.9375
    0.50   10  0.9840       0.9785  0.9840        0.9785
    0.50   20  0.9595       0.9586  0.9595        0.9586
    0.50   50  0.9660       0.9672  0.9360        0.9351
    0.50  100  0.9655       0.9648  0.9470        0.9431
    0.80    5  0.9905       0.9933  0.9370        0.9421
    0.80   10  0.9965       0.9936  0.9690        0.9672
    0.80   20  0.9765       0.9785  0.9540        0.9563
    0.80   50  0.9680       0.9671  0.9490        0.9507
    0.80  100  0.9620       0.9674  0.9375        0.9405
    0.90    5  0.9915       0.9914  0.9080        0.9185
    0.90   10  0.9895       0.9872  0.9285        0.9298
    0.90   20  0.9865       0.9887  0.9620        0.9568
    0.90   50  0.9645       0.9703  0.9645        0.9703
    0.90  100  0.9580       0.9557  0.9420        0.9364
    0.95    5  0.9835       0.9774  0.9835        0.9774
    0.95   10  0.9930       0.9885  0.9150        0.9139
    0.95   20  0.9860       0.9841  0.9110        0.9245
    0.95   50  0.9905       0.9882  0.9640        0.9622
    0.95  100  0.9815       0.9826  0.9670        0.9659
    0.99    5  1.0000       0.9990  0.9470        0.9510
    0.99   10  0.9975       0.9957  0.9100        0.9044
    0.99   20  0.9775       0.9831  0.9775        0.9831
    0.99   50  0.9895       0.9862  0.9095        0.9106
    0.99  100  0.9815       0.9816  0.9235        0.9206
    exact: lowest summed coverage 0.9557 (at least 0.95 in every cell); wilson: below 0.95 in 13 of 25 cells (lowest 0.9044)

    2. truncated SPRT, confidence 0.95, indifference 0.05, max_trials 200 (wrong: PASS below the threshold, FAIL at or above it)
    threshold    rate      p   PASS   FAIL  INCONCL.  wrong  exact wrong  median n  p90 n  mean n
    ---------  ------  -----  -----  -----  --------  -----  -----------  --------  -----  ------
         0.80  p0-0.1    0.7  0.003  0.995     0.003  0.003       0.0032        41     89    48.5
         0.80   p_low   0.75  0.045  0.901     0.053  0.045       0.0419        67    164    81.8
         0.80      p0    0.8  0.334  0.401     0.265  0.401       0.4089       116    200   122.3
         0.80  p_high   0.85  0.893  0.036     0.070  0.036       0.0372        75    177    90.3
         0.80  p0+0.1    0.9  0.998  0.002     0.001  0.002       0.0006        45     75    49.6
         0.90  p0-0.1    0.8  0.005  0.995     0.000  0.005       0.0053        22     49    26.1
         0.90   p_low   0.85  0.048  0.950     0.003  0.048       0.0465        35     93    45.2
         0.90      p0    0.9  0.402  0.539     0.059  0.539       0.5629        60    169    76.3
         0.90  p_high   0.95  0.957  0.037     0.006  0.037       0.0325        49    104    55.7
         0.90       1      1  1.000  0.000     0.000  0.000       0.0000        27     27    27.0
         0.95  p0-0.1   0.85  0.003  0.998     0.000  0.003       0.0032        21     50    25.7
         0.95   p_low    0.9  0.045  0.946     0.009  0.045       0.0459        38    100    48.7
         0.95      p0   0.95  0.579  0.331     0.090  0.331       0.3401        75    184    89.8
         0.95  p_high  0.975  0.959  0.032     0.010  0.032       0.0295        56    111    65.0
         0.95       1      1  1.000  0.000     0.000  0.000       0.0000        38     38    38.0
    threshold 0.8: fewest trials to PASS (all successes): fixed rule 14, SPRT 24
    threshold 0.9: fewest trials to PASS (all successes): fixed rule 29, SPRT 27
    threshold 0.95: fewest trials to PASS (all successes): fixed rule 59, SPRT 38

    3. cost per call (µs, median of 5 samples)
                         call  µs/call
    -------------------------  -------
      clopper_pearson(17, 20)     14.3
     clopper_pearson(85, 100)     17.6
    clopper_pearson(100, 200)     32.1
    clopper_pearson(190, 200)     15.9
              wilson(85, 100)     2.65
       fixed_verdict(85, 100)     28.9
        SequentialTest.update     0.61
    target clopper_pearson <= 50 µs: worst 32.1 µs -> met
"""

from __future__ import annotations

import argparse
import functools
import math
import random
import statistics
from collections.abc import Callable
from pathlib import Path
from typing import Any

import _common as common

from agentrig.harness.live.stats import (
    Interval,
    Metric,
    Outcome,
    Requirement,
    SequentialTest,
    clopper_pearson,
    fixed_verdict,
    minimum_trials_to_pass,
    operating_characteristics,
    sequential_verdict,
    wilson,
)

RATES = (0.5, 0.8, 0.9, 0.95, 0.99)
SIZES = (5, 10, 20, 50, 100)
THRESHOLDS = (0.8, 0.9, 0.95)
SUITES = 2000
QUICK_SUITES = 50
MAX_TRIALS = 200
SPRT_HEADERS = (
    "threshold",
    "rate",
    "p",
    "PASS",
    "FAIL",
    "INCONCL.",
    "wrong",
    "exact wrong",
    "median n",
    "p90 n",
    "mean n",
)
SPEED_TARGET_US = 50.0
"""The most µs a ``clopper_pearson`` call may take at typical counts (it runs after every
trial)."""


def pmf(n: int, p: float, k: int) -> float:
    """P(Binomial(n, p) = k)."""
    return float(math.comb(n, k) * p**k * (1 - p) ** (n - k))


def coverage(rng: random.Random, suites: int) -> list[dict[str, Any]]:
    """Simulated and exact coverage of the 95% intervals in every (p, n) cell."""
    rows = []
    for p in RATES:
        for n in SIZES:
            exact = [clopper_pearson(c, n) for c in range(n + 1)]
            score = [wilson(c, n) for c in range(n + 1)]
            covered = {"exact": 0, "wilson": 0}
            for _ in range(suites):
                c = sum(rng.random() < p for _ in range(n))
                covered["exact"] += p in exact[c]
                covered["wilson"] += p in score[c]
            rows.append(
                {
                    "p": p,
                    "n": n,
                    "suites": suites,
                    "exact_coverage": covered["exact"] / suites,
                    "exact_coverage_summed": summed_coverage(p, n, exact),
                    "wilson_coverage": covered["wilson"] / suites,
                    "wilson_coverage_summed": summed_coverage(p, n, score),
                }
            )
    return rows


def summed_coverage(p: float, n: int, intervals: list[Interval]) -> float:
    """P(the interval holds p), summed over every count."""
    return sum(pmf(n, p, c) for c in range(n + 1) if p in intervals[c])


def sprt_rates(rule: Requirement) -> list[tuple[str, float]]:
    """The true rates a requirement is simulated at, named: 0.1 either side of its threshold
    ``p0`` (or 1), the indifference edges ``p_low`` and ``p_high``, and ``p0`` itself (inside
    the indifference zone: no guarantee there)."""
    test = SequentialTest(rule)
    p0 = rule.threshold
    named = [
        ("p0-0.1", p0 - 0.1),
        ("p_low", test.p_low),
        ("p0", p0),
        ("p_high", test.p_high),
        ("p0+0.1" if p0 + 0.1 < 1.0 else "1", min(1.0, p0 + 0.1)),
    ]
    return [(name, round(rate, 10)) for name, rate in named]


def sequential(rng: random.Random, suites: int, max_trials: int) -> list[dict[str, Any]]:
    """The truncated SPRT's outcomes and trials used in every (threshold, rate) cell."""
    rows = []
    for threshold in THRESHOLDS:
        rule = Requirement(Metric(), threshold)
        for where, p in sprt_rates(rule):
            counts = dict.fromkeys(Outcome, 0)
            used = []
            for _ in range(suites):
                outcomes = [rng.random() < p for _ in range(max_trials)]
                verdict = sequential_verdict(outcomes, rule, max_trials)
                counts[verdict.outcome] += 1
                used.append(verdict.trials)
            wrong = Outcome.PASS if p < threshold else Outcome.FAIL
            used.sort()
            rows.append(
                {
                    "threshold": threshold,
                    "where": where,
                    "p": p,
                    "suites": suites,
                    "pass": counts[Outcome.PASS] / suites,
                    "fail": counts[Outcome.FAIL] / suites,
                    "inconclusive": counts[Outcome.INCONCLUSIVE] / suites,
                    "wrong": counts[wrong] / suites,
                    "exact_wrong": operating_characteristics(rule, p, max_trials).outcomes[
                        Outcome.PASS if p < rule.threshold else Outcome.FAIL
                    ],
                    "median_trials": statistics.median_low(used),
                    "p90_trials": used[min(suites - 1, -(-9 * suites // 10) - 1)],
                    "mean_trials": statistics.fmean(used),
                }
            )
    return rows


def speed(sample_ns: int = common.MIN_SAMPLE_NS) -> list[dict[str, Any]]:
    """µs per call of the functions that run after every trial, median of 5 samples (each at
    least ``sample_ns`` long, or 1,000 calls)."""
    rule = Requirement(Metric(), 0.9)
    prepared: dict[str, Callable[[], Callable[[], Any]]] = {
        f"clopper_pearson({c}, {n})": functools.partial(functools.partial, clopper_pearson, c, n)
        for c, n in ((17, 20), (85, 100), (100, 200), (190, 200))
    }
    prepared["wilson(85, 100)"] = lambda: functools.partial(wilson, 85, 100)
    prepared["fixed_verdict(85, 100)"] = lambda: functools.partial(fixed_verdict, 85, 100, rule)
    # A fresh test each run (made untimed): one update, as after a trial.
    prepared["SequentialTest.update"] = lambda: functools.partial(SequentialTest(rule).update, True)
    rows = []
    for name, prepare in prepared.items():
        elapsed, _ = common.timed_ns(prepare)
        loops = common.loops_for(elapsed, sample_ns)
        samples = [common.timed_loops_ns(prepare, loops)[0] / 1000 for _ in range(5)]
        rows.append({"call": name, "us_per_call": common.median(samples)})
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--suites", type=int, default=None, help=f"suites a cell ({SUITES})")
    parser.add_argument("--seed", type=int, default=1, help="random seed (1)")
    parser.add_argument("--max-trials", type=int, default=MAX_TRIALS, help="SPRT truncation")
    parser.add_argument("--quick", action="store_true", help=f"{QUICK_SUITES} suites a cell")
    parser.add_argument("--json", type=Path, default=None, metavar="PATH", help="save results")
    args = parser.parse_args()
    suites = args.suites or (QUICK_SUITES if args.quick else SUITES)
    if suites < 1 or args.max_trials < 1:
        raise SystemExit("--suites and --max-trials must be >= 1")
    info = common.machine()
    print("bench/live_stats.py: live-trial verdicts by seeded simulation")
    print(common.machine_line(info))
    print(f"{suites:,} suites a cell, seed {args.seed}\n")
    rng = random.Random(args.seed)

    covered = coverage(rng, suites)
    print("1. coverage of the two-sided 95% intervals (simulated; summed exactly)")
    print(
        common.table(
            ["p", "n", "exact", "exact (sum)", "wilson", "wilson (sum)"],
            [
                (
                    row["p"],
                    row["n"],
                    f"{row['exact_coverage']:.4f}",
                    f"{row['exact_coverage_summed']:.4f}",
                    f"{row['wilson_coverage']:.4f}",
                    f"{row['wilson_coverage_summed']:.4f}",
                )
                for row in covered
            ],
        )
    )
    below = [row for row in covered if row["wilson_coverage_summed"] < 0.95]
    worst_exact = min(row["exact_coverage_summed"] for row in covered)
    held = "at least 0.95 in every cell" if worst_exact >= 0.95 else "BELOW 0.95"
    print(
        f"exact: lowest summed coverage {worst_exact:.4f} ({held}); wilson: below 0.95 in "
        f"{len(below)} of {len(covered)} cells (lowest "
        f"{min(row['wilson_coverage_summed'] for row in covered):.4f})\n"
    )

    runs = sequential(rng, suites, args.max_trials)
    print(
        f"2. truncated SPRT, confidence 0.95, indifference 0.05, max_trials {args.max_trials} "
        "(wrong: PASS below the threshold, FAIL at or above it)"
    )
    print(
        common.table(
            SPRT_HEADERS,
            [
                (
                    row["threshold"],
                    row["where"],
                    f"{row['p']:g}",
                    f"{row['pass']:.3f}",
                    f"{row['fail']:.3f}",
                    f"{row['inconclusive']:.3f}",
                    f"{row['wrong']:.3f}",
                    f"{row['exact_wrong']:.4f}",
                    row["median_trials"],
                    row["p90_trials"],
                    f"{row['mean_trials']:.1f}",
                )
                for row in runs
            ],
        )
    )
    for threshold in THRESHOLDS:
        rule = Requirement(Metric(), threshold)
        print(
            f"threshold {threshold}: fewest trials to PASS (all successes): fixed rule "
            f"{minimum_trials_to_pass(rule)}, SPRT {minimum_trials_to_pass(rule, sequential=True)}"
        )

    timings = speed(common.QUICK_SAMPLE_NS if args.quick else common.MIN_SAMPLE_NS)
    print("\n3. cost per call (µs, median of 5 samples)")
    print(common.table(["call", "µs/call"], [(row["call"], row["us_per_call"]) for row in timings]))
    worst = max(row["us_per_call"] for row in timings if row["call"].startswith("clopper"))
    verdict = "met" if worst <= SPEED_TARGET_US else "MISSED"
    print(f"target clopper_pearson <= {SPEED_TARGET_US:.0f} µs: worst {worst:.1f} µs -> {verdict}")
    common.save_json(
        args.json,
        {
            "benchmark": "live_stats",
            "command": common.command_line(),
            "machine": info,
            "seed": args.seed,
            "suites": suites,
            "max_trials": args.max_trials,
            "coverage": covered,
            "sequential": runs,
            "speed": timings,
        },
    )


if __name__ == "__main__":
    main()

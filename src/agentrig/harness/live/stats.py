"""The statistics behind live-trial verdicts: does an agent meet a requirement on its success rate,
judged from ``trials`` independent trials of which ``successes`` succeeded?

Trials are modelled as independent draws with one unknown success rate ``p``. A requirement
(``Requirement``) asks that a metric of ``p`` reach a level: the rate itself, tau-bench's
``pass^k`` (all of ``k`` trials succeed: ``p**k``) or Chen et al.'s ``pass@k`` (at least one of
``k`` does: ``1 - (1 - p)**k``). Each is increasing in ``p``, so every requirement is one on the
rate: ``p >= threshold``.

Two ways to decide, both with stated error rates (``confidence``: 0.95 by default):

- ``fixed_verdict`` after a fixed number of trials: PASS when the exact (Clopper-Pearson) lower
  bound reaches the threshold, FAIL when the exact upper bound is below it, else INCONCLUSIVE.
  Each bound is one-sided at ``confidence`` (the two-sided interval at ``2 * confidence - 1``),
  so whatever ``p`` is, a wrong verdict (PASS with ``p`` below the threshold, FAIL with ``p`` at
  or above it) has probability at most ``1 - confidence``.
- ``SequentialTest`` / ``sequential_verdict`` after every trial: Wald's sequential probability
  ratio test, which stops as soon as the evidence decides (about 20-45 trials when the rate is
  0.1 away from the threshold), truncated at ``max_trials`` where it falls back on the fixed
  rule.

Everything is standard-library arithmetic; ``clopper_pearson`` matches SciPy's exact interval to
within 1e-9 (tests/harness/live/test_stats.py checks every count up to 200 trials).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from enum import StrEnum
from functools import lru_cache
from statistics import NormalDist
from typing import Literal, TypeGuard

from agentrig.errors import InvalidInputError

__all__ = [
    "Interval",
    "Metric",
    "MetricKind",
    "OperatingCharacteristics",
    "Outcome",
    "Requirement",
    "SequentialState",
    "SequentialTest",
    "Verdict",
    "clopper_pearson",
    "fixed_verdict",
    "metric_interval",
    "minimum_trials_to_pass",
    "operating_characteristics",
    "parse_metric",
    "pass_at_k",
    "pass_hat_k",
    "sequential_verdict",
    "wilson",
]

MetricKind = Literal["rate", "pass^k", "pass@k"]
"""What a requirement measures: the success rate, pass^k (all of k trials succeed) or pass@k
(at least one of k trials succeeds)."""

METRIC_FORMS = "rate (or pass^1, pass@1), pass^K or pass@K with K a positive integer"
"""The metric texts ``parse_metric`` accepts, as its errors name them."""


# --- validation --------------------------------------------------------------------------------


def _is_int(value: object) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_real(value: object) -> TypeGuard[float]:
    return (
        isinstance(value, int | float)
        and not isinstance(value, bool)
        and math.isfinite(float(value))
    )


def _count_problems(successes: object, trials: object) -> list[tuple[str, str]]:
    problems = []
    if not (_is_int(trials) and trials >= 0):
        problems.append(("trials", f"must be a whole number >= 0, got {trials!r}"))
    if not (_is_int(successes) and successes >= 0):
        problems.append(("successes", f"must be a whole number >= 0, got {successes!r}"))
    elif _is_int(trials) and successes > trials >= 0:
        problems.append(("successes", f"must be at most trials ({trials}), got {successes}"))
    return problems


def _confidence_problems(confidence: object, *, low: float = 0.0) -> list[tuple[str, str]]:
    if _is_real(confidence) and low < confidence < 1:
        return []
    return [
        ("confidence", f"must be a number between {low:g} and 1 (exclusive), got {confidence!r}")
    ]


def _check(what: str, problems: list[tuple[str, str]]) -> None:
    if problems:
        raise InvalidInputError(what, problems)


# --- intervals ---------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Interval:
    """A closed interval ``[low, high]`` within ``[0, 1]``: a confidence interval on a rate."""

    low: float
    high: float

    def __post_init__(self) -> None:
        problems = [
            (name, f"must be a number in [0, 1], got {value!r}")
            for name, value in (("low", self.low), ("high", self.high))
            if not (_is_real(value) and 0 <= value <= 1)
        ]
        if not problems and self.low > self.high:
            problems.append(("high", f"must be at least low ({self.low}), got {self.high}"))
        _check("interval", problems)

    def __contains__(self, value: float) -> bool:
        return self.low <= value <= self.high

    def __iter__(self) -> Iterator[float]:
        """``low, high = interval``."""
        yield self.low
        yield self.high

    def __str__(self) -> str:
        return f"[{self.low:.3f}, {self.high:.3f}]"


@lru_cache(maxsize=64)
def _z(upper_tail: float) -> float:
    """The standard normal quantile with ``upper_tail`` probability above it."""
    return NormalDist().inv_cdf(1.0 - upper_tail)


def wilson(successes: int, trials: int, confidence: float = 0.95) -> Interval:
    """The two-sided Wilson score interval on the success rate at ``confidence``.

    An approximation (its coverage dips below ``confidence`` for some rates and counts); the
    verdicts decide on ``clopper_pearson`` and report this one beside it. ``[0, 1]`` with no
    trials.
    """
    _check(
        "arguments to wilson",
        _count_problems(successes, trials) + _confidence_problems(confidence),
    )
    if trials == 0:
        return Interval(0.0, 1.0)
    z = _z((1.0 - confidence) / 2.0)
    n = trials
    rate = successes / n
    z2n = z * z / n
    scale = 1.0 + z2n
    center = (rate + z2n / 2.0) / scale
    half = z * math.sqrt(rate * (1.0 - rate) / n + z2n / (4.0 * n)) / scale
    # The bounds are the roots of scale*x**2 - (2*rate + z2n)*x + rate**2: the far root is
    # computed directly and the near one from their product, so neither loses digits.
    if rate <= 0.5:
        high = center + half
        low = rate * rate / (scale * high)
    else:
        low = center - half
        high = 1.0 - (1.0 - rate) ** 2 / (scale * (1.0 - low))
    return Interval(0.0 if successes == 0 else low, 1.0 if successes == n else min(high, 1.0))


def clopper_pearson(successes: int, trials: int, confidence: float = 0.95) -> Interval:
    """The two-sided exact (Clopper-Pearson) interval on the success rate at ``confidence``.

    ``low`` is the rate at which ``successes`` or more successes have probability
    ``(1 - confidence) / 2``, ``high`` the rate at which ``successes`` or fewer do (0 and 1 at
    the ends: ``successes == 0`` gives ``[0, 1 - (alpha/2)**(1/n)]``, ``successes == trials``
    gives ``[(alpha/2)**(1/n), 1]``). Each bound covers the true rate with probability at least
    ``1 - (1 - confidence) / 2``, whatever the rate: the interval is conservative. ``[0, 1]``
    with no trials.
    """
    _check(
        "arguments to clopper_pearson",
        _count_problems(successes, trials) + _confidence_problems(confidence),
    )
    tail = (1.0 - confidence) / 2.0
    low = 0.0 if successes == 0 else _tail_root(successes, trials, tail)
    if successes == trials:
        high = 1.0
    elif successes == 0:  # 1 - (alpha/2)**(1/n), without the cancellation
        high = -math.expm1(math.log(tail) / trials)
    else:  # one minus the lower bound on the failure rate
        high = 1.0 - _tail_root(trials - successes, trials, tail)
    return Interval(low, high)


def _tail_root(c: int, n: int, tail: float) -> float:
    """The rate ``x`` at which P(X >= c) = ``tail`` for X ~ Binomial(n, x), 1 <= c <= n.

    Halley's method on ``ln P(X >= c)`` as a function of ``u = ln x`` (nearly linear in the
    lower tail, where P(X >= c) ~ x**c), started from the Wilson bound and kept inside a
    bracket that bisection falls back on: two evaluations of the tail, most often.
    """
    if c == n:
        return math.exp(math.log(tail) / n)
    if c == 1:
        return -math.expm1(math.log1p(-tail) / n)
    # ln C(n, c): exact while the integer is cheap to build; else from lgamma, whose rounding
    # (about 1e-16 n ln n) moves the root by that many standard deviations: 3e-13 at n = 200.
    log_comb = (
        math.log(math.comb(n, c))
        if n <= 300 or min(c, n - c) <= 64  # pragma: no mutate (exact is right, if slow)
        else math.lgamma(n + 1) - math.lgamma(c + 1) - math.lgamma(n - c + 1)
    )
    log_tail = math.log(tail)
    # Start from the Wilson bound with a continuity correction (at c - 1/2 successes): half
    # the distance of the plain one, a twentieth of a standard deviation at the median.
    z = _z(tail)
    z2n = z * z / n
    rate = (c - 0.5) / n
    # Not mutated: only the start, from anywhere in (0, 1) the search ends at the same root.
    deviation = math.sqrt(rate * (1.0 - rate) / n + z2n / (4.0 * n))  # pragma: no mutate
    x = (rate + z2n / 2.0 - z * deviation) / (1.0 + z2n)  # pragma: no mutate
    if not 0.0 < x < 1.0:  # pragma: no mutate
        x = rate / 2.0
    low, high = 0.0, 1.0
    for _ in range(200):
        log_i, slope = _log_upper_tail(c, n, x, log_comb)
        g = log_i - log_tail
        if g > 0.0:  # pragma: no mutate (at g == 0 it returns x below: either side will do)
            high = x
        else:
            low = x
        if g == 0.0:
            return x
        if slope > 0.0 and math.isfinite(g):
            step = g / slope
            curvature = slope * (c - (n - c) * x / (1.0 - x) - slope)
            damping = 1.0 - step * curvature / (2.0 * slope)
            if damping > 0.5:  # Halley; else the plain Newton step
                step /= damping
            following = x * math.exp(-step) if step > -700.0 else 2.0
            spread = min(x, 1.0 - x, math.sqrt(x * (1.0 - x) / n))
            if abs(following - x) <= _CONVERGED * spread:
                return following
            if low < following < high:
                x = following
                continue
        x = 0.5 * (low + high)
        if high - low <= 1e-16 * high:  # pragma: no mutate (the 200 rounds end it alike)
            return x
    return x


_CONVERGED = 1e-4
"""A Halley step this small ends the search, relative to the rate's spread (its standard
deviation, or the rate or one minus it when smaller: the bound on the other side is ``1 - x``).
The error left after the step is about its cube: below 1e-12 of the spread (measured: the
error after a step shrinks to about 0.05 times its cube in these units)."""

_MAX_TERMS = 64
"""Beyond this many terms, the binomial tail is summed by the continued fraction instead."""


def _log_upper_tail(c: int, n: int, x: float, log_comb: float) -> tuple[float, float]:
    """``(ln P(X >= c), d ln P(X >= c) / d ln x)`` for X ~ Binomial(n, x), 1 <= c < n.

    The derivative is ``c * P(X = c) / P(X >= c)``. Above the mean the tail is a short sum of
    decreasing terms, each the last times a ratio; elsewhere it is the regularized incomplete
    beta function ``I_x(c, n - c + 1)`` by its continued fraction.
    """
    log_pmf = log_comb + c * math.log(x) + (n - c) * math.log1p(-x)
    odds = x / (1.0 - x)
    if (n - c) / (c + 1) * odds < 1.0:  # pragma: no mutate (which of two exact forms)
        term = total = 1.0
        j = c
        end = min(n, c + _MAX_TERMS)
        while j < end:
            ratio = (n - j) / (j + 1) * odds
            term *= ratio
            total += term
            j += 1
            # Stop once what is left is below double precision; a looser or tighter cutoff moves
            # the sum far below what any test or verdict can tell apart.
            if term <= 1e-17 * (1.0 - ratio) * total:  # pragma: no mutate
                return log_pmf + math.log(total), c / total
        if j == n:
            return log_pmf + math.log(total), c / total
    a, b = float(c), float(n - c + 1)
    if x < (a + 1.0) / (a + b + 2.0):  # pragma: no mutate (both forms hold at the switch)
        # I = x**a (1-x)**b / (a B(a, b)) * cf = (1 - x) P(X = c) * cf
        total = (1.0 - x) * _beta_continued_fraction(a, b, x)
        return log_pmf + math.log(total), c / total
    # I = 1 - x**a (1-x)**b / (b B(a, b)) * cf(b, a, 1 - x), where x**a (1-x)**b / B(a, b)
    # = c (1 - x) P(X = c)
    # A wrong factor here is invisible to clopper_pearson: where its root search reads this
    # branch (near P = 1/2) a complement too large is >= 1 and takes the fallback below, and
    # elsewhere only the bracket's side is read (measured: with log1p(-x) subtracted, every
    # bound for n <= 120, all counts, nine confidences, moves by under 3e-12 of itself).
    log_front = math.log(c) + math.log1p(-x) + log_pmf  # pragma: no mutate
    complement = math.exp(log_front) * _beta_continued_fraction(b, a, 1.0 - x) / b
    if complement >= 1.0:  # rounding: the direct fraction converges too, if slowly
        # Never taken, so never mutation-tested: from the switch point up, P(X < c) is about 1/2
        # at most (searched: every count for n <= 300 and n up to 10**6, ten confidences).
        total = (1.0 - x) * _beta_continued_fraction(a, b, x)  # pragma: no mutate
        return log_pmf + math.log(total), c / total  # pragma: no mutate
    log_i = math.log1p(-complement)
    return log_i, c * math.exp(log_pmf - log_i)


_TINY = 1e-300


def _beta_continued_fraction(a: float, b: float, x: float) -> float:
    """The continued fraction of the incomplete beta function (modified Lentz), converging
    quickly for ``x < (a + 1) / (a + b + 2)``."""
    sum_ab, a_plus, a_minus = a + b, a + 1.0, a - 1.0
    c = 1.0
    d = 1.0 - sum_ab * x / a_plus
    d = 1.0 / (d if abs(d) > _TINY else _TINY)
    h = d
    for m in range(1, 100_000):
        m2 = 2 * m
        coefficient = m * (b - m) * x / ((a_minus + m2) * (a + m2))
        d = 1.0 + coefficient * d
        d = 1.0 / (d if abs(d) > _TINY else _TINY)
        c = 1.0 + coefficient / c
        c = c if abs(c) > _TINY else _TINY
        h *= d * c
        coefficient = -(a + m) * (sum_ab + m) * x / ((a + m2) * (a_plus + m2))
        d = 1.0 + coefficient * d
        d = 1.0 / (d if abs(d) > _TINY else _TINY)
        c = 1.0 + coefficient / c
        c = c if abs(c) > _TINY else _TINY
        delta = d * c
        h *= delta
        if abs(delta - 1.0) <= 3e-16:
            break
    return h


# --- pass^k and pass@k -------------------------------------------------------------------------


def _k_problems(successes: int, trials: int, k: object) -> list[tuple[str, str]]:
    problems = _count_problems(successes, trials)
    if not _is_int(k) or k < 1:
        problems.append(("k", f"must be a whole number >= 1, got {k!r}"))
    elif _is_int(trials) and k > trials:
        problems.append(("k", f"must be at most trials ({trials}), got {k}"))
    return problems


def pass_hat_k(successes: int, trials: int, k: int) -> float:
    """tau-bench's unbiased estimate of pass^k (all of ``k`` trials succeed):
    ``C(successes, k) / C(trials, k)``. Its expectation over ``trials`` trials at rate ``p`` is
    exactly ``p**k``. Needs ``1 <= k <= trials``."""
    _check("arguments to pass_hat_k", _k_problems(successes, trials, k))
    return math.comb(successes, k) / math.comb(trials, k)


def pass_at_k(successes: int, trials: int, k: int) -> float:
    """Chen et al.'s unbiased estimate of pass@k (at least one of ``k`` trials succeeds):
    ``1 - C(trials - successes, k) / C(trials, k)``. Its expectation over ``trials`` trials at
    rate ``p`` is exactly ``1 - (1 - p)**k``. Needs ``1 <= k <= trials``."""
    _check("arguments to pass_at_k", _k_problems(successes, trials, k))
    total = math.comb(trials, k)
    return (total - math.comb(trials - successes, k)) / total


# --- metrics -----------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Metric:
    """What a requirement measures, as a function of the success rate ``p``: ``"rate"`` (``p``),
    ``"pass^k"`` (``p**k``) or ``"pass@k"`` (``1 - (1 - p)**k``). ``str()`` gives the text
    ``parse_metric`` reads back."""

    kind: MetricKind = "rate"
    k: int = 1

    def __post_init__(self) -> None:
        problems = []
        if self.kind not in ("rate", "pass^k", "pass@k"):
            problems.append(("kind", f"must be 'rate', 'pass^k' or 'pass@k', got {self.kind!r}"))
        if not _is_int(self.k) or self.k < 1:
            problems.append(("k", f"must be a whole number >= 1, got {self.k!r}"))
        elif self.kind == "rate" and self.k != 1:
            problems.append(("k", f"must be 1 for the rate, got {self.k}"))
        _check("metric", problems)

    def __str__(self) -> str:
        return "rate" if self.kind == "rate" else self.kind.replace("k", str(self.k))

    def of_rate(self, rate: float) -> float:
        """The metric's value at success rate ``rate``."""
        if self.kind == "pass^k":
            return float(rate**self.k)
        if self.kind == "pass@k":
            return 0.0 - math.expm1(self.k * math.log1p(-rate)) if rate < 1.0 else 1.0
        return rate

    def rate_for(self, value: float) -> float:
        """The success rate at which the metric equals ``value`` (the inverse of ``of_rate``)."""
        if self.kind == "pass^k":
            return float(value ** (1.0 / self.k))
        if self.kind == "pass@k":
            return 0.0 - math.expm1(math.log1p(-value) / self.k) if value < 1.0 else 1.0
        return value

    def estimate(self, successes: int, trials: int) -> float | None:
        """The unbiased point estimate from ``successes`` of ``trials``: the observed rate,
        ``pass_hat_k`` or ``pass_at_k``; None when ``k`` exceeds ``trials`` (so with no trials)."""
        _check("arguments to Metric.estimate", _count_problems(successes, trials))
        if self.k > trials:
            return None
        if self.kind == "pass^k":
            return pass_hat_k(successes, trials, self.k)
        if self.kind == "pass@k":
            return pass_at_k(successes, trials, self.k)
        return successes / trials


_METRIC_TEXT = re.compile(r"pass([\^@])([0-9]+)")


def parse_metric(text: str) -> Metric:
    """The metric named by ``text``: ``"rate"`` (also ``"pass^1"``, ``"pass@1"``), ``"pass^K"``
    or ``"pass@K"`` with ``K`` a positive integer (surrounding blanks are ignored)."""
    if not isinstance(text, str):
        _check("metric", [("metric", f"must be a string ({METRIC_FORMS}), got {text!r}")])
    stripped = text.strip()
    if stripped == "rate":
        return Metric()
    match = _METRIC_TEXT.fullmatch(stripped)
    if match is None or int(match[2]) < 1:
        reason = f"unknown metric {text!r}: expected {METRIC_FORMS}"
        _check("metric", [("metric", reason)])
    assert match is not None
    k = int(match[2])
    if k == 1:
        return Metric()
    return Metric("pass^k" if match[1] == "^" else "pass@k", k)


def metric_interval(metric: Metric, interval: Interval) -> Interval:
    """An interval on the success rate carried over to ``metric``: ``[L, U]`` becomes
    ``[L**k, U**k]`` for pass^k and ``[1 - (1-L)**k, 1 - (1-U)**k]`` for pass@k (each metric is
    increasing in the rate, so the coverage carries over unchanged)."""
    if not isinstance(metric, Metric):
        _check("arguments to metric_interval", [("metric", f"must be a Metric, got {metric!r}")])
    if not isinstance(interval, Interval):
        problem = ("interval", f"must be an Interval, got {interval!r}")
        _check("arguments to metric_interval", [problem])
    return Interval(metric.of_rate(interval.low), metric.of_rate(interval.high))


# --- requirements and verdicts -----------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Requirement:
    """A requirement on a metric of the success rate: ``metric >= at_least``, decided at
    ``confidence`` (each verdict is wrong with probability at most ``1 - confidence``).

    ``indifference`` (in success-rate units) is the sequential test's tolerance: it is held to
    its error rates for rates at least that far from the ``threshold``, and to none closer.
    """

    metric: Metric
    at_least: float
    confidence: float = 0.95
    indifference: float = 0.05

    def __post_init__(self) -> None:
        problems = []
        if not isinstance(self.metric, Metric):
            reason = f"must be a Metric (parse_metric: {METRIC_FORMS}), got {self.metric!r}"
            problems.append(("metric", reason))
        if not (_is_real(self.at_least) and 0 < self.at_least < 1):
            reason = f"must be a number between 0 and 1 (exclusive), got {self.at_least!r}"
            problems.append(("at_least", reason))
        problems += _confidence_problems(self.confidence, low=0.5)
        if not (_is_real(self.indifference) and 0 < self.indifference < 0.5):
            reason = f"must be a number between 0 and 0.5 (exclusive), got {self.indifference!r}"
            problems.append(("indifference", reason))
        _check("requirement", problems or self._decidable_problems())

    def _decidable_problems(self) -> list[tuple[str, str]]:
        """Why no number of trials could decide this requirement in double precision: a
        threshold that cannot be told from 1 (or 0), or an indifference too small to move it."""
        threshold = self.threshold
        if not (threshold / 2.0 > 0.0 and (1.0 + threshold) / 2.0 < 1.0):
            end = "1" if threshold > 0.5 else "0"
            fix = "lower at_least" if end == "1" else "raise at_least"
            if self.metric.kind != "rate":
                fix += " or k"
            reason = (
                f"{self.metric} >= {self.at_least!r} needs a success rate of {threshold!r}, "
                f"which double precision cannot tell from {end}: no number of trials can "
                f"decide it; {fix}"
            )
            return [("at_least", reason)]
        low, high = _sprt_rates(threshold, self.indifference)
        if not high / low > 1.0:
            reason = (
                f"{self.indifference!r} is too small next to the success rate {threshold!r} the "
                "requirement asks for: the sequential test cannot tell the rates on either side "
                "of it apart; raise it (the default is 0.05)"
            )
            return [("indifference", reason)]
        return []

    @property
    def threshold(self) -> float:
        """The success rate the requirement asks for: ``at_least`` for the rate,
        ``at_least**(1/k)`` for pass^k, ``1 - (1 - at_least)**(1/k)`` for pass@k."""
        return self.metric.rate_for(self.at_least)

    @property
    def interval_confidence(self) -> float:
        """The two-sided level of a verdict's intervals, ``2 * confidence - 1``: each of their
        bounds is one-sided at ``confidence``."""
        return 2.0 * self.confidence - 1.0

    def __str__(self) -> str:
        return f"{self.metric} >= {self.at_least:g}"


class Outcome(StrEnum):
    """A verdict's outcome."""

    PASS = "PASS"
    FAIL = "FAIL"
    INCONCLUSIVE = "INCONCLUSIVE"


@dataclass(frozen=True, slots=True)
class Verdict:
    """Whether ``successes`` of ``trials`` meet a requirement, and the numbers behind it.

    ``rate`` is ``successes / trials`` (None with no trials); ``wilson`` and ``exact`` are the
    Wilson and Clopper-Pearson intervals on the rate, two-sided at ``2 * confidence - 1`` (so
    each bound is one-sided at ``confidence``: the fixed rule decides on ``exact``);
    ``metric_value`` the metric's unbiased estimate (None when its ``k`` exceeds ``trials``);
    ``metric_exact`` the exact interval carried over to the metric; ``threshold`` the success
    rate the requirement asks for; ``reason`` says why in a sentence; ``decided_by`` is
    ``"interval"`` (the fixed rule) or ``"sequential"`` (the SPRT).
    """

    outcome: Outcome
    successes: int
    trials: int
    rate: float | None
    wilson: Interval
    exact: Interval
    metric_value: float | None
    metric_exact: Interval
    threshold: float
    reason: str
    decided_by: Literal["interval", "sequential"]


def _percent(level: float) -> str:
    return f"{100.0 * level:.4g}%"


def _digits(values: Sequence[float], threshold: float) -> int:
    """Decimals enough (2 to 6) to show each of ``values`` on its side of ``threshold``."""
    for digits in range(2, 7):
        if all(
            (round(value, digits) == round(threshold, digits)) == (value == threshold)
            for value in values
        ):
            return digits
    return 6


def _verdict(
    successes: int,
    trials: int,
    requirement: Requirement,
    outcome: Outcome,
    reason: str,
    decided_by: Literal["interval", "sequential"],
    exact: Interval,
) -> Verdict:
    level = requirement.interval_confidence
    return Verdict(
        outcome=outcome,
        successes=successes,
        trials=trials,
        rate=successes / trials if trials else None,
        wilson=wilson(successes, trials, level),
        exact=exact,
        metric_value=requirement.metric.estimate(successes, trials),
        metric_exact=metric_interval(requirement.metric, exact),
        threshold=requirement.threshold,
        reason=reason,
        decided_by=decided_by,
    )


def _check_requirement(what: str, requirement: object) -> None:
    if not isinstance(requirement, Requirement):
        _check(what, [("requirement", f"must be a Requirement, got {requirement!r}")])


def fixed_verdict(successes: int, trials: int, requirement: Requirement) -> Verdict:
    """The verdict on ``successes`` of ``trials``, a number of trials fixed in advance.

    With ``[L, U]`` the exact (Clopper-Pearson) interval at ``2 * confidence - 1``, whose bounds
    are each one-sided at the requirement's ``confidence``: PASS when ``L >= threshold``, FAIL
    when ``U < threshold``, INCONCLUSIVE otherwise (always with no trials).

    Guarantee, for any true rate ``p``: P(PASS) <= 1 - confidence when ``p < threshold``, and
    P(FAIL) <= 1 - confidence when ``p >= threshold``. So a verdict is wrong with probability at
    most ``1 - confidence`` (5% at the default 0.95); INCONCLUSIVE is never wrong, only
    undecided. The guarantee holds for one look at a number of trials chosen beforehand: judging
    after every trial and stopping at the first PASS or FAIL raises the error rate (use
    ``SequentialTest`` for that).
    """
    what = "arguments to fixed_verdict"
    _check(what, _count_problems(successes, trials))
    _check_requirement(what, requirement)
    level = requirement.interval_confidence
    exact = clopper_pearson(successes, trials, level)
    threshold = requirement.threshold
    digits = _digits((exact.low, exact.high), threshold)
    shown = f"[{exact.low:.{digits}f}, {exact.high:.{digits}f}]"
    target = f"the threshold {threshold:.{digits}f}"
    if requirement.metric.kind != "rate":
        target += f" (the rate at which {requirement.metric} = {requirement.at_least:g})"
    where = f"the exact {_percent(level)} interval {shown} on the success rate"
    at = f"at {_percent(requirement.confidence)} confidence"
    if trials == 0:
        outcome, reason = Outcome.INCONCLUSIVE, "no trials yet: more trials would decide"
    elif exact.low >= threshold:
        outcome = Outcome.PASS
        reason = f"{successes}/{trials} succeeded: {where} is at or above {target}: met {at}"
    elif exact.high < threshold:
        outcome = Outcome.FAIL
        reason = f"{successes}/{trials} succeeded: {where} is below {target}: not met {at}"
    else:
        outcome = Outcome.INCONCLUSIVE
        reason = (
            f"{successes}/{trials} succeeded: {where} contains {target}: more trials would decide"
        )
    return _verdict(successes, trials, requirement, outcome, reason, "interval", exact)


# --- the sequential test -----------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class SequentialState:
    """Where a ``SequentialTest`` stands: the counts so far, the log-likelihood ratio of the
    high rate against the low one, and the outcome (None while the test goes on)."""

    successes: int
    trials: int
    llr: float
    outcome: Outcome | None


class SequentialTest:
    """Wald's sequential probability ratio test (SPRT) of a requirement, fed one trial at a time.

    With ``p0`` the requirement's threshold and ``delta`` its indifference, the test weighs
    ``H0: p = p_low`` against ``H1: p = p_high``, where ``p_low = max(p0 - delta, p0 / 2)`` and
    ``p_high = min(p0 + delta, (1 + p0) / 2)`` (``delta`` shrinks near 0 and 1 so that both stay
    inside (0, 1)). After ``c`` successes in ``n`` trials the log-likelihood ratio is
    ``c ln(p_high / p_low) + (n - c) ln((1 - p_high) / (1 - p_low))``; the test decides PASS
    once it reaches ``ln(1 / alpha)`` and FAIL once it falls to ``ln(beta)``, where
    ``alpha = beta = 1 - confidence``.

    Guarantee, untruncated: P(PASS) <= alpha when ``p <= p_low`` and P(FAIL) <= beta when
    ``p >= p_high``. (Wald's inequalities, P(PASS | p_low) <= alpha (1 - P(FAIL | p_high)) and
    the mirror one, make these exact for these boundaries, overshoot or not; his usual
    ``ln((1 - beta) / alpha)`` would only approximate them. Beyond ``p_low`` and ``p_high`` the
    error falls further.) Between ``p_low`` and ``p_high``, the indifference zone, either
    verdict may come: no guarantee there.

    ``max_trials`` truncates the test: if it has not decided by then, the verdict is
    ``fixed_verdict`` at that count (PASS, FAIL or INCONCLUSIVE). The truncated test's PASS
    events are the SPRT's before ``max_trials`` plus the fixed rule's at it, so by a union bound
    its error rates are at most ``alpha + (1 - confidence)``, twice the untruncated ones; the
    rates measured by bench/live_stats.py stay below ``alpha``.
    """

    __slots__ = (
        "_fail_at",
        "_failure_weight",
        "_outcome",
        "_pass_at",
        "_success_weight",
        "_successes",
        "_trials",
        "max_trials",
        "p_high",
        "p_low",
        "requirement",
    )

    def __init__(self, requirement: Requirement, max_trials: int | None = None) -> None:
        what = "sequential test"
        _check_requirement(what, requirement)
        if max_trials is not None and not (_is_int(max_trials) and max_trials >= 1):
            _check(what, [("max_trials", f"must be a whole number >= 1, got {max_trials!r}")])
        self.requirement = requirement
        self.max_trials = max_trials
        self.p_low, self.p_high = _sprt_rates(requirement.threshold, requirement.indifference)
        error = 1.0 - requirement.confidence
        self._pass_at = -math.log(error)
        self._fail_at = math.log(error)
        self._success_weight = math.log(self.p_high / self.p_low)
        self._failure_weight = math.log1p(-self.p_high) - math.log1p(-self.p_low)
        self._successes = 0
        self._trials = 0
        self._outcome: Outcome | None = None

    @property
    def alpha(self) -> float:
        """The bound on P(PASS) at ``p_low`` and below (and on P(FAIL) at ``p_high`` and above)."""
        return 1.0 - self.requirement.confidence

    @property
    def pass_at(self) -> float:
        """The log-likelihood ratio at which the test decides PASS: ``ln(1 / alpha)``."""
        return self._pass_at

    @property
    def fail_at(self) -> float:
        """The log-likelihood ratio at which the test decides FAIL: ``ln(beta)``."""
        return self._fail_at

    def llr_of(self, successes: int, trials: int) -> float:
        """The log-likelihood ratio of ``p_high`` against ``p_low`` after these counts."""
        return successes * self._success_weight + (trials - successes) * self._failure_weight

    @property
    def llr(self) -> float:
        """The log-likelihood ratio after the trials so far."""
        return self.llr_of(self._successes, self._trials)

    @property
    def state(self) -> SequentialState:
        """The counts, the log-likelihood ratio and the outcome so far."""
        return SequentialState(self._successes, self._trials, self.llr, self._outcome)

    def decide(self, successes: int, trials: int) -> Outcome | None:
        """The test's decision at these counts, had it not stopped before: PASS or FAIL at a
        boundary; at ``max_trials`` without one, the fixed rule's outcome (which may be
        INCONCLUSIVE); None to go on. A pure function of its arguments."""
        what = "arguments to SequentialTest.decide"
        problems = _count_problems(successes, trials)
        if not problems and self.max_trials is not None and trials > self.max_trials:
            problems.append(
                ("trials", f"must be at most max_trials ({self.max_trials}), got {trials}")
            )
        _check(what, problems)
        return self._decide(successes, trials)

    def _decide(self, successes: int, trials: int) -> Outcome | None:
        """``decide`` on counts known to be valid (``update``'s own)."""
        llr = self.llr_of(successes, trials)
        if llr >= self._pass_at:
            return Outcome.PASS
        if llr <= self._fail_at:
            return Outcome.FAIL
        if self.max_trials is not None and trials == self.max_trials:
            return fixed_verdict(successes, trials, self.requirement).outcome
        return None

    def update(self, success: bool) -> Outcome | None:
        """Count one more trial; the outcome once the test decides, None to go on."""
        if not isinstance(success, bool):
            _check("sequential test update", [("success", f"must be a bool, got {success!r}")])
        if self._outcome is not None:
            reason = (
                f"the test already decided {self._outcome} after {self._trials} trials; "
                "start a new SequentialTest for more"
            )
            _check("sequential test update", [("success", reason)])
        self._trials += 1
        self._successes += success
        # its own counts need no checking: whole, at most trials, and trials reach max_trials
        # only where the test decides (the fixed rule's outcome) and takes no more
        self._outcome = self._decide(self._successes, self._trials)
        return self._outcome

    def verdict(self) -> Verdict:
        """The verdict on the trials so far: the SPRT's when it decided, the fixed rule's when
        truncated at ``max_trials``, else INCONCLUSIVE (more trials would decide)."""
        c, n = self._successes, self._trials
        requirement = self.requirement
        llr = self.llr
        if self._outcome is not None and self._pass_at > llr > self._fail_at:
            fixed = fixed_verdict(c, n, requirement)
            reason = (
                f"the sequential test had not decided by max_trials ({n}): its log-likelihood "
                f"ratio {llr:.3f} is between {self._fail_at:.3f} and {self._pass_at:.3f}, so the "
                f"fixed rule decides: {fixed.reason}"
            )
            return _verdict(c, n, requirement, fixed.outcome, reason, "interval", fixed.exact)
        exact = clopper_pearson(c, n, requirement.interval_confidence)
        asked = str(requirement)
        if requirement.metric.kind != "rate":
            asked += f": a success rate >= {requirement.threshold:.4g}"
        test = (
            f"the sequential test of a success rate {self.p_low:.4g} against {self.p_high:.4g} "
            f"({asked}; wrong at most {_percent(self.alpha)} of the time beyond those two)"
        )
        if self._outcome is Outcome.PASS:
            reason = (
                f"{c}/{n} succeeded: {test} decided PASS: its log-likelihood ratio {llr:.3f} "
                f"reached {self._pass_at:.3f}: met"
            )
        elif self._outcome is Outcome.FAIL:
            reason = (
                f"{c}/{n} succeeded: {test} decided FAIL: its log-likelihood ratio {llr:.3f} "
                f"fell to {self._fail_at:.3f}: not met"
            )
        else:
            reason = (
                f"{c}/{n} succeeded: {test} has not decided: its log-likelihood ratio "
                f"{llr:.3f} is between {self._fail_at:.3f} and {self._pass_at:.3f}: more trials "
                "would decide"
            )
        outcome = self._outcome or Outcome.INCONCLUSIVE
        return _verdict(c, n, requirement, outcome, reason, "sequential", exact)


def _sprt_rates(threshold: float, indifference: float) -> tuple[float, float]:
    """The two rates the sequential test weighs: ``threshold`` minus and plus ``indifference``,
    each at most halfway to 0 or 1 (see ``SequentialTest``)."""
    low = max(threshold - indifference, threshold / 2.0)
    high = min(threshold + indifference, (1.0 + threshold) / 2.0)
    return low, high


@dataclass(frozen=True)
class OperatingCharacteristics:
    """How a truncated sequential test behaves at a true success rate, exactly: the chance of
    each outcome, and ``stopped_by[n - 1]``, the chance it has decided within ``n`` trials."""

    rate: float
    outcomes: dict[Outcome, float]
    stopped_by: tuple[float, ...]

    @property
    def median_trials(self) -> int:
        """The fewest trials within which the test decides at least half the time."""
        return next(n for n, share in enumerate(self.stopped_by, 1) if share >= 0.5)

    @property
    def expected_trials(self) -> float:
        """The mean number of trials the test runs."""
        return sum(1.0 - share for share in self.stopped_by[:-1]) + 1.0


def operating_characteristics(
    requirement: Requirement, rate: float, max_trials: int
) -> OperatingCharacteristics:
    """The exact behaviour of ``SequentialTest(requirement, max_trials)`` when each trial
    succeeds with probability ``rate``: every path of counts is followed through
    ``SequentialTest.decide`` (O(max_trials²)), so the error rates and the trials it takes are
    computed, not sampled."""
    if not (_is_real(rate) and 0.0 <= rate <= 1.0):
        _check("operating characteristics", [("rate", f"must be in [0, 1], got {rate!r}")])
    test = SequentialTest(requirement, max_trials)
    alive = {0: 1.0}
    outcomes = dict.fromkeys(Outcome, 0.0)
    stopped_by: list[float] = []
    stopped = 0.0
    for n in range(1, max_trials + 1):
        following: dict[int, float] = {}
        for c, chance in alive.items():
            following[c + 1] = following.get(c + 1, 0.0) + chance * rate
            following[c] = following.get(c, 0.0) + chance * (1.0 - rate)
        alive = {}
        for c, chance in following.items():
            if chance == 0.0:
                continue
            decision = test.decide(c, n)
            if decision is None:
                alive[c] = chance
            else:
                outcomes[decision] += chance
                stopped += chance
        stopped_by.append(stopped)
    return OperatingCharacteristics(rate, outcomes, tuple(stopped_by))


def sequential_verdict(
    outcomes: Sequence[bool], requirement: Requirement, max_trials: int
) -> Verdict:
    """The truncated SPRT's verdict on ``outcomes`` taken in order, stopping at the first
    decision: ``trials`` counts the outcomes used, a prefix of ``outcomes`` (later ones are
    ignored, so the verdict depends on the trials' order, not on when they finished).

    Undecided after every outcome: INCONCLUSIVE, unless ``max_trials`` outcomes were given, in
    which case the fixed rule decides at ``max_trials`` (see ``SequentialTest``).
    """
    what = "arguments to sequential_verdict"
    if isinstance(outcomes, str | bytes) or not isinstance(outcomes, Sequence):
        _check(what, [("outcomes", f"must be a sequence of bools, got {outcomes!r}")])
    bad = [index for index, outcome in enumerate(outcomes) if not isinstance(outcome, bool)]
    _check(what, [(f"outcomes[{i}]", f"must be a bool, got {outcomes[i]!r}") for i in bad[:5]])
    if not (_is_int(max_trials) and max_trials >= 1):
        _check(what, [("max_trials", f"must be a whole number >= 1, got {max_trials!r}")])
    test = SequentialTest(requirement, max_trials)
    for outcome in outcomes:
        if test.update(outcome) is not None:
            break
    return test.verdict()


def minimum_trials_to_pass(requirement: Requirement, *, sequential: bool = False) -> int:
    """The fewest trials that can PASS: the smallest ``n`` at which ``n`` successes out of ``n``
    pass ``fixed_verdict`` (``ceil(ln(1 - confidence) / ln(threshold))``), or with
    ``sequential=True`` the smallest at which the SPRT decides PASS
    (``ceil(ln(1 / alpha) / ln(p_high / p_low))``).

    A truncated sequential run (``sequential_verdict``) can pass within ``max_trials`` exactly
    when the smaller of the two is at most ``max_trials``: refuse a requirement before running
    any trial when it is not.
    """
    _check_requirement("arguments to minimum_trials_to_pass", requirement)
    if sequential:
        test = SequentialTest(requirement)
        guess = math.ceil(test.pass_at / test.llr_of(1, 1))
        return _smallest(lambda n: test.decide(n, n) is Outcome.PASS, guess)
    level = requirement.interval_confidence
    threshold = requirement.threshold
    guess = math.ceil(math.log(1.0 - requirement.confidence) / math.log(threshold))
    # The closed form may be off in floating point (by far, next to 1): settle on the rule.
    return _smallest(lambda n: clopper_pearson(n, n, level).low >= threshold, guess)


def _smallest(holds: Callable[[int], bool], guess: int) -> int:
    """The smallest ``n >= 1`` for which ``holds(n)``, ``holds`` being False and then True as
    ``n`` grows: searched by doubling steps from ``guess``, then by bisection, so that a guess
    off by a lot costs a few dozen calls, not one per step."""
    high = max(1, guess)
    step = 1  # pragma: no mutate (the first step's size: bisection settles the answer)
    if holds(high):
        while high - step >= 1 and holds(high - step):
            high -= step
            step *= 2  # pragma: no mutate (how fast it gallops: bisection settles the answer)
        low = max(0, high - step)
    else:
        low = high
        while not holds(low + step):
            low += step
            step *= 2  # pragma: no mutate (the guess is the closed form: off by a few at most)
        high = low + step
    while high - low > 1:  # holds(high), and not holds(low) (or low == 0)
        middle = (low + high) // 2
        if holds(middle):
            high = middle
        else:
            low = middle
    return high

"""The statistics behind live-trial verdicts, against SciPy as an oracle, exact sums and seeded
simulations.

Tolerances of the simulations are derived, not guessed: a count of misses (or wrong verdicts)
out of N independent suites is Binomial(N, q) with q at most the guaranteed rate, so the test
allows up to that binomial's upper quantile at 1 - 0.001 / cells (a 0.1% chance, over all the
cells of a test together, that a correct implementation fails; the seeds are fixed, so a run
is reproducible).
"""

from __future__ import annotations

import itertools
import math
import random
from fractions import Fraction
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentrig.errors import InvalidInputError
from agentrig.harness.live.stats import (
    Interval,
    Metric,
    Outcome,
    Requirement,
    SequentialState,
    SequentialTest,
    clopper_pearson,
    fixed_verdict,
    metric_interval,
    minimum_trials_to_pass,
    operating_characteristics,
    parse_metric,
    pass_at_k,
    pass_hat_k,
    sequential_verdict,
    wilson,
)

RATE = Metric()

SCIPY = pytest.mark.xdist_group("scipy")
"""The SciPy oracles run on one worker and import SciPy there (0.8 CPU s), not at collection
in every worker."""


def requirement(at_least: float, metric: str = "rate", **options: float) -> Requirement:
    return Requirement(parse_metric(metric), at_least, **options)


def binomial_pmf(n: int, p: float, k: int) -> float:
    if p in (0.0, 1.0):
        return float(k == n * p)
    log = (
        math.lgamma(n + 1)
        - math.lgamma(k + 1)
        - math.lgamma(n - k + 1)
        + k * math.log(p)
        + (n - k) * math.log1p(-p)
    )
    return math.exp(log)


def upper_quantile(n: int, p: float, level: float) -> int:
    """The smallest k with P(Binomial(n, p) <= k) >= level."""
    total = 0.0
    for k in range(n + 1):
        total += binomial_pmf(n, p, k)
        if total >= level:
            return k
    return n


def lower_quantile(n: int, p: float, level: float) -> int:
    """The largest k with P(Binomial(n, p) >= k) >= level."""
    return n - upper_quantile(n, 1.0 - p, level)


# --- intervals against SciPy -------------------------------------------------------------------


def test_inspect_ai_regression_15_of_20() -> None:
    # The case inspect-ai got wrong, pinned to three decimals.
    low, high = wilson(15, 20)
    assert (round(low, 3), round(high, 3)) == (0.531, 0.888)
    low, high = clopper_pearson(15, 20)
    assert (round(low, 3), round(high, 3)) == (0.509, 0.913)


@SCIPY
@pytest.mark.parametrize("n", [1, 2, 3, 7, 20, 40])
def test_exact_interval_matches_scipy_binomtest(n: int) -> None:
    from scipy.stats import binomtest

    for c in range(n + 1):
        expected = binomtest(c, n).proportion_ci(0.95, method="exact")
        got = clopper_pearson(c, n)
        assert got.low == pytest.approx(expected.low, abs=1e-9)
        assert got.high == pytest.approx(expected.high, abs=1e-9)


@SCIPY
@pytest.mark.parametrize("confidence", [0.5, 0.9, 0.99, 0.999])
def test_exact_interval_matches_scipy_beta_quantiles(confidence: float) -> None:
    from scipy.stats import beta

    # The Clopper-Pearson bounds are beta quantiles; SciPy's come from Boost's inverse.
    tail = (1 - confidence) / 2
    for n in range(1, 26):
        for c in range(n + 1):
            got = clopper_pearson(c, n, confidence)
            low = beta.ppf(tail, c, n - c + 1) if c else 0.0
            high = beta.isf(tail, c + 1, n - c) if c < n else 1.0
            assert got.low == pytest.approx(low, abs=1e-9), (c, n)
            assert got.high == pytest.approx(high, abs=1e-9), (c, n)


@SCIPY
@pytest.mark.slow
@pytest.mark.parametrize("confidence", [0.5, 0.8, 0.9, 0.95, 0.99, 0.999])
def test_exact_interval_matches_scipy_for_every_count_up_to_200(confidence: float) -> None:
    import numpy as np
    from scipy.stats import beta, binomtest

    tail = (1 - confidence) / 2
    pairs = [(c, n) for n in range(1, 201) for c in range(n + 1)]
    counts = np.array([c for c, _ in pairs])
    totals = np.array([n for _, n in pairs])
    # The bounds are beta quantiles, straight from Boost: one vectorized SciPy call for all
    # 20,300 pairs (a call a pair took 20 times as long as the checks). The ends (c = 0 or n)
    # are closed forms; their placeholder shapes (1) are overwritten below.
    lows = beta.ppf(tail, np.maximum(counts, 1), totals - counts + 1)
    highs = beta.isf(tail, counts + 1, np.maximum(totals - counts, 1))
    for (c, n), low, high in zip(pairs, lows.tolist(), highs.tolist(), strict=True):
        got = clopper_pearson(c, n, confidence)
        if confidence == 0.95 and n <= 30:  # binomtest itself, where it is quick enough
            expected = binomtest(c, n).proportion_ci(confidence, method="exact")
            low, high = expected.low, expected.high
        low, high = (low if c else 0.0), (high if c < n else 1.0)
        assert abs(got.low - low) <= 1e-9, (c, n)
        assert abs(got.high - high) <= 1e-9, (c, n)


@SCIPY
@pytest.mark.parametrize("n", [1000, 5000, 10**6])
def test_exact_interval_matches_scipy_at_large_counts(n: int) -> None:
    from scipy.stats import beta

    # Beyond 64 terms the tail comes from the incomplete beta's continued fraction, on either
    # side of the mean (confidence near 0 puts the bounds at the median). The root search ends
    # within 1e-12 of the rate's standard deviation: held here to 1e-10 of it (a Halley step
    # with a wrong curvature converges only quadratically and ends 1e-8 of it away), plus the
    # rounding of ln C(n, c) from lgamma past n = 300 (about 1e-16 n ln n of it).
    for c in (n // 2, n // 3, 100, n - 100):
        for confidence in (0.5, 0.95, 0.999999, 1e-6):
            tail = (1 - confidence) / 2
            got = clopper_pearson(c, n, confidence)
            low, high = beta.ppf(tail, c, n - c + 1), beta.isf(tail, c + 1, n - c)
            for bound, expected in ((got.low, low), (got.high, high)):
                spread = math.sqrt(expected * (1 - expected) / n)
                tolerance = (1e-10 + 2e-16 * n * math.log(n)) * spread
                assert bound == pytest.approx(expected, abs=tolerance), (c, confidence)


def test_exact_interval_ends_have_closed_forms() -> None:
    for n in (1, 2, 10, 137):
        assert tuple(clopper_pearson(0, n)) == (0.0, pytest.approx(1 - 0.025 ** (1 / n)))
        assert tuple(clopper_pearson(n, n)) == (pytest.approx(0.025 ** (1 / n)), 1.0)
    assert clopper_pearson(0, 0) == wilson(0, 0) == Interval(0.0, 1.0)


def test_exact_interval_keeps_its_relative_precision_at_tiny_rates() -> None:
    # 1 success of 31,912 at 50%: the upper bound is ~5.3e-5, computed as one minus a rate
    # near 1; it must still be right to 9 significant digits. P(X <= 1) = 0.25 solved by
    # bisection on (1 - p)**(n - 1) * (1 + (n - 1) p).
    n, tail = 31_912, 0.25
    low, high = 1e-6, 1e-3
    for _ in range(200):
        middle = (low + high) / 2
        log_cdf = (n - 1) * math.log1p(-middle) + math.log1p((n - 1) * middle)
        low, high = (middle, high) if log_cdf > math.log(tail) else (low, middle)
    assert clopper_pearson(1, n, 0.5).high == pytest.approx(low, rel=1e-9)


@SCIPY
@pytest.mark.parametrize("confidence", [0.5, 0.9, 0.95, 0.99])
def test_wilson_matches_scipy(confidence: float) -> None:
    from scipy.stats import binomtest, norm

    z = norm.ppf(0.5 + confidence / 2)
    for n in range(1, 41):
        for c in range(n + 1):
            got = wilson(c, n, confidence)
            rate, scale = c / n, 1 + z * z / n
            center = (rate + z * z / (2 * n)) / scale
            half = z / scale * math.sqrt(rate * (1 - rate) / n + z * z / (4 * n * n))
            assert got.low == pytest.approx(max(0.0, center - half), abs=1e-12)
            assert got.high == pytest.approx(min(1.0, center + half), abs=1e-12)
    for c in (0, 3, 10, 19, 20):
        expected = binomtest(c, 20).proportion_ci(confidence, method="wilson")
        assert wilson(c, 20, confidence).low == pytest.approx(expected.low, abs=1e-12)
        assert wilson(c, 20, confidence).high == pytest.approx(expected.high, abs=1e-12)


@given(
    n=st.integers(1, 400),
    data=st.data(),
    confidence=st.floats(0.5, 0.999),
)
@settings(max_examples=60, deadline=None)
def test_intervals_hold_the_observed_rate_and_grow_with_successes(
    n: int, data: st.DataObject, confidence: float
) -> None:
    c = data.draw(st.integers(0, n - 1))
    for interval in (clopper_pearson, wilson):
        here, more = interval(c, n, confidence), interval(c + 1, n, confidence)
        assert 0.0 <= here.low <= c / n <= here.high <= 1.0
        assert here.low <= more.low
        assert here.high <= more.high
    wider = clopper_pearson(c, n, (1 + confidence) / 2)
    narrower = clopper_pearson(c, n, confidence)
    assert wider.low <= narrower.low <= narrower.high <= wider.high


def test_exact_interval_covers_at_least_its_confidence_exactly() -> None:
    # Exact coverage, summed over every count: Clopper-Pearson is conservative at every (p, n).
    for p in (0.5, 0.8, 0.9, 0.95, 0.99, 0.731):
        for n in (5, 12, 30):
            intervals = [clopper_pearson(c, n) for c in range(n + 1)]
            coverage = sum(binomial_pmf(n, p, c) for c in range(n + 1) if p in intervals[c])
            assert coverage >= 0.95 - 1e-12, (p, n, coverage)


@pytest.mark.slow
def test_exact_interval_coverage_by_seeded_simulation() -> None:
    # 10,000 suites: 400 in each of 25 (p, n) cells; misses per cell are Binomial(400, q) with
    # q <= 5% (a 95% interval), allowed up to the binomial's quantile at 1 - 0.001 / 25.
    rng = random.Random(20261122)
    rates, sizes, suites = (0.5, 0.8, 0.9, 0.95, 0.99), (5, 10, 20, 50, 100), 400
    allowed = upper_quantile(suites, 0.05, 1 - 0.001 / (len(rates) * len(sizes)))
    for p in rates:
        for n in sizes:
            misses = 0
            for _ in range(suites):
                c = sum(rng.random() < p for _ in range(n))
                misses += p not in clopper_pearson(c, n)
            assert misses <= allowed, (p, n, misses, allowed)


# --- pass^k and pass@k -------------------------------------------------------------------------


def test_pass_hat_k_and_pass_at_k_count_subsets_of_trials() -> None:
    # Brute force: over every k-subset of the trials, the share where all (pass^k) or any
    # (pass@k) succeeded.
    for n in range(1, 8):
        for c in range(n + 1):
            trials = [True] * c + [False] * (n - c)
            for k in range(1, n + 1):
                subsets = list(itertools.combinations(trials, k))
                assert pass_hat_k(c, n, k) == sum(map(all, subsets)) / len(subsets)
                assert pass_at_k(c, n, k) == pytest.approx(
                    sum(map(any, subsets)) / len(subsets), abs=1e-15
                )


@pytest.mark.parametrize("p", [Fraction(1, 3), Fraction(1, 2), Fraction(3, 4), Fraction(9, 10)])
def test_pass_hat_k_and_pass_at_k_are_unbiased(p: Fraction) -> None:
    # Their expectations over Binomial(n, p), summed exactly, are p**k and 1 - (1 - p)**k.
    for n in range(1, 9):
        weights = [math.comb(n, c) * p**c * (1 - p) ** (n - c) for c in range(n + 1)]
        for k in range(1, n + 1):
            hat = sum(w * Fraction(pass_hat_k(c, n, k)) for c, w in enumerate(weights))
            at = sum(w * Fraction(pass_at_k(c, n, k)) for c, w in enumerate(weights))
            assert abs(hat - p**k) <= Fraction(1, 10**15)
            assert abs(at - (1 - (1 - p) ** k)) <= Fraction(1, 10**15)


@given(n=st.integers(1, 60), data=st.data())
@settings(max_examples=50, deadline=None)
def test_pass_hat_k_never_exceeds_pass_at_k(n: int, data: st.DataObject) -> None:
    c, k = data.draw(st.integers(0, n)), data.draw(st.integers(1, n))
    assert 0.0 <= pass_hat_k(c, n, k) <= pass_at_k(c, n, k) <= 1.0
    if k == 1:
        assert pass_hat_k(c, n, 1) == pass_at_k(c, n, 1) == c / n


# --- metrics and requirements ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "metric"),
    [
        ("rate", Metric("rate", 1)),
        ("pass^1", Metric("rate", 1)),
        ("pass@1", Metric("rate", 1)),
        ("pass^3", Metric("pass^k", 3)),
        (" pass@12\n", Metric("pass@k", 12)),
    ],
)
def test_parse_metric(text: str, metric: Metric) -> None:
    assert parse_metric(text) == metric
    assert parse_metric(str(metric)) == metric


@pytest.mark.parametrize("text", ["pass^0", "pass@-2", "pass^k", "pass3", "Rate", "", "p@3"])
def test_unknown_metric_names_the_accepted_forms(text: str) -> None:
    with pytest.raises(InvalidInputError) as caught:
        parse_metric(text)
    assert caught.value.field == "metric"
    assert "rate (or pass^1, pass@1), pass^K or pass@K" in str(caught.value)


def test_requirement_threshold_on_the_rate() -> None:
    assert requirement(0.9).threshold == 0.9
    assert requirement(0.81, "pass^2").threshold == pytest.approx(0.9)
    assert requirement(0.99, "pass@2").threshold == pytest.approx(0.9)
    assert requirement(0.5, "pass^5").threshold == pytest.approx(0.5**0.2)
    assert str(requirement(0.6, "pass^3")) == "pass^3 >= 0.6"


def test_metric_interval_maps_the_rate_bounds() -> None:
    on_rate = Interval(0.6, 0.9)
    assert metric_interval(RATE, on_rate) == on_rate
    assert tuple(metric_interval(Metric("pass^k", 3), on_rate)) == pytest.approx((0.216, 0.729))
    assert tuple(metric_interval(Metric("pass@k", 2), on_rate)) == pytest.approx((0.84, 0.99))
    whole = metric_interval(Metric("pass@k", 2), Interval(0.0, 1.0))
    assert str(whole) == "[0.000, 1.000]"  # not -0.000


# --- the fixed rule ----------------------------------------------------------------------------


def test_fixed_verdict_decides_on_one_sided_exact_bounds() -> None:
    rule = requirement(0.9)
    verdict = fixed_verdict(17, 20, rule)
    assert verdict.outcome is Outcome.INCONCLUSIVE
    assert verdict.decided_by == "interval"
    assert verdict.rate == verdict.metric_value == 0.85
    assert rule.interval_confidence == pytest.approx(0.9)
    assert (
        verdict.exact == verdict.metric_exact == clopper_pearson(17, 20, rule.interval_confidence)
    )
    assert verdict.wilson == wilson(17, 20, rule.interval_confidence)
    assert verdict.threshold == 0.9
    assert verdict.reason == (
        "17/20 succeeded: the exact 90% interval [0.66, 0.96] on the success rate contains "
        "the threshold 0.90: more trials would decide"
    )
    # 15/20: the upper bound 0.896 shows with the digits that set it apart from 0.900.
    assert fixed_verdict(15, 20, rule).reason == (
        "15/20 succeeded: the exact 90% interval [0.544, 0.896] on the success rate is below "
        "the threshold 0.900: not met at 95% confidence"
    )
    passed = fixed_verdict(29, 29, rule)  # 0.05 ** (1/29) = 0.9018 >= 0.9
    assert passed.outcome is Outcome.PASS
    assert "is at or above the threshold" in passed.reason
    assert fixed_verdict(28, 28, rule).outcome is Outcome.INCONCLUSIVE
    failed = fixed_verdict(12, 20, rule)
    assert failed.outcome is Outcome.FAIL
    assert "is below the threshold" in failed.reason


def test_fixed_verdict_on_pass_k_reports_the_metric() -> None:
    verdict = fixed_verdict(15, 20, requirement(0.6, "pass^3"))
    assert verdict.threshold == pytest.approx(0.6 ** (1 / 3))
    assert verdict.metric_value == pass_hat_k(15, 20, 3)
    assert verdict.metric_exact == metric_interval(Metric("pass^k", 3), verdict.exact)
    assert "(the rate at which pass^3 = 0.6)" in verdict.reason
    assert fixed_verdict(2, 2, requirement(0.6, "pass@3")).metric_value is None  # k > trials


def test_fixed_verdict_without_trials_is_inconclusive() -> None:
    verdict = fixed_verdict(0, 0, requirement(0.5))
    assert verdict.outcome is Outcome.INCONCLUSIVE
    assert verdict.rate is None
    assert verdict.metric_value is None
    assert verdict.exact == Interval(0.0, 1.0)


@pytest.mark.parametrize(("at_least", "confidence"), [(0.8, 0.95), (0.9, 0.95), (0.7, 0.9)])
def test_fixed_verdict_error_rates_are_bounded_exactly(at_least: float, confidence: float) -> None:
    # The worst case for both errors is p at the threshold (P(PASS) grows with p): summed over
    # every count, P(FAIL | p0) <= 1 - confidence, and P(PASS | p0) bounds P(PASS | p < p0).
    rule = requirement(at_least, confidence=confidence)
    for n in (10, 25, 60):
        outcomes = [fixed_verdict(c, n, rule).outcome for c in range(n + 1)]
        wrong_fail = sum(
            binomial_pmf(n, at_least, c) for c, o in enumerate(outcomes) if o == "FAIL"
        )
        sup_pass = sum(binomial_pmf(n, at_least, c) for c, o in enumerate(outcomes) if o == "PASS")
        assert wrong_fail <= 1 - confidence
        assert sup_pass <= 1 - confidence + 1e-12


@pytest.mark.slow
def test_fixed_verdict_error_rates_by_seeded_simulation() -> None:
    # At p = p0 a FAIL is wrong; just below p0 a PASS is. 2,000 suites per cell, 12 cells.
    rng = random.Random(7)
    suites, cells = 2000, 12
    allowed = upper_quantile(suites, 0.05, 1 - 0.001 / cells)
    for at_least in (0.8, 0.9):
        rule = requirement(at_least)
        for n in (20, 50, 100):
            for p, wrong in ((at_least, Outcome.FAIL), (at_least - 1e-6, Outcome.PASS)):
                errors = 0
                for _ in range(suites):
                    c = sum(rng.random() < p for _ in range(n))
                    errors += fixed_verdict(c, n, rule).outcome is wrong
                assert errors <= allowed, (at_least, n, p, errors, allowed)


def test_minimum_trials_to_pass() -> None:
    for rule in (requirement(0.9), requirement(0.8, confidence=0.99), requirement(0.5, "pass^3")):
        fixed = minimum_trials_to_pass(rule)
        assert fixed_verdict(fixed, fixed, rule).outcome is Outcome.PASS
        assert fixed_verdict(fixed - 1, fixed - 1, rule).outcome is not Outcome.PASS
        sequential = minimum_trials_to_pass(rule, sequential=True)
        assert SequentialTest(rule).decide(sequential, sequential) is Outcome.PASS
        assert SequentialTest(rule).decide(sequential - 1, sequential - 1) is None
        # A run can pass within max_trials exactly when the smaller of the two fits.
        for max_trials in range(1, fixed + 3):
            verdict = sequential_verdict([True] * max_trials, rule, max_trials)
            can = min(fixed, sequential) <= max_trials
            assert (verdict.outcome is Outcome.PASS) == can, (rule, max_trials)
    assert minimum_trials_to_pass(requirement(0.9)) == 29  # ln 0.05 / ln 0.9 = 28.4
    assert minimum_trials_to_pass(requirement(0.9), sequential=True) == 27  # 3.00 / 0.111


@pytest.mark.parametrize(
    ("at_least", "confidence", "fewest"),
    [
        (0.5, 1 - 0.5**33, 34),  # ln(1 - confidence) / ln(at_least) = 33.0, yet 33 of 33 fall short
        (0.5, 1 - 0.5**35, 36),
        (0.75, 1 - 0.75**3, 3),  # = 3.0000000000000004: the closed form says 4
        (0.9, 1 - 0.9**22, 22),
    ],
)
def test_minimum_trials_to_pass_where_the_closed_form_is_off_by_one(
    at_least: float, confidence: float, fewest: int
) -> None:
    rule = Requirement(RATE, at_least, confidence=confidence)
    assert minimum_trials_to_pass(rule) == fewest
    assert fixed_verdict(fewest, fewest, rule).outcome is Outcome.PASS
    assert fixed_verdict(fewest - 1, fewest - 1, rule).outcome is not Outcome.PASS


@settings(
    max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    at_least=st.floats(min_value=1e-300, max_value=1 - 2e-16),
    k=st.integers(1, 10**12),
    kind=st.sampled_from(["rate", "pass^", "pass@"]),
    confidence=st.floats(min_value=0.5, max_value=0.9999),
    indifference=st.floats(min_value=1e-12, max_value=0.49),
)
def test_minimum_trials_to_pass_is_the_smallest_count_even_next_to_1_or_0(
    bounded: Any, at_least: float, k: int, kind: str, confidence: float, indifference: float
) -> None:
    metric = "rate" if kind == "rate" else f"{kind}{k}"
    try:
        rule = requirement(at_least, metric, confidence=confidence, indifference=indifference)
    except InvalidInputError:
        return  # undecidable in double precision: refused (see BAD_CALLS)
    level = rule.interval_confidence
    fixed = bounded(lambda: minimum_trials_to_pass(rule))  # it used to step one trial at a time
    assert clopper_pearson(fixed, fixed, level).low >= rule.threshold
    assert fixed == 1 or clopper_pearson(fixed - 1, fixed - 1, level).low < rule.threshold
    sequential = bounded(lambda: minimum_trials_to_pass(rule, sequential=True))
    test = SequentialTest(rule)
    assert test.decide(sequential, sequential) is Outcome.PASS
    assert sequential == 1 or test.decide(sequential - 1, sequential - 1) is not Outcome.PASS


# --- the sequential test -----------------------------------------------------------------------


@pytest.mark.parametrize(("at_least", "p"), [(0.5, 0.3), (0.6, 0.75), (0.9, 0.97)])
def test_operating_characteristics_match_every_sequence_of_outcomes(
    at_least: float, p: float
) -> None:
    # An independent oracle: all 2^10 sequences of 10 trials through sequential_verdict.
    rule = Requirement(Metric(), at_least, indifference=0.2)
    max_trials = 10
    outcomes = dict.fromkeys(Outcome, 0.0)
    stopped_within = [0.0] * max_trials
    for sequence in itertools.product((True, False), repeat=max_trials):
        chance = math.prod(p if success else 1 - p for success in sequence)
        verdict = sequential_verdict(list(sequence), rule, max_trials)
        outcomes[verdict.outcome] += chance
        for n in range(verdict.trials, max_trials + 1):
            stopped_within[n - 1] += chance
    exact = operating_characteristics(rule, p, max_trials)
    for outcome in Outcome:
        assert exact.outcomes[outcome] == pytest.approx(outcomes[outcome], abs=1e-12)
    assert exact.stopped_by == pytest.approx(stopped_within, abs=1e-12)
    assert exact.stopped_by[-1] == pytest.approx(1.0)
    mean = sum(
        n * (stopped_within[n - 1] - (stopped_within[n - 2] if n > 1 else 0.0))
        for n in range(1, max_trials + 1)
    )
    assert exact.expected_trials == pytest.approx(mean)
    assert exact.median_trials == next(n for n, s in enumerate(stopped_within, 1) if s >= 0.5)


SPEED_CELLS = [(0.9, 0.8, 30), (0.9, 1.0, 30), (0.8, 0.7, 45), (0.8, 0.9, 45)]
"""(threshold, true rate, the most trials the median run may take) at 0.1 from the threshold."""


@pytest.mark.parametrize(("at_least", "p", "target"), SPEED_CELLS)
def test_sprt_median_trials_exactly(at_least: float, p: float, target: int) -> None:
    exact = operating_characteristics(requirement(at_least), p, 200)
    assert exact.median_trials <= target
    right = Outcome.PASS if p > at_least else Outcome.FAIL
    assert exact.outcomes[right] >= 0.99


@pytest.mark.parametrize("at_least", [0.8, 0.9, 0.97])
def test_sprt_error_rates_at_the_indifference_edges_exactly(at_least: float) -> None:
    rule = requirement(at_least)
    test = SequentialTest(rule)
    assert test.p_low == pytest.approx(at_least - 0.05)
    assert test.p_high == pytest.approx(min(at_least + 0.05, (1 + at_least) / 2))
    assert operating_characteristics(rule, test.p_low, 200).outcomes[Outcome.PASS] <= 0.05
    assert operating_characteristics(rule, test.p_high, 200).outcomes[Outcome.FAIL] <= 0.05


@pytest.mark.slow
def test_sprt_by_seeded_simulation() -> None:
    # Each cell: 2,000 suites through sequential_verdict. The speed cells' sample medians stay
    # within target; at the indifference edges wrong verdicts stay within 5% (the binomial
    # quantile); every cell's outcome counts agree with the exact distribution (two-sided).
    rng = random.Random(11)
    suites, max_trials = 2000, 200
    edges = [(a, p) for a in (0.9, 0.8) for p in (a - 0.05, a + 0.05)]
    cells = [(a, p, target) for a, p, target in SPEED_CELLS] + [(a, p, None) for a, p in edges]
    level = 1 - 0.001 / (2 * len(cells))
    allowed_wrong = upper_quantile(suites, 0.05, level)
    for at_least, p, target in cells:
        rule = requirement(at_least)
        exact = operating_characteristics(rule, p, max_trials).outcomes
        counts = dict.fromkeys(Outcome, 0)
        used = []
        for _ in range(suites):
            outcomes = [rng.random() < p for _ in range(max_trials)]
            verdict = sequential_verdict(outcomes, rule, max_trials)
            counts[verdict.outcome] += 1
            used.append(verdict.trials)
        if target is not None:
            assert sorted(used)[suites // 2 - 1] <= target, (at_least, p)
        else:
            wrong = Outcome.PASS if p < at_least else Outcome.FAIL
            assert counts[wrong] <= allowed_wrong, (at_least, p, counts)
        for outcome in (Outcome.PASS, Outcome.FAIL):
            q = exact[outcome]
            assert lower_quantile(suites, q, level) <= counts[outcome]
            assert counts[outcome] <= upper_quantile(suites, q, level), (at_least, p, outcome)


def test_sequential_test_walks_the_log_likelihood_ratio() -> None:
    rule = requirement(0.9)
    test = SequentialTest(rule)
    weight_success = math.log(0.95 / 0.85)
    weight_failure = math.log(0.05 / 0.15)
    assert test.pass_at == pytest.approx(math.log(20))
    assert test.fail_at == pytest.approx(math.log(0.05))
    for _ in range(10):
        assert test.update(True) is None
    assert test.update(False) is None
    assert test.llr == pytest.approx(10 * weight_success + weight_failure)
    assert test.state.successes == 10
    assert test.state.trials == 11
    assert test.state.outcome is None
    # 10 * 0.111 - k * 1.099: -2.18 after 3 failures, -3.28 (below ln 0.05 = -3.00) after 4
    assert [test.update(False) for _ in range(3)] == [None, None, Outcome.FAIL]
    assert test.state == SequentialState(
        10, 14, pytest.approx(10 * weight_success + 4 * weight_failure), Outcome.FAIL
    )
    assert test.decide(10, 13) is None
    assert test.decide(10, 14) is Outcome.FAIL
    with pytest.raises(InvalidInputError) as caught:
        test.update(True)
    assert caught.value.field == "success"
    assert "already decided FAIL" in str(caught.value)


def test_sequential_verdict_uses_the_prefix_up_to_the_decision() -> None:
    rule = requirement(0.9)
    outcomes = [True] * 27 + [False] * 50
    verdict = sequential_verdict(outcomes, rule, 200)
    assert verdict.outcome is Outcome.PASS
    assert verdict.trials == verdict.successes == 27
    assert verdict.decided_by == "sequential"
    assert verdict.reason.startswith(
        "27/27 succeeded: the sequential test of a success rate 0.85 against 0.95 "
        "(rate >= 0.9; wrong at most 5% of the time beyond those two) decided PASS"
    )
    assert "decided PASS" in verdict.reason
    assert sequential_verdict(outcomes[:26], rule, 200).outcome is Outcome.INCONCLUSIVE
    undecided = sequential_verdict(outcomes[:26], rule, 200)
    assert undecided.decided_by == "sequential"
    assert "more trials would decide" in undecided.reason


def test_sequential_verdict_falls_back_on_the_fixed_rule_at_max_trials() -> None:
    rule = requirement(0.5)
    # Alternating outcomes keep the ratio near zero: at 40 the exact 90% interval holds 0.5.
    outcomes = [index % 2 == 0 for index in range(60)]
    verdict = sequential_verdict(outcomes, rule, 40)
    assert verdict.trials == 40
    assert verdict.outcome is Outcome.INCONCLUSIVE
    assert verdict.decided_by == "interval"
    assert verdict.reason.startswith("the sequential test had not decided by max_trials (40)")
    assert verdict.exact == fixed_verdict(20, 40, rule).exact
    # With a low enough threshold the same counts pass by the fixed rule.
    lenient = sequential_verdict(outcomes, Requirement(RATE, 0.3, indifference=0.01), 40)
    assert (lenient.outcome, lenient.decided_by) == (Outcome.PASS, "interval")


def test_decide_is_the_pure_form_of_update() -> None:
    rule = requirement(0.8)
    rng = random.Random(3)
    for _ in range(50):
        test, probe = SequentialTest(rule, 60), SequentialTest(rule, 60)
        c = n = 0
        while True:
            success = rng.random() < 0.8
            c, n = c + success, n + 1
            outcome = test.update(success)
            assert outcome == probe.decide(c, n)
            if outcome is not None:
                break


# --- bad input ---------------------------------------------------------------------------------


RULE = Requirement(RATE, 0.9)

BAD_CALLS = [
    (lambda: wilson(-1, 5), "successes"),
    (lambda: wilson(6, 5), "successes"),
    (lambda: wilson(1, -1), "trials"),
    (lambda: wilson(1, 2.0), "trials"),  # type: ignore[arg-type]
    (lambda: wilson(1, 5, 1.0), "confidence"),
    (lambda: clopper_pearson(True, 5), "successes"),  # type: ignore[arg-type]
    (lambda: clopper_pearson(1, 5, 0.0), "confidence"),
    (lambda: clopper_pearson(1, 5, float("nan")), "confidence"),
    (lambda: pass_hat_k(3, 5, 0), "k"),
    (lambda: pass_hat_k(3, 5, 6), "k"),
    (lambda: pass_at_k(3, 5, 1.5), "k"),  # type: ignore[arg-type]
    (lambda: pass_at_k(6, 5, 2), "successes"),
    (lambda: parse_metric(3), "metric"),  # type: ignore[arg-type]
    (lambda: Metric("best"), "kind"),  # type: ignore[arg-type]
    (lambda: Metric("pass^k", 0), "k"),
    (lambda: Metric("rate", 2), "k"),
    (lambda: Requirement("rate", 0.9), "metric"),  # type: ignore[arg-type]
    (lambda: Requirement(RATE, 1.0), "at_least"),
    (lambda: Requirement(RATE, 0.0), "at_least"),
    (lambda: Requirement(RATE, 0.9, confidence=0.5), "confidence"),
    (lambda: Requirement(RATE, 0.9, confidence=1.0), "confidence"),
    (lambda: Requirement(RATE, 0.9, indifference=0.5), "indifference"),
    (lambda: Requirement(RATE, 0.9, indifference=0), "indifference"),
    (lambda: Interval(0.5, 0.4), "high"),
    (lambda: Interval(-0.1, 0.4), "low"),
    (lambda: metric_interval("rate", Interval(0, 1)), "metric"),  # type: ignore[arg-type]
    (lambda: metric_interval(RATE, (0, 1)), "interval"),  # type: ignore[arg-type]
    (lambda: fixed_verdict(3, 2, RULE), "successes"),
    (lambda: fixed_verdict(1, 2, "rate >= 0.9"), "requirement"),  # type: ignore[arg-type]
    (lambda: SequentialTest(RULE, 0), "max_trials"),
    (lambda: SequentialTest(RULE, 10).decide(5, 11), "trials"),
    (lambda: SequentialTest(RULE).update(1), "success"),  # type: ignore[arg-type]
    (lambda: sequential_verdict([True, 1], RULE, 10), "outcomes[1]"),  # type: ignore[list-item]
    (lambda: sequential_verdict("TTF", RULE, 10), "outcomes"),  # type: ignore[arg-type]
    (lambda: sequential_verdict([True], RULE, 0), "max_trials"),
    (lambda: minimum_trials_to_pass(0.9), "requirement"),  # type: ignore[arg-type]
    # No number of trials decides these in double precision (they hung or divided by zero).
    (lambda: Requirement(RATE, 0.9999999999999999), "at_least"),
    (lambda: requirement(0.7, f"pass^{10**20}"), "at_least"),
    (lambda: Requirement(RATE, 5e-324), "at_least"),
    (lambda: Requirement(RATE, 0.7, indifference=1e-17), "indifference"),
]


@pytest.mark.parametrize(("call", "field"), BAD_CALLS)
def test_bad_input_names_the_field(call: object, field: str) -> None:
    with pytest.raises(InvalidInputError) as caught:
        call()  # type: ignore[operator]
    assert caught.value.field == field
    assert f"{field}: " in str(caught.value)


def test_the_first_five_bad_outcomes_are_named_and_what_was_called() -> None:
    with pytest.raises(InvalidInputError) as caught:
        sequential_verdict([1] * 7, RULE, 10)  # type: ignore[list-item]
    assert [field for field, _ in caught.value.problems] == [f"outcomes[{i}]" for i in range(5)]
    with pytest.raises(InvalidInputError, match=r"^invalid sequential test: requirement: "):
        SequentialTest("rate >= 0.9")  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (
            lambda: sequential_verdict("TTF", RULE, 10),  # type: ignore[arg-type]
            "arguments to sequential_verdict: outcomes: must be a sequence of bools, got 'TTF'",
        ),
        (
            lambda: sequential_verdict([True], RULE, 0),
            "arguments to sequential_verdict: max_trials: must be a whole number >= 1, got 0",
        ),
        (
            lambda: clopper_pearson(3, 2),
            "arguments to clopper_pearson: successes: must be at most trials (2), got 3",
        ),
        (
            lambda: fixed_verdict(3, 2, RULE),
            "arguments to fixed_verdict: successes: must be at most trials (2), got 3",
        ),
        (
            lambda: parse_metric("best"),
            "metric: metric: unknown metric 'best': expected rate (or pass^1, pass@1), pass^K or "
            "pass@K with K a positive integer",
        ),
        (
            lambda: Requirement(RATE, 1.0),
            "requirement: at_least: must be a number between 0 and 1 (exclusive), got 1.0",
        ),
        (
            lambda: Requirement(RATE, 0.9, indifference=0),
            "requirement: indifference: must be a number between 0 and 0.5 (exclusive), got 0",
        ),
        (
            lambda: Requirement(RATE, 5e-324),
            "requirement: at_least: rate >= 5e-324 needs a success rate of 5e-324, which double "
            "precision cannot tell from 0: no number of trials can decide it; raise at_least",
        ),
    ],
)
def test_a_bad_call_says_what_was_called(call: Any, message: str) -> None:
    with pytest.raises(InvalidInputError) as caught:
        call()
    assert str(caught.value) == f"invalid {message}"


def test_a_decided_sequential_test_refuses_more_trials_saying_why() -> None:
    test = SequentialTest(requirement(0.5))
    while test.update(True) is None:
        pass
    with pytest.raises(InvalidInputError) as caught:
        test.update(True)
    assert str(caught.value) == (
        "invalid sequential test update: success: the test already decided PASS after "
        f"{test.state.trials} trials; start a new SequentialTest for more"
    )


def test_each_metric_estimates_itself_from_the_counts() -> None:
    assert parse_metric("rate").estimate(2, 5) == 0.4
    assert parse_metric("pass^3").estimate(4, 5) == pass_hat_k(4, 5, 3) == pytest.approx(0.4)
    assert parse_metric("pass@3").estimate(2, 5) == pass_at_k(2, 5, 3) == pytest.approx(0.9)
    assert parse_metric("pass@3").estimate(2, 2) is None  # k past the trials


def test_an_interval_may_be_a_single_rate() -> None:
    point = Interval(0.25, 0.25)
    assert 0.25 in point
    assert tuple(point) == (0.25, 0.25)


def test_every_bad_field_is_reported_at_once() -> None:
    with pytest.raises(InvalidInputError) as caught:
        Requirement(RATE, 2.0, confidence=0.2, indifference=0.7)
    assert [field for field, _ in caught.value.problems] == [
        "at_least",
        "confidence",
        "indifference",
    ]

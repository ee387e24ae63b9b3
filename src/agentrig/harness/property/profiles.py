"""Hypothesis settings profiles for agentrig's property tests.

``agentrig-ci`` (the default here) keeps example counts small, derandomizes and skips the
explain phase, so a CI run is fast and repeatable. ``agentrig-deep`` multiplies every count by :data:`DEEP_FACTOR`, draws new
examples on each run and keeps a failure database: run it with ``pytest --agentrig-deep`` (or
``--hypothesis-profile agentrig-deep``).

Decorate tests with :func:`agentrig_settings`, giving the CI example count; the active profile
scales it::

    @agentrig_settings(max_examples=25)
    @given(script=scripts())
    def test_something(script): ...
"""

from __future__ import annotations

from hypothesis import HealthCheck, Phase, settings
from hypothesis.errors import InvalidArgument

from agentrig.errors import InvalidInputError

__all__ = [
    "CI_PROFILE",
    "DEEP_FACTOR",
    "DEEP_PROFILE",
    "agentrig_settings",
    "is_deep",
    "load_profile",
    "register_profiles",
]

CI_PROFILE = "agentrig-ci"
DEEP_PROFILE = "agentrig-deep"
DEEP_FACTOR = 20
"""How many times more examples (and stateful steps, up to 4x) a deep run tries."""

_SLOW_IS_FINE = [HealthCheck.too_slow, HealthCheck.data_too_large]
_NO_EXPLAIN = [phase for phase in Phase if phase is not Phase.explain]


def register_profiles() -> None:
    """Register both profiles (once; later calls do nothing)."""
    if _registered(CI_PROFILE) and _registered(DEEP_PROFILE):
        return
    settings.register_profile(
        CI_PROFILE,
        max_examples=25,
        derandomize=True,
        database=None,
        deadline=None,
        print_blob=False,
        phases=_NO_EXPLAIN,
        suppress_health_check=_SLOW_IS_FINE,
    )
    # The parent is hypothesis's own default: with CI=true hypothesis loads its "ci" profile
    # first (no database), and a profile inherits unspecified settings from what is loaded then.
    # The database is left to that default: .hypothesis/examples, resolved when first used.
    settings.register_profile(
        DEEP_PROFILE,
        parent=settings.get_profile("default"),
        max_examples=25 * DEEP_FACTOR,
        derandomize=False,
        deadline=None,
        print_blob=True,
        suppress_health_check=_SLOW_IS_FINE,
    )


def _registered(name: str) -> bool:
    try:
        settings.get_profile(name)
    except InvalidArgument:
        return False
    return True


def load_profile(*, deep: bool) -> None:
    """Register the profiles and make the deep (or the CI) one the active hypothesis profile."""
    register_profiles()
    settings.load_profile(DEEP_PROFILE if deep else CI_PROFILE)


def is_deep() -> bool:
    """True when the active hypothesis profile is ``agentrig-deep``."""
    return settings.get_current_profile_name() == DEEP_PROFILE


def agentrig_settings(*, max_examples: int, stateful_step_count: int | None = None) -> settings:
    """Settings for one test: ``max_examples`` (and ``stateful_step_count``) as given under the CI
    profile, scaled up under the deep one."""
    for name, value in (
        ("max_examples", max_examples),
        ("stateful_step_count", stateful_step_count),
    ):
        if value is not None and (
            not isinstance(value, int) or isinstance(value, bool) or value < 1
        ):
            raise InvalidInputError(name, [("", f"expected a positive integer, got {value!r}")])
    register_profiles()
    deep = is_deep()
    parent = settings.get_profile(DEEP_PROFILE if deep else CI_PROFILE)
    scale = DEEP_FACTOR if deep else 1
    if stateful_step_count is None:
        return settings(parent, max_examples=max_examples * scale)
    steps = stateful_step_count * (min(scale, 4))
    return settings(parent, max_examples=max_examples * scale, stateful_step_count=steps)

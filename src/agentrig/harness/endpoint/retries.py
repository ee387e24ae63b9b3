"""Which user-role messages of an agent retry a turn rather than start the next one.

Frameworks ask the model again within one turn, in the user's voice: pydantic-ai sends an output
validator's ``ModelRetry`` or a failed validation as a user message ("Your previous response
failed the application's validation ..."), and on an API without mid-conversation system
messages its own notes as ``<system>`` blocks in a user message. Counted as user turns, each
would take the scenario's next turn. A turn's ``retries:`` says which messages retry it; left
out, the frameworks' own are recognised (the texts of pydantic-ai 1.x and 2.x). A turn allows
at most ``ScenarioTurn.max_retries`` of them.
"""

from __future__ import annotations

import re

from agentrig.harness.scenarios.model import RetryRule, ScenarioTurn

_OUTPUT_ASKED = r"(?:return text|include your response in a tool call|call a tool|return an image)"

FRAMEWORK_RETRY = re.compile(
    # pydantic-ai 2.x: feedback on a response it could not use, in the user's voice
    r"\AYour previous response failed the application's validation"
    # pydantic-ai 2.x: a mid-conversation system message on an API without one
    r"|\A\s*<system[\s>]"
    # pydantic-ai 1.x: a retry prompt, and the request for output after an empty response
    r"|\n\nFix the errors and try again\.\s*\Z"
    rf"|\A\s*Please {_OUTPUT_ASKED}(?: or {_OUTPUT_ASKED})*\.\s*\Z"
)
"""The user-role messages the common frameworks write to retry a turn (searched, ``re``)."""


def retries_turn(turn: ScenarioTurn, following: ScenarioTurn | None, text: str) -> bool:
    """Whether a user message of ``text``, sent after ``turn`` began, retries ``turn`` (else it
    starts the next turn). The next turn's own ``user:`` text (``following``) always starts it."""
    rule = turn.retries
    if rule is False or (following is not None and text.strip() == following.user.strip()):
        return False
    if rule is True:
        return True
    if FRAMEWORK_RETRY.search(text) is not None:
        return True
    if not isinstance(rule, RetryRule) or not rule.has_rule:  # a number: the frameworks' only
        return False
    try:
        return rule.matches(text)
    except TimeoutError:  # a regex that backtracks too long: the message is no retry
        return False

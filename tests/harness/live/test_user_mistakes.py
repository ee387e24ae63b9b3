"""The simulated user's own mistakes, which set a trial aside rather than fail the agent: each
mistake's code and what it says, where each begins and ends, and the shapes of known facts."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from agentrig.harness.live.simulated_user import UserMove
from agentrig.harness.live.transcript import AgentReply, CalledTool, Exchange, Transcript
from agentrig.harness.live.user_mistakes import (
    MISTAKES,
    UserMistake,
    fact_shape,
    find_user_mistake,
)
from agentrig.harness.scenarios.live_model import UserSpec


@pytest.fixture(autouse=True)
def shapes_worked_out_anew() -> Iterator[None]:
    # fact_shape remembers its shapes: each test works them out with the code as it is
    fact_shape.cache_clear()
    yield
    fact_shape.cache_clear()


def spec(**fields: Any) -> UserSpec:
    given = {
        "persona": "Dana",
        "goal": "a refund",
        "knows": {"order_id": "A-1029"},
        "model": {"provider": "openai", "name": "gpt-4.1-mini"},
    }
    return UserSpec.model_validate({**given, **fields})


def conversation(*replies: str, calls: tuple[CalledTool, ...] = ()) -> Transcript:
    """One exchange per reply; ``calls`` made in the first."""
    return Transcript(
        tuple(
            Exchange(f"message {n}", AgentReply(text, calls if n == 1 else ()))
            for n, text in enumerate(replies, start=1)
        )
    )


TWO = conversation("Which order is it?", "Let me check.")


def mistake(move: UserMove, transcript: Transcript = TWO, **fields: Any) -> str | None:
    found = find_user_mistake(spec(**fields), move, transcript)
    return None if found is None else str(found)


def test_the_mistakes_and_how_one_reads() -> None:
    assert MISTAKES == ("empty_message", "cut_off", "unknown_fact", "ended_early", "role_confusion")
    assert str(UserMistake("cut_off", "why")) == "cut_off: why"


def test_a_plain_message_is_no_mistake() -> None:
    assert mistake(UserMove("It is order A-1029.")) is None
    assert mistake(UserMove("Hello", finish_reason="stop"), Transcript()) is None


@pytest.mark.parametrize("reason", ["length", "content_filter"])
def test_an_answer_cut_off_is_a_mistake_even_one_that_ends_the_conversation(reason: str) -> None:
    expected = f"cut_off: the user model's answer was cut ({reason})"
    assert mistake(UserMove("My mug", finish_reason=reason)) == expected
    assert mistake(UserMove("", ended=True, finish_reason=reason)) == expected


@pytest.mark.parametrize("reason", ["stop", "tool_calls", None])
def test_an_answer_that_finished_is_not_cut_off(reason: str | None) -> None:
    assert mistake(UserMove("It is A-1029.", finish_reason=reason)) is None


@pytest.mark.parametrize("text", ["", "  \n "])
def test_an_empty_message_names_its_number(text: str) -> None:
    assert mistake(UserMove(text)) == "empty_message: the user's message 3 is empty"
    assert mistake(UserMove(text), Transcript()) == "empty_message: the user's message 1 is empty"


def test_ending_with_no_words_is_no_empty_message() -> None:
    assert mistake(UserMove("", ended=True)) is None


def test_ending_before_min_turns_is_a_mistake_and_at_min_turns_is_not() -> None:
    stop = {"min_turns": 3, "max_turns": 5}
    assert mistake(UserMove("Bye", ended=True), stop=stop) == (
        "ended_early: the user ended the conversation after 2 turn(s); min_turns is 3"
    )
    three = conversation("a", "b", "c")
    assert mistake(UserMove("Bye", ended=True), three, stop=stop) is None


def test_ending_before_the_agent_called_the_tools_named_lists_the_missing_ones() -> None:
    stop = {"not_before_tool": ["issue_refund", "lookup_order", "notify"]}
    looked_up = conversation("Found it.", "Done?", calls=(CalledTool("lookup_order"),))
    assert mistake(UserMove("Bye", ended=True), looked_up, stop=stop) == (
        "ended_early: the user ended the conversation before the agent called issue_refund, notify"
    )
    every = (CalledTool("issue_refund"), CalledTool("lookup_order"), CalledTool("notify"))
    assert (
        mistake(UserMove("Bye", ended=True), conversation("Done.", calls=every), stop=stop) is None
    )


def test_a_message_that_is_not_the_end_may_come_before_the_tools() -> None:
    stop = {"min_turns": 3, "max_turns": 5, "not_before_tool": ["issue_refund"]}
    assert mistake(UserMove("Any news?"), stop=stop) is None


@pytest.mark.parametrize(
    "text", ["Assistant: how can I help?", "  agent : hello", "AI: sure", "SUPPORT:ok"]
)
def test_a_message_labelled_as_the_assistants_is_role_confusion(text: str) -> None:
    assert mistake(UserMove(text)) == f"role_confusion: the user spoke as the assistant: {text!r}"


def test_role_confusion_shows_the_first_80_characters() -> None:
    text = "Assistant: " + "x" * 100
    assert mistake(UserMove(text)) == (
        f"role_confusion: the user spoke as the assistant: {text[:80]!r}"
    )


@pytest.mark.parametrize(
    "text", ["Agents: are you there?", "My assistant: broken", "Daisy: hi", "ai generated?"]
)
def test_other_labels_are_no_role_confusion(text: str) -> None:
    assert mistake(UserMove(text)) is None


def test_repeating_the_agents_last_reply_is_role_confusion() -> None:
    assert mistake(UserMove("  Let me check. ")) == (
        "role_confusion: the user repeated the agent's last reply"
    )
    assert mistake(UserMove("Which order is it?")) is None  # an earlier reply
    assert mistake(UserMove("Let me check."), Transcript((Exchange("hi"),))) is None


def test_a_value_shaped_like_a_known_fact_but_not_one_is_an_unknown_fact() -> None:
    assert mistake(UserMove("It is order B-7777.")) == (
        "unknown_fact: disclosed 'B-7777', shaped like a fact it knows ('A-1029') but not one"
    )
    assert mistake(UserMove("A-1029 or maybe A-1030")) == (
        "unknown_fact: disclosed 'A-1030', shaped like a fact it knows ('A-1029') but not one"
    )


def test_a_known_fact_or_one_the_agent_said_first_is_no_mistake() -> None:
    assert mistake(UserMove("It is A-1029."), Transcript()) is None
    said = conversation("Is it B-7777?")
    assert mistake(UserMove("Yes, B-7777."), said) is None
    looked_up = conversation("Found one.", calls=(CalledTool("find", result="order C-1234"),))
    assert mistake(UserMove("Yes, C-1234."), looked_up) is None


def test_a_fact_is_not_made_up_of_the_end_of_a_reply_and_the_start_of_a_result() -> None:
    # the agent said "B-77" and a tool returned "77 ...": neither is "B-7777"
    joined = conversation("Your ticket is B-77", calls=(CalledTool("stock", result="77 mugs"),))
    assert mistake(UserMove("It is B-7777."), joined) == (
        "unknown_fact: disclosed 'B-7777', shaped like a fact it knows ('A-1029') but not one"
    )
    apart = conversation("Your ticket is B-77", "77 mugs left")
    assert mistake(UserMove("It is B-7777."), apart) is not None


def test_every_known_fact_with_a_shape_is_checked() -> None:
    knows = {"name": "Dana Smith", "order_id": "A-1029", "email": "dana@example.com"}
    assert mistake(UserMove("Write to dan@example.org"), knows=knows) == (
        "unknown_fact: disclosed 'dan@example.org', shaped like a fact it knows "
        "('dana@example.com') but not one"
    )
    assert mistake(UserMove("I am Dana Smith, dana@example.com"), knows=knows) is None


def test_a_fact_with_a_letter_outside_ascii_has_a_shape_its_own_value_matches() -> None:
    # é once read as [a-z]: the shape of café12 matched neither café12 nor bobé34
    assert mistake(UserMove("It is bobé34."), knows={"code": "café12"}) == (
        "unknown_fact: disclosed 'bobé34', shaped like a fact it knows ('café12') but not one"
    )


def test_a_known_fact_is_compared_without_surrounding_space() -> None:
    assert mistake(UserMove("It is A-1029."), knows={"order_id": " A-1029 "}) is None


@pytest.mark.parametrize(
    ("value", "matches", "misses"),
    [
        ("A-1029", ["B-7777", "Z-0000"], ["AB-1029", "A-102", "A-10290", "a-1029", "A1029"]),
        (" A-1029 ", ["B-7777"], ["B-777"]),
        ("ab12", ["xy99"], ["AB12", "ab123", "abc12"]),
        ("12345", ["99999"], ["1234", "123456"]),
        ("ORD#77", ["XYZ#12"], ["XYZ-12", "XYZ#1"]),
        ("dana@example.com", ["a.b+c@mail.example.org"], ["dana@example", "dana at example.com"]),
        ("Zz9", ["Ab1"], ["ab1", "AB1", "Zz99"]),
        (
            "注文12345",
            ["注文99999"],
            ["xy99999", "注文9999"],
        ),  # another script's letters as they are
        ("café12", ["café12", "bobé34"], ["cafe12", "cafè12"]),
        ("A²-1234", ["B²-0000"], ["B2-0000", "B-0000"]),
    ],
)
def test_a_facts_shape_matches_values_of_its_shape_only(
    value: str, matches: list[str], misses: list[str]
) -> None:
    shape = fact_shape(value)
    assert shape is not None
    for text in matches:
        assert shape.findall(f"it is {text}, thanks") == [text], text
    for text in misses:
        assert shape.findall(f"it is {text}, thanks") == [], text


def test_a_shape_matches_a_value_on_its_own_not_inside_another() -> None:
    shape = fact_shape("A-1029")
    assert shape is not None
    assert shape.findall("B-7777 C-8888") == ["B-7777", "C-8888"]
    assert shape.findall("XB-7777 B-7777-2 B-7777x B-77770 _B-7777") == []


@pytest.mark.parametrize("value", ["Dana", "A 1029", "1234", "no digits here", "user@host", ""])
def test_free_text_and_short_numbers_have_no_shape(value: str) -> None:
    assert fact_shape(value) is None


def test_an_at_sign_outside_an_email_address_is_part_of_the_shape() -> None:
    shape = fact_shape("a1@b")
    assert shape is not None
    assert shape.findall("x7@y and x7-y") == ["x7@y"]


def test_an_email_address_shape_is_any_email_address() -> None:
    shape = fact_shape("Dana.S@Example.COM")
    assert shape is not None
    assert shape.findall("mail x_y%z@sub.domain.io now") == ["x_y%z@sub.domain.io"]
    assert shape.findall("mail a@b.c now") == []  # a one-letter top-level domain

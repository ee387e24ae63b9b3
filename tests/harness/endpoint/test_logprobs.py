"""Scripted ``logprobs:``: sent in the OpenAI APIs' and Gemini's shapes to a request that asks
for them, plain and streamed, and parsed by the official SDKs; Anthropic's API has none."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from agentrig.harness.endpoint.handle import EndpointHandle

from .sdk_agents import anthropic_client, gemini_client, openai_client

openai = pytest.importorskip("openai")
pytest.importorskip("anthropic")

GRADER = """\
name: grader
turns:
  - user: Is the answer right?
    model:
      - say: "Yes, très"
        repeat: true
        logprobs:
          - {token: "Yes", logprob: -0.105, top: {"No": -2.4, "Yes": -0.105, "Maybe": -4.0}}
          - {token: ",", logprob: -0.01}
          - {token: " très", logprob: -1.5, top: {" very": -0.3, " très": -1.5}}
"""
QUESTION = [{"role": "user", "content": "Is the answer right?"}]
TOKENS = [("Yes", -0.105), (",", -0.01), (" très", -1.5)]
TOPS = [[("Yes", -0.105), ("No", -2.4), ("Maybe", -4.0)], [], [(" very", -0.3), (" très", -1.5)]]


def _handle(write_scenario: Callable[[str], Path], text: str = GRADER) -> EndpointHandle:
    return EndpointHandle(write_scenario(text))


def _seen(entries: Any) -> list[tuple[str, float, list[int] | None, list[tuple[str, float]]]]:
    return [
        (e.token, e.logprob, e.bytes, [(t.token, t.logprob) for t in e.top_logprobs])
        for e in entries
    ]


def _expected(top: int, with_bytes: bool = True) -> list[Any]:
    return [
        (token, logprob, list(token.encode()) if with_bytes else None, tops[:top])
        for (token, logprob), tops in zip(TOKENS, TOPS, strict=True)
    ]


@pytest.mark.parametrize("top", [0, 1, 2, 5])
def test_chat_sends_the_tokens_with_as_many_top_logprobs_as_asked(
    write_scenario: Callable[[str], Path], top: int
) -> None:
    handle = _handle(write_scenario)
    options: dict[str, Any] = {"top_logprobs": top} if top else {}
    answer = openai_client(handle).chat.completions.create(
        model="gpt-test", messages=QUESTION, logprobs=True, **options
    )
    choice = answer.choices[0]
    assert choice.message.content == "Yes, très"
    assert _seen(choice.logprobs.content) == _expected(top)
    assert choice.logprobs.refusal is None
    if top:
        assert choice.logprobs.content[0].top_logprobs[0].logprob == -0.105
    handle.check()


def test_chat_sends_none_unless_asked(write_scenario: Callable[[str], Path]) -> None:
    handle = _handle(write_scenario)
    client = openai_client(handle)
    assert client.chat.completions.create(model="m", messages=QUESTION).choices[0].logprobs is None
    answer = client.chat.completions.create(
        model="m", messages=QUESTION, logprobs=False, top_logprobs=3
    )
    assert answer.choices[0].logprobs is None
    handle.check()


def test_a_chat_stream_sends_a_token_a_chunk_with_its_logprobs(
    write_scenario: Callable[[str], Path],
) -> None:
    handle = _handle(write_scenario)
    chunks = list(
        openai_client(handle).chat.completions.create(
            model="m", messages=QUESTION, logprobs=True, top_logprobs=1, stream=True
        )
    )
    with_text = [c.choices[0] for c in chunks if c.choices and c.choices[0].delta.content]
    assert [c.delta.content for c in with_text] == ["Yes", ",", " très"]
    assert [_seen(c.logprobs.content) for c in with_text] == [[e] for e in _expected(1)]
    plain = list(
        openai_client(handle).chat.completions.create(model="m", messages=QUESTION, stream=True)
    )
    assert all(c.choices[0].logprobs is None for c in plain if c.choices)
    assert "".join(c.choices[0].delta.content or "" for c in plain if c.choices) == "Yes, très"
    handle.check()


def test_responses_sends_them_on_the_output_text_when_included(
    write_scenario: Callable[[str], Path],
) -> None:
    handle = _handle(write_scenario)
    client = openai_client(handle)
    include = ["message.output_text.logprobs"]
    answer = client.responses.create(model="m", input=QUESTION, include=include, top_logprobs=2)
    part = answer.output[0].content[0]
    assert answer.output_text == "Yes, très"
    assert _seen(part.logprobs) == _expected(2)
    assert part.logprobs[0].top_logprobs[0].logprob == -0.105
    without = client.responses.create(model="m", input=QUESTION, top_logprobs=2)
    assert without.output[0].content[0].logprobs == []
    handle.check()


def test_a_responses_stream_sends_a_token_a_delta_with_its_logprobs(
    write_scenario: Callable[[str], Path],
) -> None:
    handle = _handle(write_scenario)
    include = ["message.output_text.logprobs"]
    deltas, done = [], None
    with openai_client(handle).responses.stream(
        model="m", input=QUESTION, include=include, top_logprobs=1
    ) as events:
        for event in events:
            if event.type == "response.output_text.delta":
                deltas.append(event)
            elif event.type == "response.output_text.done":
                done = event
        final = events.get_final_response()
    assert [d.delta for d in deltas] == ["Yes", ",", " très"]
    streamed = [
        [
            (e.token, e.logprob, [(t.token, t.logprob) for t in e.top_logprobs or ()])
            for e in d.logprobs
        ]
        for d in deltas
    ]
    assert streamed == [[(t, lp, tops)] for t, lp, _, tops in _expected(1)]
    assert done is not None
    assert len(done.logprobs) == 3
    assert _seen(final.output[0].content[0].logprobs) == _expected(1)
    handle.check()


def _gemini_config(top: int | None = None, *, asked: bool = True) -> Any:
    from google.genai import types

    return types.GenerateContentConfig(response_logprobs=asked, logprobs=top)


def _gemini_seen(result: Any) -> list[tuple[str, float, list[tuple[str, float]]]]:
    """Each chosen token of a Gemini ``logprobsResult``, with its top candidates."""
    return [
        (
            chosen.token,
            chosen.log_probability,
            [(c.token, c.log_probability) for c in top.candidates],
        )
        for chosen, top in zip(result.chosen_candidates, result.top_candidates, strict=True)
    ]


def _gemini_expected(top: int) -> list[Any]:
    return [(t, lp, tops) for t, lp, _, tops in _expected(top)]


@pytest.mark.parametrize("top", [0, 2])
def test_gemini_sends_the_tokens_with_as_many_top_candidates_as_asked(
    write_scenario: Callable[[str], Path], top: int
) -> None:
    pytest.importorskip("google.genai")
    handle = _handle(write_scenario)
    answer = gemini_client(handle).models.generate_content(
        model="gemini-test", contents="Is the answer right?", config=_gemini_config(top or None)
    )
    candidate = answer.candidates[0]
    assert answer.text == "Yes, très"
    assert _gemini_seen(candidate.logprobs_result) == _gemini_expected(top)
    assert candidate.avg_logprobs == pytest.approx(sum(lp for _, lp in TOKENS) / 3)
    handle.check()


def test_gemini_sends_none_unless_asked(write_scenario: Callable[[str], Path]) -> None:
    pytest.importorskip("google.genai")
    handle = _handle(write_scenario)
    client = gemini_client(handle)
    for config in (None, _gemini_config(3, asked=False)):
        answer = client.models.generate_content(
            model="gemini-test", contents="Is the answer right?", config=config
        )
        assert answer.candidates[0].logprobs_result is None
        assert answer.candidates[0].avg_logprobs is None
    handle.check()


def test_a_gemini_stream_sends_a_token_a_chunk_with_its_logprobs(
    write_scenario: Callable[[str], Path],
) -> None:
    pytest.importorskip("google.genai")
    handle = _handle(write_scenario)
    chunks = list(
        gemini_client(handle).models.generate_content_stream(
            model="gemini-test", contents="Is the answer right?", config=_gemini_config(1)
        )
    )
    assert [c.text for c in chunks] == ["Yes", ",", " très"]
    seen = [_gemini_seen(c.candidates[0].logprobs_result) for c in chunks]
    assert seen == [[entry] for entry in _gemini_expected(1)]
    assert chunks[-1].candidates[0].avg_logprobs == pytest.approx(sum(lp for _, lp in TOKENS) / 3)
    handle.check()


def test_anthropic_has_no_logprobs_and_answers_the_text(
    write_scenario: Callable[[str], Path],
) -> None:
    handle = _handle(write_scenario)
    answer = anthropic_client(handle).messages.create(model="m", max_tokens=8, messages=QUESTION)
    assert [block.text for block in answer.content] == ["Yes, très"]
    assert "logprob" not in answer.model_dump_json()
    handle.check()


def test_a_reply_without_scripted_logprobs_sends_none_when_asked(
    write_scenario: Callable[[str], Path],
) -> None:
    text = "name: plain\nturns:\n  - user: Is the answer right?\n    model:\n      - say: Sure\n"
    handle = _handle(write_scenario, text)
    answer = openai_client(handle).chat.completions.create(
        model="m", messages=QUESTION, logprobs=True, top_logprobs=2
    )
    assert answer.choices[0].logprobs is None
    handle.check()


def test_sessions_that_ask_differently_each_get_their_own_answer(
    write_scenario: Callable[[str], Path],
) -> None:
    # The same scripted reply as the same request number is one plan shared by every session:
    # what each session asked for must still shape its own answer.
    handle = _handle(write_scenario)
    asked = [{"top_logprobs": 1, "logprobs": True}, {}, {"top_logprobs": 3, "logprobs": True}]
    for stream in (False, True):
        for number, options in enumerate(asked):
            client = openai.OpenAI(
                api_key=f"grader/{stream}-{number}",
                base_url=handle.openai_base_url,
                http_client=handle.httpx2_client(),
            )
            if stream:
                chunks = client.chat.completions.create(
                    model="m", messages=QUESTION, stream=True, **options
                )
                logprobs = [
                    e
                    for c in chunks
                    if c.choices and c.choices[0].logprobs
                    for e in c.choices[0].logprobs.content
                ]
            else:
                choice = client.chat.completions.create(
                    model="m", messages=QUESTION, **options
                ).choices[0]
                logprobs = choice.logprobs.content if choice.logprobs else []
            expected = _expected(options["top_logprobs"]) if options else []
            assert _seen(logprobs) == expected, (stream, options)

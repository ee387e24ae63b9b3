"""What a replay compares of a request, and what a miss shows: the canonical key, the YAML the
diffs are made of, the nearest recording and the one-line summary of an unplayed one."""

from __future__ import annotations

from agentrig.harness.cassettes.matching import (
    fitted,
    nearest,
    request_diff,
    request_key,
    request_yaml,
    summarize,
)
from agentrig.harness.cassettes.model import (
    Interaction,
    RecordedError,
    RecordedMessage,
    RecordedRequest,
    RecordedResponse,
    RecordedTool,
    RecordedToolCall,
)


def _asked(text: str) -> RecordedRequest:
    return RecordedRequest(messages=(RecordedMessage(role="user", content=text),))


def _called(call_id: str, arguments: dict[str, object]) -> RecordedRequest:
    call = RecordedToolCall(id=call_id, name="lookup", arguments=arguments)
    return RecordedRequest(
        messages=(
            RecordedMessage(role="user", content="Find it."),
            RecordedMessage(role="assistant", tool_calls=(call,)),
            RecordedMessage(role="tool", tool_call_id=call_id, content="found"),
        )
    )


def test_the_key_ignores_mapping_order_and_the_ids_made_up() -> None:
    assert request_key(_called("call_a", {"b": 1, "a": "é"})) == request_key(
        _called("toolu_9", {"a": "é", "b": 1})
    )


def test_the_key_tells_apart_what_json_tells_apart() -> None:
    keys = {request_key(_called("c", {"n": value})) for value in (1, 1.0, True, "1")}
    assert len(keys) == 4


def test_the_key_tells_apart_two_calls_from_one_called_twice() -> None:
    def calls(*ids: str) -> RecordedRequest:
        made = tuple(RecordedToolCall(id=i, name="lookup") for i in ids)
        return RecordedRequest(messages=(RecordedMessage(role="assistant", tool_calls=made),))

    assert request_key(calls("a", "b")) == request_key(calls("x", "y"))
    assert request_key(calls("a", "b")) != request_key(calls("a", "a"))


def test_the_yaml_numbers_ids_from_one_and_writes_lines_as_a_block() -> None:
    request = RecordedRequest(
        messages=(
            RecordedMessage(role="user", content="line one\nline two"),
            *_called("call_x", {"b": 1, "a": "é"}).messages[1:],
        )
    )
    assert request_yaml(request) == (
        "messages:\n"
        "- role: user\n"
        "  content: |-\n"
        "    line one\n"
        "    line two\n"
        "- role: assistant\n"
        "  tool_calls:\n"
        "  - id: '#1'\n"
        "    name: lookup\n"
        "    arguments:\n"
        "      b: 1\n"
        "      a: é\n"
        "- role: tool\n"
        "  content: found\n"
        "  tool_call_id: '#1'\n"
    )


def test_a_diff_shows_the_changed_lines_of_a_multi_line_message() -> None:
    diff = request_diff(_asked("Plan:\n1. look\n2. book"), _asked("Plan:\n1. look\n2. pay"), 3)
    assert diff == (
        "--- recorded interaction 3\n"
        "+++ live request\n"
        "@@ -3,4 +3,4 @@\n"
        "   content: |-\n"
        "     Plan:\n"
        "     1. look\n"
        "-    2. book\n"
        "+    2. pay\n"
    )


def _interactions(*requests: RecordedRequest) -> tuple[Interaction, ...]:
    return tuple(
        Interaction(request=request, response=RecordedResponse(content="ok"))
        for request in requests
    )


def test_the_nearest_recording_is_the_most_similar_and_the_first_of_equals() -> None:
    live = _asked("Book a table for two at eight.")
    recorded = _interactions(
        _asked("Cancel my order."),
        _asked("Book a table for two at nine."),
        _asked("Book a table for two at nine."),
    )
    assert nearest(live, recorded, [0, 1, 2]) == 1
    assert nearest(live, recorded, [2, 1, 0]) == 2
    assert nearest(live, recorded, [0]) == 0
    assert nearest(live, recorded, []) is None


def test_similarity_counts_every_character_even_in_a_long_repetitive_text() -> None:
    # difflib's autojunk would ignore characters that make up more than 1% of a text of 200 or
    # more: the long runs of "ab" would count for nothing, and both recordings look alike.
    text = "ab" * 150
    live = _asked(text)
    recorded = _interactions(_asked("cd" * 150), _asked("q" + text[1:-1] + "q"))
    assert nearest(live, recorded, [0, 1]) == 1


def test_a_summary_shows_the_last_message_and_the_calls_that_came_back() -> None:
    calls = (
        RecordedToolCall(id="1", name="search", arguments={"q": "flights", "max": 3}),
        RecordedToolCall(id="2", name="clock", arguments={}),
    )
    interaction = Interaction(
        request=RecordedRequest(
            messages=(
                RecordedMessage(role="system", content="Be brief."),
                RecordedMessage(role="user", content="Find   flights\nto Paris"),
            )
        ),
        response=RecordedResponse(tool_calls=calls),
    )
    assert summarize(interaction) == (
        "user: 'Find flights to Paris' -> search(q='flights', max=3), clock()"
    )


def test_a_summary_of_a_text_answer_an_error_and_no_messages() -> None:
    answered = Interaction(request=_asked("Hi"), response=RecordedResponse(content="Hello!"))
    assert summarize(answered) == "user: 'Hi' -> 'Hello!'"
    failed = Interaction(
        request=RecordedRequest(),
        error=RecordedError(type="RateLimitError", message="Slow  down,\nplease"),
    )
    assert summarize(failed) == "(no messages) -> error RateLimitError: 'Slow down, please'"


def test_a_summary_clips_long_text_and_arguments() -> None:
    long_text = "x" * 61
    call = RecordedToolCall(id="1", name="write", arguments={"text": "y" * 40})
    interaction = Interaction(
        request=_asked(long_text), response=RecordedResponse(tool_calls=(call,))
    )
    arguments = "text='" + "y" * 31 + "..."  # 40 characters in all
    assert summarize(interaction) == f"user: '{'x' * 57}...' -> write({arguments})"
    exact = Interaction(request=_asked("x" * 60), response=RecordedResponse(content="y" * 60))
    assert summarize(exact) == f"user: '{'x' * 60}' -> '{'y' * 60}'"
    call = RecordedToolCall(id="1", name="write", arguments={"t": "y" * 35})  # t='...' is 40
    fits = Interaction(request=_asked("a"), response=RecordedResponse(tool_calls=(call,)))
    assert summarize(fits) == f"user: 'a' -> write(t='{'y' * 35}')"


def _tool(name: str, **fields: object) -> RecordedTool:
    return RecordedTool.model_validate({"name": name, **fields})


def test_a_live_request_is_fitted_to_the_stubs_a_hand_written_cassette_has() -> None:
    schema = {"type": "object", "properties": {"q": {"type": "string"}}}
    live = RecordedRequest(
        messages=(RecordedMessage(role="user", content="Go."),),
        tools=(
            _tool("search", description="Search the web.", parameters=schema, strict=True),
            _tool("clock", description="The time.", parameters=schema, strict=True),
            _tool("pinned", description="Pinned.", parameters=schema, strict=True),
            _tool("unrecorded", description="Not in the cassette.", parameters=schema),
        ),
    )
    recorded = RecordedRequest(
        messages=live.messages,
        tools=(
            _tool("search"),  # a stub: neither description, schema nor strict compared
            _tool("clock", description="The time."),  # the description is compared
            _tool("pinned", strict=True),  # strict written: compared
        ),
    )
    assert fitted(live, recorded).tools == (
        _tool("search", description="", parameters={}, strict=False),
        _tool("clock", description="The time.", parameters={}, strict=False),
        _tool("pinned", description="", parameters={}, strict=True),
        live.tools[3],
    )
    assert live.tools[0].description == "Search the web."  # the live request is not changed


def test_a_tool_recorded_in_full_is_compared_in_full() -> None:
    tool = _tool("search", description="Search.", parameters={"type": "object"}, strict=True)
    live = RecordedRequest(tools=(tool,))
    assert fitted(live, live) == live
    stricter = RecordedRequest(tools=(tool.model_copy(update={"strict": False}),))
    assert request_key(fitted(live, stricter)) != request_key(stricter)

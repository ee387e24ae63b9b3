"""Messages: roles, tool calls, metadata, and the immutable ``Messages`` list."""

from __future__ import annotations

import tracemalloc
from collections.abc import Callable
from dataclasses import FrozenInstanceError

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentrig import (
    InvalidInputError,
    Message,
    Messages,
    Role,
    ToolCall,
    ToolResult,
    runtime_context,
)
from agentrig.fakes import SeededIds


def test_roles_are_the_five_seed_roles() -> None:
    assert [role.value for role in Role] == ["system", "developer", "user", "assistant", "tool"]


def test_constructors_set_the_role() -> None:
    assert Message.system("s").role is Role.SYSTEM
    assert Message.user("u").role is Role.USER
    assert Message.assistant("a").role is Role.ASSISTANT
    result = ToolResult(content="42", call_id="c1", tool_name="add")
    tool_message = Message.tool(result)
    assert (tool_message.role, tool_message.content) == (Role.TOOL, "42")
    assert tool_message.tool_result == result


def test_invalid_role_raises_invalid_input_naming_the_field() -> None:
    with pytest.raises(InvalidInputError) as raised:
        Message(role="robot", content="beep")
    assert raised.value.field == "role"
    assert "user" in str(raised.value)


def test_from_text_with_invalid_role_raises_invalid_input() -> None:
    with pytest.raises(InvalidInputError) as raised:
        Messages.from_text("hi", role="robot")
    assert raised.value.field == "role"


def test_for_roles_with_invalid_role_raises_invalid_input() -> None:
    with pytest.raises(InvalidInputError) as raised:
        Messages.of(Message.user("hi")).for_roles("robot")
    assert raised.value.field == "role"


def test_wrong_content_type_names_the_field() -> None:
    with pytest.raises(InvalidInputError) as raised:
        Message(role=Role.USER, content=5)
    assert raised.value.field == "content"


def test_unknown_message_field_is_rejected() -> None:
    with pytest.raises(InvalidInputError) as raised:
        Message(role=Role.USER, content="x", colour="red")
    assert raised.value.field == "colour"


def test_tool_call_needs_a_name() -> None:
    with pytest.raises(InvalidInputError) as raised:
        ToolCall(name="")
    assert raised.value.field == "name"


def test_messages_are_frozen() -> None:
    message = Message.user("hi")
    with pytest.raises(FrozenInstanceError):
        message.content = "changed"  # type: ignore[misc]
    with pytest.raises(FrozenInstanceError):
        message.extra = "added"  # type: ignore[attr-defined]
    with pytest.raises(FrozenInstanceError):
        del message.content  # type: ignore[misc]
    with pytest.raises(FrozenInstanceError):
        message.__dict__ = {}  # type: ignore[misc]
    assert message.content == "hi"


def test_message_type_is_derived() -> None:
    call = ToolCall(name="add", arguments={"a": 1})
    result = ToolResult(content="1", call_id=call.id, tool_name="add")
    assert Message.assistant("", [call]).type() == "assistant_tool_calls"
    assert Message.tool(result).type() == "tool_result"
    assert Message.assistant("hello").type() == "text"


def test_with_metadata_keeps_id_and_time() -> None:
    message = Message.user("hi")
    tagged = message.with_metadata(step_id="s1", is_trace=True)
    assert (tagged.id, tagged.created_at) == (message.id, message.created_at)
    assert tagged.metadata == {"step_id": "s1", "is_trace": True}
    assert message.metadata == {}
    assert tagged.is_trace
    assert not message.is_trace


def test_is_trace_requires_literal_true() -> None:
    assert not Message.user("x").with_metadata(is_trace="yes").is_trace
    assert Message.user("x").with_metadata(is_trace=True, execution_id="e1").execution_id == "e1"


def test_message_is_empty_only_without_content_metadata_calls_or_result() -> None:
    assert Message(role=Role.USER).is_empty()
    assert not Message(role=Role.USER).with_metadata(a=1).is_empty()
    assert not Message.assistant("", [ToolCall(name="x")]).is_empty()


THINKING = {"anthropic_thinking": [{"type": "thinking", "thinking": "t", "signature": "s"}]}


def test_provider_data_is_absent_from_the_serialized_form_when_empty() -> None:
    message = Message.user("hi")
    assert message.provider_data == {}
    assert "provider_data" not in message.to_dict()
    assert "provider_data" not in message.model_dump()
    assert '"provider_data"' not in message.to_json()


@pytest.mark.parametrize("provider_data", [{}, THINKING], ids=["empty", "thinking"])
def test_provider_data_round_trips_through_dict_and_json(provider_data: dict[str, object]) -> None:
    message = Message.assistant("a", [ToolCall(id="c1", name="f")]).evolve(
        provider_data=provider_data
    )
    assert Message.from_dict(message.to_dict()) == message
    assert Message.from_json(message.to_json()) == message
    assert Message.from_json(message.to_json()).provider_data == provider_data
    assert message.with_metadata(step_id="s1").provider_data == provider_data


def test_provider_data_comes_after_metadata_in_a_dump() -> None:
    dumped = Message.assistant("a").evolve(provider_data=THINKING).to_dict()
    keys = list(dumped)
    assert keys.index("provider_data") == keys.index("metadata") + 1
    assert dumped["provider_data"] == THINKING


def test_a_dump_written_before_provider_data_existed_loads() -> None:
    old = {
        "schema_version": 1,
        "role": "assistant",
        "content": "a",
        "name": "",
        "tool_calls": [],
        "tool_result": None,
        "metadata": {},
        "id": "m1",
        "created_at": "2026-01-01T00:00:00Z",
    }
    message = Message.from_dict(old)
    assert message.provider_data == {}
    assert message.to_dict() == old


def test_provider_data_must_be_json() -> None:
    with pytest.raises(InvalidInputError) as raised:
        Message(role=Role.ASSISTANT, provider_data={"x": object()})
    assert raised.value.field == "provider_data"


def test_ids_come_from_the_runtime_context() -> None:
    with runtime_context(ids=SeededIds(3)):
        first = Message.user("a").id
    with runtime_context(ids=SeededIds(3)):
        again = Message.user("a").id
    assert first == again


def test_tool_call_str_reads_like_a_call() -> None:
    assert str(ToolCall(name="add", arguments={"a": 1, "b": "x"})) == "add(a=1, b='x')"


class TestMessages:
    def test_appended_returns_a_new_list(self) -> None:
        empty = Messages()
        one = empty.appended(Message.user("a"))
        assert len(empty) == 0
        assert len(one) == 1
        assert one.appended() is one

    def test_concat_keeps_order(self) -> None:
        a, b, c = Message.user("a"), Message.assistant("b"), Message.user("c")
        joined = Messages.concat(Messages.of(a), Messages(), Messages.of(b, c))
        assert joined.to_tuple() == (a, b, c)

    def test_concat_tracks_trace_executions(self) -> None:
        trace = Message.assistant("t").with_metadata(is_trace=True, execution_id="e1")
        joined = Messages.concat(Messages.of(Message.user("u")), Messages.of(trace))
        assert joined.trace_executions == frozenset({"e1"})
        assert joined.has_traces()
        assert not Messages.of(Message.user("u")).has_traces()

    def test_filtered_and_roles(self) -> None:
        messages = Messages.of(Message.user("u"), Message.assistant("a"), Message.user("v"))
        assert messages.for_roles("user").to_text() == "u\nv"
        assert messages.roles() == (Role.USER, Role.ASSISTANT, Role.USER)
        assert messages.filtered(lambda m: m.content == "a").to_text() == "a"

    def test_to_text_skips_empty_contents(self) -> None:
        messages = Messages.of(Message.user("a"), Message(role=Role.ASSISTANT), Message.user("b"))
        assert messages.to_text() == "a\nb"
        assert str(messages) == "a\nb"

    def test_is_empty_when_all_messages_are_empty(self) -> None:
        assert Messages().is_empty()
        assert Messages.of(Message(role=Role.USER)).is_empty()
        assert not Messages.from_text("x").is_empty()

    def test_first_last_and_slicing(self) -> None:
        messages = Messages.of(Message.user("a"), Message.user("b"), Message.user("c"))
        assert messages.first() is not None
        assert messages.first().content == "a"
        assert messages.last() is not None
        assert messages.last().content == "c"
        assert isinstance(messages[1:], Messages)
        assert messages[1:].to_text() == "b\nc"
        assert Messages().first() is None

    def test_equality_follows_items(self) -> None:
        message = Message.user("a")
        assert Messages.of(message) == Messages.of(message)
        assert Messages.of(message) != Messages()

    def test_to_list_is_json_compatible(self) -> None:
        listed = Messages.from_text("hi").to_list()
        assert listed[0]["role"] == "user"
        assert listed[0]["content"] == "hi"
        assert isinstance(listed[0]["created_at"], str)


# Long lists: ``Messages`` keeps its messages in shared chunks (of 32); these tests check through
# the public API that the chunking never shows: lengths around and across chunk boundaries.
POOL = tuple(
    Message.user(f"m{index}")
    if index % 3
    else Message.assistant(f"t{index}").with_metadata(is_trace=True, execution_id=f"e{index % 2}")
    for index in range(300)
)
SIZES = (0, 1, 2, 31, 32, 33, 63, 64, 65, 100, 300)


def built_by_appends(count: int, step: int = 2) -> Messages:
    messages = Messages()
    for start in range(0, count, step):
        messages = messages.appended(*POOL[start : min(start + step, count)])
    return messages


def expected_traces(messages: tuple[Message, ...] | list[Message]) -> frozenset[str | None]:
    return frozenset(message.execution_id for message in messages if message.is_trace)


def assert_same_as(messages: Messages, flat: tuple[Message, ...] | list[Message]) -> None:
    flat = tuple(flat)
    assert messages.to_tuple() == flat
    assert tuple(messages) == flat
    assert len(messages) == len(flat)
    assert bool(messages) == bool(flat)
    assert messages == Messages(flat)
    assert messages.first() == (flat[0] if flat else None)
    assert messages.last() == (flat[-1] if flat else None)
    assert messages.trace_executions == expected_traces(flat)
    assert messages.roles() == tuple(message.role for message in flat)


class TestLongMessages:
    @pytest.mark.parametrize("step", [1, 2, 3, 31, 32, 33, 70])
    def test_appends_keep_order_and_equal_the_flat_list(self, step: int) -> None:
        for count in SIZES:
            assert_same_as(built_by_appends(count, step), POOL[:count])

    def test_concat_of_long_lists_keeps_order(self) -> None:
        for left in SIZES:
            for right in SIZES:
                first = built_by_appends(left, 3)
                tail = POOL[-right:] if right else ()
                assert_same_as(Messages.concat(first, Messages(tail)), POOL[:left] + tail)
                # a short head before many chunks: it meets the end of ``first`` in one chunk
                second = Messages.concat(Messages(POOL[:2]), Messages(tail))
                assert_same_as(Messages.concat(first, second), POOL[:left] + POOL[:2] + tail)

    def test_concat_of_many_parts_and_of_concatenations(self) -> None:
        parts = [Messages(POOL[start : start + 17]) for start in range(0, 300, 17)]
        joined = Messages.concat(*parts)
        assert_same_as(joined, POOL)
        nested = Messages.concat(
            Messages.concat(*parts[:5]), Messages(), Messages.concat(*parts[5:])
        )
        assert_same_as(nested, POOL)
        assert nested == joined

    def test_equality_does_not_depend_on_how_a_list_was_built(self) -> None:
        by_appends = built_by_appends(200, 7)
        by_concat = Messages.concat(Messages(POOL[:5]), Messages(POOL[5:200]))
        assert by_appends == by_concat == Messages(POOL[:200])
        assert by_appends != Messages(POOL[:199])
        assert by_appends != Messages((*POOL[:199], POOL[250]))
        assert by_appends != by_appends.appended(POOL[0])

    def test_indexing_across_chunk_boundaries(self) -> None:
        messages = Messages.concat(built_by_appends(70, 3), Messages(POOL[70:150]))
        flat = POOL[:150]
        for index in range(-150, 150):
            assert messages[index] is flat[index]
        for bad in (150, 1000, -151):
            with pytest.raises(IndexError):
                messages[bad]

    def test_slicing_across_chunk_boundaries(self) -> None:
        messages = built_by_appends(150, 5)
        flat = POOL[:150]
        for part in (
            slice(30, 70),
            slice(None, 33),
            slice(-40, None),
            slice(None, None, 7),
            slice(100, 20, -3),
            slice(200, 300),
        ):
            sliced = messages[part]
            assert isinstance(sliced, Messages)
            assert_same_as(sliced, flat[part])

    def test_filtered_extended_and_text_of_long_lists(self) -> None:
        messages = built_by_appends(200)
        flat = POOL[:200]
        assert_same_as(messages.for_roles(Role.USER), [m for m in flat if m.role is Role.USER])
        assert_same_as(messages.filtered(lambda m: m.is_trace), [m for m in flat if m.is_trace])
        assert_same_as(messages.extended(POOL[200:]), POOL)
        assert messages.to_text() == "\n".join(m.content for m in flat)
        assert messages.to_list() == [m.model_dump(mode="json") for m in flat]
        assert repr(messages) == f"Messages({list(flat)!r})"

    def test_retained_versions_share_storage(self) -> None:
        """Keeping every appended version of a long list (as every step keeps its input) costs
        far less than a copy of the list per version."""
        buffer = Messages(POOL * 7)  # 2100 messages
        head = Messages.of(POOL[0])
        versions = 200
        extra = [(POOL[index], POOL[index + 1]) for index in range(versions)]
        kept: list[Messages] = []
        started = not tracemalloc.is_tracing()
        if started:
            tracemalloc.start()
        try:
            before = tracemalloc.get_traced_memory()[0]
            for pair in extra:  # like a step: the buffer grows, the input joins it to the head
                buffer = buffer.appended(*pair)
                kept += (buffer, Messages.concat(head, buffer))
            grown = tracemalloc.get_traced_memory()[0] - before
        finally:
            if started:
                tracemalloc.stop()
        flat_copies = len(kept) * 2100 * 8  # at least one pointer per message per kept list
        assert grown < flat_copies / 8, (grown, flat_copies)
        assert kept[-1].to_tuple() == (POOL[0], *POOL * 7, *(m for pair in extra for m in pair))
        assert kept[-2] == kept[-1][1:]


# A model-based property: any sequence of operations gives the same messages as a plain list.
_operation = st.one_of(
    st.tuples(st.just("append"), st.integers(0, 299), st.integers(0, 40)),
    st.tuples(st.just("concat_new"), st.integers(0, 299), st.integers(0, 80)),
    st.tuples(st.just("prepend"), st.integers(0, 299), st.integers(0, 40)),
    st.tuples(st.just("concat_kept"), st.integers(0, 50), st.booleans()),
    st.tuples(st.just("filter"), st.integers(2, 5), st.integers(0, 4)),
    st.tuples(st.just("slice"), st.integers(-100, 100), st.integers(-100, 100)),
)


def with_id_in(ids: set[str]) -> Callable[[Message], bool]:
    return lambda message: message.id in ids


@settings(max_examples=60, deadline=None)
@given(st.lists(_operation, max_size=25))
def test_any_sequence_of_operations_matches_a_plain_list(
    operations: list[tuple[str, int, int | bool]],
) -> None:
    messages, model = Messages(), []
    kept: list[tuple[Messages, list[Message]]] = [(messages, model)]
    for name, first, second in operations:
        if name == "append":
            added = list(POOL[first : first + int(second)])
            messages, model = messages.appended(*added), model + added
        elif name == "concat_new":
            other = list(POOL[first : first + int(second)])
            messages, model = Messages.concat(messages, Messages(other)), model + other
        elif name == "prepend":
            other = list(POOL[first : first + int(second)])
            messages, model = Messages.concat(Messages(other), messages), other + model
        elif name == "concat_kept":  # with an earlier version, on either side
            old, old_model = kept[first % len(kept)]
            if second:
                messages, model = Messages.concat(old, messages), old_model + model
            else:
                messages, model = Messages.concat(messages, old), model + old_model
        elif name == "filter":
            divisor, remainder = first, int(second) % first
            keep = {m.id for i, m in enumerate(POOL) if i % divisor != remainder}
            messages = messages.filtered(with_id_in(keep))
            model = [m for m in model if m.id in keep]
        else:
            messages, model = messages[first : int(second)], model[first : int(second)]
        kept.append((messages, model))
    for version, version_model in kept:
        assert_same_as(version, version_model)


def test_fields_are_keyword_arguments() -> None:
    with pytest.raises(TypeError, match=r"Message\(\) takes its fields as keyword arguments"):
        Message(Role.USER)  # type: ignore[misc]

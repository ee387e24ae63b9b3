"""Messages: roles, tool calls, metadata, and the immutable ``Messages`` list."""

from __future__ import annotations

import pytest

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
    with pytest.raises(Exception, match="frozen"):
        message.content = "changed"  # type: ignore[misc]


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

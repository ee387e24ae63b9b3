"""``MessageStore``: named sections with an immutable section API."""

from __future__ import annotations

import pytest

from agentrig import (
    AgentState,
    ExecutionStatus,
    InvalidInputError,
    Message,
    Messages,
    MessageStore,
    Section,
)


def store_with(**sections: list[str]) -> MessageStore:
    store = MessageStore()
    for name, texts in sections.items():
        store = store.section(name).append(Messages(Message.user(text) for text in texts))
    return store


def test_append_creates_the_section_at_the_end() -> None:
    store = store_with(messages=["a"]).section("summary").append(Message.user("s"))
    assert store.section_names() == ("messages", "summary")


def test_append_nothing_returns_the_same_store() -> None:
    store = store_with(messages=["a"])
    assert store.section("messages").append([]) is store
    assert store.section("missing").append(Messages()) is store


def test_operations_never_mutate_the_original() -> None:
    original = store_with(messages=["a"])
    original.section("messages").append(Message.user("b"))
    original.section("messages").clear()
    original.section("messages").remove()
    assert original.messages_of("messages").to_text() == "a"


def test_set_replaces_messages() -> None:
    store = store_with(messages=["a", "b"]).section("messages").set([Message.user("c")])
    assert store.messages_of("messages").to_text() == "c"


def test_clear_keeps_an_existing_section_and_ignores_missing_ones() -> None:
    store = store_with(messages=["a"], execution_buffer=["t"])
    cleared = store.section("execution_buffer").clear()
    assert cleared.section_names() == ("messages", "execution_buffer")
    assert cleared.section("execution_buffer").is_empty()
    assert store.section("nope").clear() is store


def test_remove_drops_the_section() -> None:
    store = store_with(messages=["a"], buffer=["b"]).section("buffer").remove()
    assert store.section_names() == ("messages",)
    assert not store.section("buffer").exists()


def test_section_ref_reads() -> None:
    store = store_with(messages=["a"])
    ref = store.section("messages")
    assert ref.name == "messages"
    assert ref.exists()
    assert not ref.is_empty()
    assert ref.get() == Section(name="messages", messages=ref.messages())
    assert store.section("other").get().messages == Messages()


def test_select_joins_in_the_given_order_and_skips_missing() -> None:
    store = store_with(messages=["m"], summary=["s"], buffer=["b"])
    assert store.select(["summary", "nope", "buffer", "messages"]).to_text() == "s\nb\nm"


def test_to_messages_uses_store_order() -> None:
    store = store_with(messages=["m"], summary=["s"])
    assert store.to_messages().to_text() == "m\ns"


def test_parameters() -> None:
    store = MessageStore().with_parameter("k", [1, 2])
    assert store.parameters == {"k": [1, 2]}


def test_duplicate_section_names_are_rejected() -> None:
    section = Section(name="messages")
    with pytest.raises(InvalidInputError) as raised:
        MessageStore(sections=(section, section))
    assert raised.value.field == "sections"
    assert "duplicate" in str(raised.value)


def test_section_name_must_not_be_empty() -> None:
    with pytest.raises(InvalidInputError) as raised:
        Section(name="")
    assert raised.value.field == "name"


def test_round_trip() -> None:
    store = store_with(messages=["a", "b"], summary=["s"]).with_parameter("k", {"x": 1})
    assert MessageStore.from_dict(store.to_dict()) == store
    assert MessageStore.from_json(store.to_json()) == store


def long_store(steps: int = 150) -> MessageStore:
    """A store grown as the loop grows it: the conversation, then two buffer messages a step."""
    store = store_with(messages=["question"])
    for step in range(steps):
        buffer = store.section("execution_buffer")
        if step % 3 == 0:
            store = buffer.append(
                Messages.of(Message.assistant(f"a{step}"), Message.user(f"r{step}"))
            )
        elif step % 3 == 1:
            store = buffer.append(Message.assistant(f"a{step}")).section("execution_buffer")
            store = store.append(Message.user(f"r{step}"))
        else:
            store = buffer.append([Message.assistant(f"a{step}"), Message.user(f"r{step}")])
    return store


def test_long_sections_keep_every_message_in_order() -> None:
    store = long_store()
    expected = [text for step in range(150) for text in (f"a{step}", f"r{step}")]
    assert [m.content for m in store.messages_of("execution_buffer")] == expected
    joined = store.select(["messages", "execution_buffer"])
    assert [m.content for m in joined] == ["question", *expected]
    assert joined == store.to_messages()
    assert joined[1:] == store.messages_of("execution_buffer")


def test_round_trip_of_a_long_section() -> None:
    store = long_store()
    assert MessageStore.from_dict(store.to_dict()) == store
    assert MessageStore.from_json(store.to_json()) == store


def test_round_trip_of_a_state_with_a_long_execution_buffer() -> None:
    state = AgentState().with_execution_status(ExecutionStatus.IN_PROGRESS)
    state = state.with_message_store(long_store())
    restored = AgentState.from_dict(state.to_dict())
    assert restored == state
    assert restored.store().messages_of("execution_buffer").to_tuple() == (
        state.store().messages_of("execution_buffer").to_tuple()
    )
    assert restored.messages_for_inference() == state.messages_for_inference()


@pytest.mark.parametrize(
    ("name", "got"), [("", "''"), (None, "NoneType"), (3, "int"), (b"messages", "bytes")]
)
def test_a_section_name_must_be_non_empty_text(name: object, got: str) -> None:
    with pytest.raises(InvalidInputError) as raised:
        MessageStore().section(name)  # type: ignore[arg-type]
    assert raised.value.field == "name"
    assert str(raised.value) == (
        "invalid section name: name: expected a non-empty section name (text) such as "
        f"'messages', got {got}"
    )


@pytest.mark.parametrize(
    ("added", "field"),
    [
        ("hello", "messages"),
        (None, "messages"),
        (["hello"], "messages[0]"),
        ([Message.user("a"), {"role": "user", "content": "b"}], "messages[1]"),
    ],
)
def test_append_and_set_refuse_what_is_not_a_message(added: object, field: str) -> None:
    ref = store_with(messages=["a"]).section("messages")
    for operation in (ref.append, ref.set):
        with pytest.raises(InvalidInputError) as raised:
            operation(added)  # type: ignore[arg-type]
        assert raised.value.field == field
        assert str(raised.value).startswith(f"invalid section messages: {field}: expected a ")
        assert "Message.user(" in str(raised.value)


@pytest.mark.parametrize(("added", "got"), [("hello", "str"), (None, "NoneType"), ([3], "int")])
def test_a_refused_message_names_what_it_got(added: object, got: str) -> None:
    with pytest.raises(InvalidInputError, match=f"an iterable of them, got {got}: make one"):
        MessageStore().section("messages").append(added)  # type: ignore[arg-type]


def test_set_keeps_the_messages_it_is_given() -> None:
    messages = Messages.of(Message.user("a"))
    assert MessageStore().section("messages").set(messages).messages_of("messages") is messages


def test_set_accepts_any_iterable_of_messages() -> None:
    messages = (Message.user(text) for text in "ab")
    store = MessageStore().section("messages").set(messages)
    assert store.messages_of("messages").to_text() == "a\nb"


def test_select_takes_one_name_as_text() -> None:
    store = store_with(messages=["m"], summary=["s"])
    assert store.select("summary").to_text() == "s"


@pytest.mark.parametrize(
    ("names", "field", "got"),
    [(None, "names", "NoneType"), (3, "names", "int"), ([["m"]], "names[0]", "list")],
)
def test_select_refuses_what_is_not_section_names(names: object, field: str, got: str) -> None:
    with pytest.raises(InvalidInputError) as raised:
        store_with(messages=["m"]).select(names)  # type: ignore[arg-type]
    assert raised.value.field == field
    assert str(raised.value).endswith(f"got {got}")
    assert str(raised.value).startswith("invalid MessageStore.select() argument: names")


def test_unicode_section_names_round_trip() -> None:
    store = MessageStore().section("日本 🎉").append(Message.user("é\u2028x"))
    assert MessageStore.from_json(store.to_json()) == store


def three_sections() -> MessageStore:
    return store_with(summary=["s"], messages=["m1", "m2"], buffer=["b"])


def contents(store: MessageStore) -> dict[str, list[str]]:
    return {name: [m.content for m in store.messages_of(name)] for name in store.section_names()}


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        (lambda ref: ref.set([Message.user("x")]), ["x"]),
        (lambda ref: ref.set(Messages.of(Message.user("x"))), ["x"]),
        (lambda ref: ref.clear(), []),
        (lambda ref: ref.append([Message.user("x")]), ["m1", "m2", "x"]),
        (lambda ref: ref.append(Message.user("x")), ["m1", "m2", "x"]),
        (lambda ref: ref.append(Messages.of(Message.user("x"))), ["m1", "m2", "x"]),
    ],
    ids=["set-list", "set-messages", "clear", "append-list", "append-one", "append-messages"],
)
def test_changing_a_middle_section_leaves_its_neighbours_alone(change, expected) -> None:
    changed = change(three_sections().section("messages"))
    assert contents(changed) == {"summary": ["s"], "messages": expected, "buffer": ["b"]}


@pytest.mark.parametrize("name", ["summary", "messages", "buffer"])
def test_changing_any_section_keeps_the_store_order(name: str) -> None:
    store = three_sections()
    for changed in (
        store.section(name).set([Message.user("x")]),
        store.section(name).append([Message.user("x")]),
        store.section(name).append(Messages.of(Message.user("x"))),
        store.section(name).clear(),
    ):
        assert changed.section_names() == ("summary", "messages", "buffer")
        others = {key: value for key, value in contents(changed).items() if key != name}
        assert others == {key: value for key, value in contents(store).items() if key != name}


def test_removing_a_middle_section_keeps_the_others_in_order() -> None:
    store = three_sections().section("messages").remove()
    assert contents(store) == {"summary": ["s"], "buffer": ["b"]}


def test_removing_or_clearing_what_is_not_there_returns_the_same_store() -> None:
    store = store_with(messages=["m"]).section("buffer").set([])
    assert store.section_names() == ("messages", "buffer")
    assert store.section("nope").remove() is store
    assert store.section("buffer").clear() is store


def test_set_creates_a_missing_section_at_the_end() -> None:
    store = three_sections().section("notes").set([Message.user("n")])
    assert store.section_names() == ("summary", "messages", "buffer", "notes")
    assert contents(store)["notes"] == ["n"]


def test_select_takes_a_generator_of_names() -> None:
    store = three_sections()
    names = (name for name in ["buffer", "summary"])
    assert [m.content for m in store.select(names)] == ["b", "s"]


def test_select_of_no_names_is_empty() -> None:
    assert three_sections().select([]) == Messages()

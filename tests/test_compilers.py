"""Context compilers: what the model sees before each call."""

from __future__ import annotations

import pytest

from agentrig import (
    AgentBuilder,
    AgentState,
    AllSections,
    ConfigurationError,
    ContextCompiler,
    ConversationWithCurrentToolTrace,
    ExecutionStatus,
    InvalidInputError,
    Message,
    Messages,
    Role,
    SelectedSections,
    TokenBudgetCompiler,
    ToolCall,
    ToolResult,
    UseLlmConfig,
    compiler_names,
    compilers,
    get_compiler,
    register_compiler,
)
from agentrig.compilers import estimate_tokens
from agentrig.fakes import ScriptedLLM, reply


def trace(text: str, execution_id: str) -> Message:
    return Message.assistant(text).with_metadata(is_trace=True, execution_id=execution_id)


def state_with(*messages: Message, section: str = "messages") -> AgentState:
    state = AgentState()
    return state.with_message_store(state.store().section(section).append(messages))


def running(state: AgentState) -> AgentState:
    return state.with_execution_status(ExecutionStatus.IN_PROGRESS)


def texts(messages: Messages) -> list[str]:
    return [m.content for m in messages]


class TestConversationWithCurrentToolTrace:
    def test_sections_come_in_inference_order_whatever_the_store_order(self) -> None:
        state = state_with(Message.user("m"))  # "messages" exists before the others
        store = state.store()
        store = store.section("execution_buffer").append(Message.assistant("e"))
        store = store.section("buffer").append(Message.assistant("b"))
        store = store.section("summary").append(Message.assistant("s"))
        state = running(state.with_message_store(store))
        assert state.store().section_names()[0] == "messages"
        assert texts(ConversationWithCurrentToolTrace().compile(state)) == ["s", "b", "m", "e"]

    def test_no_sections_at_all_are_refused(self) -> None:
        with pytest.raises(InvalidInputError, match="name at least one section") as raised:
            ConversationWithCurrentToolTrace([])
        assert raised.value.field == "sections"
        assert str(raised.value).startswith("invalid ConversationWithCurrentToolTrace: sections:")

    def test_hides_traces_of_other_executions(self) -> None:
        state = running(state_with(Message.user("q"), trace("old", "e-old"), Message.user("q2")))
        current = state.execution_id()
        assert current is not None
        state = state.with_message_store(
            state.store().section("messages").append(trace("mine", current))
        )
        compiled = ConversationWithCurrentToolTrace().compile(state)
        assert texts(compiled) == ["q", "q2", "mine"]

    def test_without_an_execution_every_trace_is_hidden(self) -> None:
        state = state_with(Message.user("q"), trace("old", "e1"), Message.assistant("a"))
        assert texts(ConversationWithCurrentToolTrace().compile(state)) == ["q", "a"]

    def test_returns_sections_in_inference_order_without_copying(self) -> None:
        state = state_with(Message.user("m"))
        state = state.with_message_store(
            state.store().section("summary").append(Message.system("s"))
        )
        compiled = ConversationWithCurrentToolTrace().compile(state)
        assert texts(compiled) == ["s", "m"]

    def test_nothing_is_deleted_from_the_store(self) -> None:
        state = state_with(trace("old", "e1"))
        ConversationWithCurrentToolTrace().compile(state)
        assert len(state.messages()) == 1

    def test_custom_sections(self) -> None:
        state = state_with(Message.user("m"))
        state = state.with_message_store(state.store().section("notes").append(Message.user("n")))
        compiled = ConversationWithCurrentToolTrace(["notes", "messages"]).compile(state)
        assert texts(compiled) == ["n", "m"]

    def test_a_long_execution_buffer_follows_the_conversation_in_order(self) -> None:
        state = running(state_with(Message.user("q"), trace("old", "e-old")))
        current = state.execution_id()
        assert current is not None
        inputs = []
        for step in range(120):  # as the loop does: two trace messages per step
            buffer = state.store().section("execution_buffer")
            pair = Messages.of(trace(f"call{step}", current), trace(f"result{step}", current))
            state = state.with_message_store(buffer.append(pair))
            inputs.append(ConversationWithCurrentToolTrace().compile(state))
        buffered = [text for step in range(120) for text in (f"call{step}", f"result{step}")]
        assert texts(inputs[-1]) == ["q", *buffered]
        assert texts(inputs[40]) == ["q", *buffered[:82]]
        assert inputs[-1][1:] == state.store().messages_of("execution_buffer")


class TestSelectedAndAllSections:
    def state(self) -> AgentState:
        state = state_with(Message.user("m"), trace("t", "e1"))
        store = state.store().section("summary").append(Message.system("s"))
        return state.with_message_store(store)

    def test_selected_sections_in_the_given_order_unfiltered(self) -> None:
        compiled = SelectedSections(["messages", "missing", "summary"]).compile(self.state())
        assert texts(compiled) == ["m", "t", "s"]

    def test_no_names_means_the_messages_section(self) -> None:
        assert texts(SelectedSections().compile(self.state())) == ["m", "t"]

    def test_all_sections_in_store_order(self) -> None:
        assert texts(AllSections().compile(self.state())) == ["m", "t", "s"]


class TestTokenBudgetCompiler:
    @staticmethod
    def one_token_each(message: Message) -> int:
        return 1

    def test_keeps_the_most_recent_messages_and_the_first_user_message(self) -> None:
        state = state_with(*(Message.user(str(n)) for n in range(6)))
        compiled = TokenBudgetCompiler(AllSections(), 3, self.one_token_each).compile(state)
        assert texts(compiled) == ["0", "4", "5"]

    def test_everything_fits(self) -> None:
        state = state_with(Message.user("a"), Message.assistant("b"))
        compiled = TokenBudgetCompiler(AllSections(), 10, self.one_token_each).compile(state)
        assert texts(compiled) == ["a", "b"]

    def test_never_keeps_a_tool_result_without_its_call(self) -> None:
        call = ToolCall(name="f")
        result = Message.tool(ToolResult(content="r", call_id=call.id, tool_name="f"))
        state = state_with(
            Message.user("q"), Message.assistant("", [call]), result, Message.assistant("a")
        )
        compiled = TokenBudgetCompiler(AllSections(), 3, self.one_token_each).compile(state)
        assert texts(compiled) == ["q", "a"]

    def test_rejects_a_budget_below_one(self) -> None:
        with pytest.raises(ConfigurationError, match="max_tokens"):
            TokenBudgetCompiler(AllSections(), 0)

    @staticmethod
    def by_length(message: Message) -> int:
        return len(message.content)

    def test_without_a_user_message_the_most_recent_messages_are_kept(self) -> None:
        state = state_with(*(Message.assistant(str(n)) for n in range(4)))
        compiled = TokenBudgetCompiler(AllSections(), 2, self.one_token_each).compile(state)
        assert texts(compiled) == ["2", "3"]
        compiled = TokenBudgetCompiler(AllSections(), 4, self.one_token_each).compile(state)
        assert texts(compiled) == ["0", "1", "2", "3"]

    def test_a_single_message_that_does_not_fit_is_kept(self) -> None:
        state = state_with(Message.assistant("too long"))
        compiled = TokenBudgetCompiler(AllSections(), 1, self.by_length).compile(state)
        assert texts(compiled) == ["too long"]

    def test_a_call_first_in_the_conversation_is_kept_with_its_newest_result(self) -> None:
        call = ToolCall(name="f")
        result = Message.tool(ToolResult(content="a long result", call_id=call.id, tool_name="f"))
        state = state_with(Message.assistant("", [call]), result)
        compiled = TokenBudgetCompiler(AllSections(), 1, self.by_length).compile(state)
        assert [m.role.value for m in compiled] == ["assistant", "tool"]

    def test_the_window_starts_after_results_whose_call_did_not_fit(self) -> None:
        call = ToolCall(name="f")
        result = Message.tool(ToolResult(content="r", call_id=call.id, tool_name="f"))
        state = state_with(Message.user("q"), Message.assistant("", [call]))
        state = state.with_message_store(
            state.store().section("messages").append([result, Message.assistant("a")])
        )
        state = state.with_message_store(
            state.store().section("messages").append(Message.assistant("b"))
        )
        compiled = TokenBudgetCompiler(AllSections(), 4, self.one_token_each).compile(state)
        assert texts(compiled) == ["q", "a", "b"]

    def test_the_newest_message_is_kept_even_when_it_does_not_fit(self) -> None:
        state = state_with(Message.assistant("old"), Message.assistant("newest"))
        compiled = TokenBudgetCompiler(AllSections(), 1, self.by_length).compile(state)
        assert texts(compiled) == ["newest"]

    def test_a_budget_of_one_token_keeps_the_first_user_message_and_the_newest(self) -> None:
        state = state_with(Message.user("q"), Message.assistant("a"), Message.assistant("b"))
        compiled = TokenBudgetCompiler(AllSections(), 1, self.one_token_each).compile(state)
        assert texts(compiled) == ["q", "b"]

    def test_the_first_user_message_is_kept_even_when_it_alone_exceeds_the_budget(self) -> None:
        state = state_with(Message.user("a long question"))
        compiled = TokenBudgetCompiler(AllSections(), 1, self.by_length).compile(state)
        assert texts(compiled) == ["a long question"]

    def test_a_newest_tool_result_that_does_not_fit_is_kept_with_its_call(self) -> None:
        call = ToolCall(name="f")
        result = Message.tool(ToolResult(content="a long result", call_id=call.id, tool_name="f"))
        state = state_with(Message.user("q"), Message.assistant("x"), Message.assistant("", [call]))
        state = state.with_message_store(state.store().section("messages").append(result))
        compiled = TokenBudgetCompiler(AllSections(), 3, self.by_length).compile(state)
        assert [m.role.value for m in compiled] == ["user", "assistant", "tool"]
        assert compiled[1].tool_calls == (call,)

    def test_a_leading_system_message_that_fits_is_kept(self) -> None:
        state = state_with(
            Message.system("s"), Message.user("q"), Message.assistant("a"), Message.assistant("b")
        )
        compiled = TokenBudgetCompiler(AllSections(), 3, self.one_token_each).compile(state)
        assert texts(compiled) == ["s", "q", "b"]

    def test_leading_instructions_come_after_the_first_user_message(self) -> None:
        state = state_with(
            Message.system("rules"),
            Message(role=Role.DEVELOPER, content="more"),
            Message.user("q"),
            Message.assistant("answer"),
            Message.assistant("ok"),
        )

        def kept(max_tokens: int) -> list[str]:
            return texts(
                TokenBudgetCompiler(AllSections(), max_tokens, self.by_length).compile(state)
            )

        assert kept(12) == ["rules", "more", "q", "ok"]  # "answer" no longer fits
        assert kept(6) == ["rules", "q", "ok"]  # "rules" fits exactly, then nothing else does
        assert kept(8) == ["rules", "q", "ok"]  # "more" does not fit, nor what follows it
        assert kept(3) == ["q", "ok"]  # the instructions do not fit: dropped

    def test_a_system_message_that_is_not_leading_is_an_ordinary_message(self) -> None:
        state = state_with(Message.user("q"), Message.system("s"), Message.assistant("a"))
        compiled = TokenBudgetCompiler(AllSections(), 2, self.one_token_each).compile(state)
        assert texts(compiled) == ["q", "a"]

    def test_results_with_no_call_before_them_are_kept_when_newest(self) -> None:
        results = [
            Message.tool(ToolResult(content=text, call_id=text, tool_name="f"))
            for text in ("first result", "second result")
        ]
        compiled = TokenBudgetCompiler(AllSections(), 1, self.by_length).compile(
            state_with(*results)
        )
        assert texts(compiled) == ["first result", "second result"]

    def test_the_window_reaches_past_the_first_user_message_without_charging_it_again(
        self,
    ) -> None:
        state = state_with(Message.assistant("before"), Message.user("q"), Message.assistant("a"))
        compiled = TokenBudgetCompiler(AllSections(), 3, self.one_token_each).compile(state)
        assert texts(compiled) == ["before", "q", "a"]

    def test_the_first_user_message_is_charged_once(self) -> None:
        state = state_with(Message.system("s"), Message.user("q"), Message.assistant("a"))
        compiled = TokenBudgetCompiler(AllSections(), 3, self.one_token_each).compile(state)
        assert texts(compiled) == ["s", "q", "a"]

    def test_each_message_is_charged_its_own_size(self) -> None:
        sizes = ["q", "aaaa", "b", "cc"]
        state = state_with(Message.user(sizes[0]), *(Message.assistant(t) for t in sizes[1:]))
        compiler = TokenBudgetCompiler(AllSections(), 4, self.by_length)
        assert texts(compiler.compile(state)) == ["q", "b", "cc"]
        compiler = TokenBudgetCompiler(AllSections(), 3, self.by_length)
        assert texts(compiler.compile(state)) == ["q", "cc"]
        compiler = TokenBudgetCompiler(AllSections(), 8, self.by_length)
        assert texts(compiler.compile(state)) == sizes

    def test_the_window_has_no_gaps(self) -> None:
        state = state_with(
            Message.user("q"), Message.assistant("b"), Message.assistant("long"), Message.user("c")
        )
        compiled = TokenBudgetCompiler(AllSections(), 4, self.by_length).compile(state)
        assert texts(compiled) == ["q", "c"]  # "b" would fit, but not without "long"

    def test_the_estimator_runs_once_per_message(self) -> None:
        seen: list[str] = []

        def counting(message: Message) -> int:
            seen.append(message.content)
            return 2

        state = state_with(
            Message.system("s"), Message.user("q"), *(Message.assistant(str(n)) for n in range(4))
        )
        compiled = TokenBudgetCompiler(AllSections(), 6, counting).compile(state)
        assert texts(compiled) == ["s", "q", "3"]
        assert sorted(seen) == sorted(["s", "q", "3", "2"])  # "2" is where the window ends

    def test_an_estimate_of_zero_keeps_everything_as_it_was(self) -> None:
        inner = Messages.of(Message.system("s"), Message.user("q"), Message.assistant("a"))

        class Fixed:
            def compile(self, state: AgentState) -> Messages:
                return inner

        compiled = TokenBudgetCompiler(Fixed(), 1, lambda message: 0).compile(AgentState())
        assert compiled is inner  # kept whole: returned as it came

    def test_nothing_to_compile(self) -> None:
        compiled = TokenBudgetCompiler(AllSections(), 1, self.one_token_each).compile(AgentState())
        assert compiled == Messages()

    def test_the_default_estimator(self) -> None:
        compiler = TokenBudgetCompiler(AllSections(), 6)
        assert compiler.estimator is estimate_tokens
        state = state_with(Message.user("q"), Message.assistant("12345678"))
        assert texts(compiler.compile(state)) == ["q", "12345678"]  # 4 + 0 and 4 + 2 = 6


class TestEstimateTokens:
    @pytest.mark.parametrize(
        ("text", "tokens"), [("", 4), ("123", 4), ("1234", 5), ("1234567", 5), ("12345678", 6)]
    )
    def test_four_per_message_and_one_per_four_characters(self, text: str, tokens: int) -> None:
        assert estimate_tokens(Message.user(text)) == tokens

    def test_tool_calls_count_as_their_text(self) -> None:
        call = ToolCall(name="f", arguments={"q": "x"})  # f(q='x'): 8 characters
        assert estimate_tokens(Message.assistant("", [call])) == 4 + 8 // 4
        assert estimate_tokens(Message.assistant("abcd", [call, call])) == 4 + (4 + 16) // 4


class TestRegistry:
    def test_builtins_by_name(self) -> None:
        assert {"all_sections", "conversation_with_current_tool_trace", "selected_sections"} <= set(
            compiler_names()
        )
        assert isinstance(get_compiler("all_sections"), AllSections)

    def test_unknown_name_lists_the_valid_ones(self) -> None:
        with pytest.raises(ConfigurationError, match=r"valid: .*all_sections"):
            get_compiler("nope")

    def test_register(self, monkeypatch: pytest.MonkeyPatch) -> None:
        monkeypatch.setattr(compilers, "_REGISTRY", dict(compilers._REGISTRY))
        register_compiler("only_messages_for_test", SelectedSections)
        assert isinstance(get_compiler("only_messages_for_test"), SelectedSections)

    def test_a_taken_name_needs_replace(self, monkeypatch: pytest.MonkeyPatch) -> None:
        monkeypatch.setattr(compilers, "_REGISTRY", dict(compilers._REGISTRY))
        with pytest.raises(ConfigurationError, match="registered already"):
            register_compiler("all_sections", SelectedSections)
        assert isinstance(get_compiler("all_sections"), AllSections)
        register_compiler("all_sections", SelectedSections, replace=True)
        assert isinstance(get_compiler("all_sections"), SelectedSections)
        register_compiler("all_sections", SelectedSections)  # the same factory again is fine

    def test_a_factory_that_is_not_callable_is_refused(self) -> None:
        with pytest.raises(ConfigurationError, match="not callable"):
            register_compiler("broken", AllSections())  # type: ignore[arg-type]

    @pytest.mark.parametrize(
        "compiler", [ConversationWithCurrentToolTrace(), SelectedSections(), AllSections()]
    )
    def test_builtins_satisfy_the_protocol(self, compiler: object) -> None:
        assert isinstance(compiler, ContextCompiler)

    def test_reprs(self) -> None:
        assert repr(AllSections()) == "AllSections()"
        assert repr(SelectedSections("summary")) == "SelectedSections(('summary',))"
        assert repr(ConversationWithCurrentToolTrace(["messages"])) == (
            "ConversationWithCurrentToolTrace(sections=('messages',))"
        )
        assert repr(TokenBudgetCompiler(AllSections(), 10)) == (
            "TokenBudgetCompiler(AllSections(), max_tokens=10)"
        )


class TestWrongInput:
    @pytest.mark.parametrize("compiler", [ConversationWithCurrentToolTrace, SelectedSections])
    def test_one_section_name_as_text(self, compiler: type[SelectedSections]) -> None:
        state = state_with(Message.user("s"), section="summary")
        state = state.with_message_store(
            state.store().section("messages").append(Message.user("m"))
        )
        assert compiler("summary").sections == ("summary",)
        assert texts(compiler("summary").compile(state)) == ["s"]

    @pytest.mark.parametrize(
        ("sections", "field"),
        [(None, "sections"), ([None], "sections[0]"), (["a", ""], "sections[1]")],
    )
    @pytest.mark.parametrize("compiler", [ConversationWithCurrentToolTrace, SelectedSections])
    def test_sections_must_be_names(
        self, compiler: type[SelectedSections], sections: object, field: str
    ) -> None:
        with pytest.raises(InvalidInputError) as raised:
            compiler(sections)  # type: ignore[arg-type]
        assert raised.value.field == field
        assert str(raised.value).startswith(f"invalid {compiler.__name__}: {field}: expected")

    @pytest.mark.parametrize("max_tokens", ["100", True, 10.5, None])
    def test_token_budget_must_be_a_whole_number(self, max_tokens: object) -> None:
        with pytest.raises(ConfigurationError) as raised:
            TokenBudgetCompiler(AllSections(), max_tokens)  # type: ignore[arg-type]
        assert str(raised.value).startswith(
            f"TokenBudgetCompiler max_tokens must be a whole number >= 1, got {max_tokens!r}: "
        )

    @pytest.mark.parametrize("inner", [None, AllSections])
    def test_the_inner_compiler_must_be_a_compiler(self, inner: object) -> None:
        with pytest.raises(ConfigurationError, match=r"inner .* compile\(state\)"):
            TokenBudgetCompiler(inner, 10)  # type: ignore[arg-type]

    def test_the_estimator_must_be_callable(self) -> None:
        with pytest.raises(ConfigurationError, match="TokenBudgetCompiler estimator must be"):
            TokenBudgetCompiler(AllSections(), 10, None)  # type: ignore[arg-type]
        with pytest.raises(ConfigurationError, match=r"its token count, got int: leave it out"):
            TokenBudgetCompiler(AllSections(), 10, 3)  # type: ignore[arg-type]

    @pytest.mark.parametrize("estimate", ["3", -1, None, 2.5])
    def test_an_estimate_that_is_not_a_count_names_the_estimator(self, estimate: object) -> None:
        compiler = TokenBudgetCompiler(AllSections(), 10, lambda message: estimate)  # type: ignore[arg-type,return-value]
        with pytest.raises(ConfigurationError, match=r"estimator returned .* for a user message"):
            compiler.compile(state_with(Message.user("q")))

    @pytest.mark.parametrize("name", ["", 3, None])
    def test_a_registered_name_must_be_text(
        self, name: object, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        monkeypatch.setattr(compilers, "_REGISTRY", dict(compilers._REGISTRY))
        with pytest.raises(ConfigurationError, match="name"):
            register_compiler(name, AllSections)  # type: ignore[arg-type]
        assert all(isinstance(known, str) for known in compiler_names())

    def test_an_unknown_name_suggests_the_close_one(self) -> None:
        with pytest.raises(ConfigurationError, match=r"did you mean 'all_sections'\?"):
            get_compiler("all_section")

    def test_a_name_that_is_not_text(self) -> None:
        with pytest.raises(ConfigurationError, match=r"unknown context compiler None"):
            get_compiler(None)  # type: ignore[arg-type]
        with pytest.raises(
            ConfigurationError, match=r"unknown context compiler \['all_sections'\]"
        ):
            get_compiler(["all_sections"])  # type: ignore[arg-type]

    def test_only_the_closest_name_is_suggested(self) -> None:
        with pytest.raises(ConfigurationError) as raised:
            get_compiler("sections")  # close to all_sections and selected_sections
        assert str(raised.value).count("did you mean") == 1
        assert "did you mean 'all_sections'?" in str(raised.value)

    def test_no_suggestion_for_a_name_close_to_none(self) -> None:
        with pytest.raises(ConfigurationError) as raised:
            get_compiler("zzz")
        assert str(raised.value) == (
            "unknown context compiler 'zzz'; valid: "
            f"{', '.join(compiler_names())} (a custom one must be registered first with "
            "register_compiler)"
        )

    def test_a_factory_that_makes_no_compiler(self, monkeypatch: pytest.MonkeyPatch) -> None:
        monkeypatch.setattr(compilers, "_REGISTRY", dict(compilers._REGISTRY))
        register_compiler("broken_for_test", lambda: "messages")  # type: ignore[arg-type,return-value]
        with pytest.raises(ConfigurationError, match=r"'broken_for_test' made str, not a compiler"):
            get_compiler("broken_for_test")

    @pytest.mark.parametrize("compiler", ["all_sections", AllSections, 3])
    def test_the_builder_refuses_what_is_not_a_compiler(self, compiler: object) -> None:
        with pytest.raises(ConfigurationError, match=r"not a context compiler.*get_compiler"):
            AgentBuilder.base().with_context_compiler(compiler)  # type: ignore[arg-type]

    def test_the_token_budget_takes_a_plain_list_from_a_custom_compiler(self) -> None:
        class ListCompiler:
            def compile(self, state: AgentState) -> list[Message]:
                return list(state.messages())

        state = state_with(*(Message.user(str(n)) for n in range(4)))
        compiler = TokenBudgetCompiler(ListCompiler(), 2, lambda message: 1)  # type: ignore[arg-type]
        assert texts(compiler.compile(state)) == ["0", "3"]

    def test_the_token_budget_names_an_inner_compiler_answering_nonsense(self) -> None:
        class NoneCompiler:
            def compile(self, state: AgentState) -> None:
                return None

        compiler = TokenBudgetCompiler(NoneCompiler(), 2)  # type: ignore[arg-type]
        with pytest.raises(ConfigurationError, match=r"NoneCompiler.*returned NoneType"):
            compiler.compile(state_with(Message.user("q")))


class TestCustomCompilersInARun:
    def test_a_plain_list_is_sent(self) -> None:
        class ListCompiler:
            def compile(self, state: AgentState) -> list[Message]:
                return [Message.user("only this")]

        llm = ScriptedLLM([reply("ok")])
        agent = (
            AgentBuilder.base()
            .with_capability(UseLlmConfig(llm))
            .with_context_compiler(ListCompiler())  # type: ignore[arg-type]
            .build()
        )
        agent.execute(AgentState().with_user_message("hi"))
        assert [m.content for m in llm.requests[0].messages] == ["only this"]

    @pytest.mark.parametrize("answer", [None, "text", [1, 2]])
    def test_a_compiler_answering_nonsense_fails_the_run_naming_it(self, answer: object) -> None:
        class OddCompiler:
            def compile(self, state: AgentState) -> object:
                return answer

            def __repr__(self) -> str:
                return "OddCompiler()"

        agent = (
            AgentBuilder.base()
            .with_capability(UseLlmConfig(ScriptedLLM([reply("ok")])))
            .with_context_compiler(OddCompiler())  # type: ignore[arg-type]
            .build()
        )
        final = agent.execute(AgentState().with_user_message("hi"))
        assert final.status() is ExecutionStatus.FAILED
        [error] = final.errors()
        assert error.type == "ConfigurationError"
        assert f"the context compiler OddCompiler() returned {type(answer).__name__}: " in (
            error.message
        )


class TestErrorTexts:
    """Each configuration error in full: what is wrong and what to do instead."""

    @staticmethod
    def text(error: pytest.ExceptionInfo[ConfigurationError]) -> str:
        return str(error.value)

    def test_no_sections(self) -> None:
        with pytest.raises(InvalidInputError) as raised:
            ConversationWithCurrentToolTrace([])
        assert str(raised.value) == (
            "invalid ConversationWithCurrentToolTrace: sections: name at least one section; "
            "the default is summary, buffer, messages, execution_buffer"
        )

    def test_a_compiler_answering_nonsense(self) -> None:
        class NoneCompiler:
            def compile(self, state: AgentState) -> None:
                return None

            def __repr__(self) -> str:
                return "NoneCompiler()"

        with pytest.raises(ConfigurationError) as raised:
            TokenBudgetCompiler(NoneCompiler(), 2).compile(AgentState())  # type: ignore[arg-type]
        assert self.text(raised) == (
            "the context compiler NoneCompiler() returned NoneType: compile(state) must return "
            "Messages (or a list of Message)"
        )

    def test_a_token_budget_below_one(self) -> None:
        with pytest.raises(ConfigurationError) as raised:
            TokenBudgetCompiler(AllSections(), 0)
        assert self.text(raised) == (
            "TokenBudgetCompiler max_tokens must be a whole number >= 1, got 0: the most tokens "
            "the model may be sent, e.g. 8000"
        )

    def test_an_inner_compiler_that_is_none(self) -> None:
        with pytest.raises(ConfigurationError) as raised:
            TokenBudgetCompiler(None, 10)  # type: ignore[arg-type]
        assert self.text(raised) == (
            "TokenBudgetCompiler inner must be a context compiler (an instance with "
            "compile(state)), got None: e.g. ConversationWithCurrentToolTrace()"
        )

    def test_registering(self, monkeypatch: pytest.MonkeyPatch) -> None:
        monkeypatch.setattr(compilers, "_REGISTRY", dict(compilers._REGISTRY))
        with pytest.raises(ConfigurationError) as raised:
            register_compiler("", AllSections)
        assert self.text(raised) == (
            "a context compiler's name must be non-empty text, got '': "
            "e.g. register_compiler('my_compiler', MyCompiler)"
        )
        with pytest.raises(ConfigurationError) as raised:
            register_compiler("broken", AllSections())  # type: ignore[arg-type]
        assert self.text(raised) == (
            "compiler factory for 'broken' is not callable: pass a class or a function "
            "returning a compiler"
        )
        with pytest.raises(ConfigurationError) as raised:
            register_compiler("all_sections", SelectedSections)
        assert self.text(raised) == (
            "a context compiler named 'all_sections' is registered already: choose another "
            "name, or pass replace=True"
        )
        register_compiler("makes_text_for_test", lambda: "messages")  # type: ignore[arg-type,return-value]
        with pytest.raises(ConfigurationError) as raised:
            get_compiler("makes_text_for_test")
        assert self.text(raised) == (
            "the factory registered as 'makes_text_for_test' made str, not a compiler (an object "
            "with compile(state)): register a class or a function returning one"
        )

"""``Serializable``: state objects are frozen pydantic dataclasses with plain-object instances."""

from __future__ import annotations

import dataclasses
import pickle
from datetime import UTC, datetime

import pytest
from pydantic import Field, ValidationError

from agentrig import AgentState, InvalidInputError
from agentrig._model import JsonData, JsonObject, Serializable, json_text

WHEN = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
made: list[str] = []


def _next_label() -> str:
    made.append("label")
    return f"label-{len(made)}"


class Record(Serializable):
    """Every kind of field: required, plain default, default factory, constraint, nested."""

    name: str = Field(min_length=1)
    count: int = Field(default=0, ge=0)
    label: str = Field(default_factory=_next_label)
    tags: tuple[str, ...] = ()
    at: datetime | None = None


class Holder(Serializable):
    record: Record
    extra: dict[str, int] = Field(default_factory=dict)


class Payload(Serializable):
    value: JsonData = None
    obj: JsonObject = Field(default_factory=dict)


class Named(Record):
    """A subclass adds a method; its fields are the base's."""

    def shout(self) -> str:
        return self.name.upper()


class TestConstruction:
    def test_instances_are_plain_objects_holding_exactly_the_fields(self) -> None:
        record = Record(name="a", label="x")
        assert record.__dict__ == {"name": "a", "count": 0, "label": "x", "tags": (), "at": None}
        assert dataclasses.is_dataclass(record)

    def test_fields_are_keyword_only(self) -> None:
        with pytest.raises(TypeError, match=r"Record\(\) takes its fields as keyword arguments"):
            Record("a")  # type: ignore[misc]

    def test_invalid_values_name_every_field(self) -> None:
        with pytest.raises(InvalidInputError) as raised:
            Record(name="", count=-1, bogus=1)  # type: ignore[call-arg]
        text = str(raised.value)
        assert "name: String should have at least 1 character" in text
        assert "count: Input should be greater than or equal to 0" in text
        assert "bogus: Extra inputs are not permitted" in text

    def test_nested_dicts_are_validated_into_records(self) -> None:
        holder = Holder(record={"name": "n", "label": "l"})  # type: ignore[arg-type]
        assert holder.record == Record(name="n", label="l")
        with pytest.raises(InvalidInputError, match=r"record\.name"):
            Holder(record={"name": ""})  # type: ignore[arg-type]

    def test_a_nested_record_is_kept_as_is(self) -> None:
        record = Record(name="n")
        assert Holder(record=record).record is record

    def test_instances_are_frozen(self) -> None:
        record = Record(name="a")
        with pytest.raises(dataclasses.FrozenInstanceError):
            record.name = "b"  # type: ignore[misc]
        assert record.name == "a"


class TestTrusted:
    @pytest.mark.parametrize(
        "values",
        [
            {"name": "a"},
            {"name": "a", "count": 3, "label": "given", "tags": ("t",), "at": WHEN},
            {"name": "a", "at": WHEN},
        ],
    )
    def test_the_generated_constructor_matches_the_reference(self, values: dict) -> None:
        made.clear()
        generated = Record._trusted(**values)
        generated_factory_calls = len(made)
        made.clear()
        reference = Serializable._trusted.__func__(Record, **dict(values))  # type: ignore[attr-defined]
        assert len(made) == generated_factory_calls  # a factory runs only for a missing field
        if "label" not in values:  # each factory call made a new label
            assert generated.label.startswith("label-")
            reference = reference._replace(label=generated.label)
        assert generated == reference
        assert type(generated) is Record

    def test_a_missing_required_field_is_a_type_error(self) -> None:
        with pytest.raises(TypeError):
            Record._trusted()  # type: ignore[call-arg]
        with pytest.raises(TypeError, match="missing name"):
            Serializable._trusted.__func__(Record)  # type: ignore[attr-defined]

    def test_an_unknown_field_is_a_type_error(self) -> None:
        with pytest.raises(TypeError):
            Record._trusted(name="a", bogus=1)  # type: ignore[call-arg]

    def test_subclasses_get_their_own(self) -> None:
        named = Named._trusted(name="a", label="l")
        assert type(named) is Named
        assert named.shout() == "A"


class TestCopies:
    def test_replace_copies_without_validating(self) -> None:
        record = Record(name="a", label="l")
        copy = record._replace(count=-5)
        assert copy.count == -5
        assert record.count == 0
        assert copy.label == "l"
        assert type(copy) is Record

    def test_evolve_validates(self) -> None:
        record = Record(name="a", label="l")
        assert record.evolve(count=2) == Record(name="a", label="l", count=2)
        with pytest.raises(InvalidInputError, match="count"):
            record.evolve(count=-1)
        assert dataclasses.replace(record, count=4).count == 4


class TestEquality:
    def test_records_are_equal_by_fields_and_type(self) -> None:
        assert Record(name="a", label="l") == Record(name="a", label="l")
        assert Record(name="a", label="l") != Record(name="b", label="l")
        assert Named(name="a", label="l") != Record(name="a", label="l")

    def test_hash_follows_equality(self) -> None:
        assert hash(Record(name="a", label="l")) == hash(Record(name="a", label="l"))
        with pytest.raises(TypeError, match="unhashable"):
            hash(Holder(record=Record(name="a"), extra={"x": 1}))


class TestSerialization:
    def test_round_trip_through_dict_and_json(self) -> None:
        holder = Holder(record=Record(name="a", label="l", tags=("t",), at=WHEN), extra={"x": 1})
        data = holder.to_dict()
        assert data["schema_version"] == 1
        assert data["record"]["at"] == "2026-01-02T03:04:05Z"
        assert Holder.from_dict(data) == holder
        assert Holder.from_json(holder.to_json()) == holder
        assert pickle.loads(pickle.dumps(holder)) == holder

    def test_a_subclass_round_trips_as_itself(self) -> None:
        named = Named(name="a", label="l")
        assert type(Named.from_dict(named.to_dict())) is Named

    def test_bad_data_names_the_field(self) -> None:
        with pytest.raises(InvalidInputError, match=r"record\.count"):
            Holder.from_dict({"schema_version": 1, "record": {"name": "a", "count": "many"}})
        with pytest.raises(InvalidInputError, match="schema_version"):
            Holder.from_dict({"record": {"name": "a"}})

    def test_model_dump_and_model_validate_behave_as_pydantic(self) -> None:
        record = Record(name="a", label="l", at=WHEN)
        assert record.model_dump()["at"] is WHEN
        assert record.model_dump(mode="json", exclude_none=True)["at"] == "2026-01-02T03:04:05Z"
        assert Record.model_validate(record.model_dump()) == record
        with pytest.raises(ValidationError):
            Record.model_validate({"name": ""})


class TestTextJsonCannotHoldRaw:
    """A lone surrogate (a ``surrogateescape`` decode leaves them) has no UTF-8 form."""

    def test_a_record_round_trips_through_compact_and_indented_json(self) -> None:
        record = Record(name="a", label="l", tags=("file \udcff näme",))
        for text in (record.to_json(), record.to_json(indent=2)):
            text.encode("utf-8")  # writable as a file
            assert Record.from_json(text) == record
            assert Record.from_json(text.encode("utf-8")) == record

    def test_json_text_escapes_only_when_it_must(self) -> None:
        assert json_text({"a": "näme"}) == '{"a":"näme"}'
        assert json_text({"a": "näme"}, indent=1) == '{\n "a": "näme"\n}'
        assert json_text({"a": "\udcff ä"}) == '{"a":"\\udcff \\u00e4"}'
        assert json_text({"a": "\udcff"}, indent=1) == '{\n "a": "\\udcff"\n}'
        assert json_text({"x": float("nan")}) == '{"x":NaN}'
        assert json_text({"x": float("nan"), "a": "\udcff"}) == '{"x":NaN,"a":"\\udcff"}'

    def test_a_state_holding_one_round_trips(self) -> None:
        state = AgentState().with_user_message("ls: \udcff.txt")
        assert AgentState.from_json(state.to_json()) == state
        assert AgentState.from_json(state.to_json(indent=2)) == state


class TestJsonFields:
    @pytest.mark.parametrize(
        ("fields", "expected"),
        [
            (
                {"value": (1, 2)},
                "value: Value error, must be JSON data (str, int, finite float, "
                "bool, None, list, dict with str keys), got tuple",
            ),
            ({"obj": {"k": (1, 2)}}, "got tuple at ['k']"),
            ({"obj": {"k": {"a": {1: 2}}}}, "got the non-string key 1 at ['k']['a']"),
            # pydantic writes such a key as replacement characters: it could not round-trip
            ({"obj": {"k": {"a\udcff": 2}}}, "got the key 'a\\udcff' at ['k'] (it holds a lone"),
            ({"value": [1, float("nan")]}, "got nan at [1]"),
            ({"value": {"a": [1, {"b": {1}}]}}, "got set at ['a'][1]['b']"),
        ],
    )
    def test_a_value_that_is_not_json_is_named_where_it_is(
        self, fields: dict, expected: str
    ) -> None:
        with pytest.raises(InvalidInputError) as raised:
            Payload(**fields)
        assert expected in str(raised.value)

    def test_json_values_pass(self) -> None:
        payload = Payload(value=[1, 2.5, None, {"a": True}], obj={"k": ["x"]})
        assert Payload.from_json(payload.to_json()) == payload


def test_a_saved_session_read_as_a_state_says_what_it_is() -> None:
    with pytest.raises(InvalidInputError, match="this is a saved session, not a state"):
        Record.from_dict({"format": "agentrig.session", "format_version": 1, "state": {}})
    with pytest.raises(InvalidInputError, match=r"was this written by to_dict\(\)\?"):
        Record.from_dict({"name": "a"})

"""``UuidIds`` and the system clock: the defaults a loop uses outside the harness."""

from __future__ import annotations

import uuid
from datetime import UTC

from agentrig import SystemClock, UuidIds


class TestUuidIds:
    def test_ids_are_canonical_random_uuid4_strings(self) -> None:
        ids = UuidIds()
        made = [ids.new_id("x") for _ in range(1000)]  # several batches
        for value in made:
            parsed = uuid.UUID(value)
            assert str(parsed) == value
            assert parsed.version == 4
            assert parsed.variant == uuid.RFC_4122
        assert len(set(made)) == len(made)

    def test_every_digit_position_varies(self) -> None:
        # A digit column copied to the wrong place, or left blank, would show up as a position
        # holding one character in every id.
        ids = UuidIds()
        made = [ids.new_id("x") for _ in range(600)]
        for position in range(36):
            seen = {value[position] for value in made}
            if position in (8, 13, 18, 23):
                assert seen == {"-"}
            elif position == 14:
                assert seen == {"4"}
            elif position == 19:
                assert seen == set("89ab")
            else:
                assert len(seen) > 8, position


def test_the_system_clock_is_utc() -> None:
    assert SystemClock().now().tzinfo is UTC

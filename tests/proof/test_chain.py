"""The event hash chain as the store computes it, on SQLite and PostgreSQL: every append path
chains, the value is what an independent recomputation from the re-read events gives (so a
database's JSON round trip does not change it), and concurrent appenders never fork a chain."""

from __future__ import annotations

import hashlib
import json
import math
import threading
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta, timezone
from enum import Enum, IntEnum
from typing import Any

import pytest
import rfc8785
from hypothesis import given, settings
from hypothesis import strategies as st
from sqlalchemy import Engine, insert, update
from sqlalchemy import event as sqlalchemy_event

from wop_langgraph._clock import iso_z
from wop_langgraph.proof.chain import (
    GENESIS,
    appended_digest,
    canonical,
    canonical_text,
    chain_next,
    chain_raw,
    event_digest,
    json_string,
    wire_time,
)
from wop_langgraph.proof.statements import digest_of_stored
from wop_langgraph.store.engine import make_engine
from wop_langgraph.store.events import NewEvent, append, read_events
from wop_langgraph.store.migrations import upgrade
from wop_langgraph.store.run_tables import event_counters_table, events_table


class Level(IntEnum):
    LOW = 1
    HIGH = 2


NOW = datetime(2026, 3, 1, 12, 0, 0, 123456, tzinfo=UTC)
#: Values a JSON round trip could respell: JSONB reorders keys, writes 1e300 as digits, keeps
#: 1.0 as 1.0; SQLite's JSON text keeps them as written.
AWKWARD: list[Any] = [
    {"b": 1, "a": 2, "é": "ü", "\u2028": "\x01\x1f", "emoji": "😀", "𝄞": 1, "\ue000": 2},
    {"floats": [1.0, 0.1, 1e16, 1e300, 1e-7, -0.0, 5e-324, 123.456]},
    {"ints": [2**53, 2**62, -(2**63), 2**63 - 1, -1, 0]},
    {"nested": {"deep": [[[{"x": None, "y": True, "z": False}]]]}, "empty": {}, "list": []},
    # the fast path's floats (as json writes them), integral floats, a value beyond the BMP
    {"scores": [0.42, 0.0001, 123.456, -2.5e-3], "confidence": 0.87, "big": 4503599627370495.5},
    {"one": 1.0, "half": 0.5, "zero": -0.0, "max": 9999999999999998.0},
    {"message": "on its way \U0001f389", "history": ["hi \U0001f44b"]},
]


@pytest.fixture
def engine(db_url: str) -> Iterator[Engine]:
    made = make_engine(db_url)
    upgrade(made)
    yield made
    made.dispose()


def recomputed(engine: Engine, run_id: str) -> list[tuple[str | None, str]]:
    with engine.connect() as conn:
        events = read_events(conn, run_id)
    assert [e.sequence for e in events] == list(range(len(events)))
    head: str | None = None
    pairs = []
    for event in events:
        head = chain_next(head, digest_of_stored(event))
        pairs.append((event.chain_hash, head))
    return pairs


def assert_chained(engine: Engine, run_id: str) -> None:
    pairs = recomputed(engine, run_id)
    assert pairs and all(stored == expected for stored, expected in pairs), pairs


@pytest.mark.parametrize("batch", [1, 3, 4, 5, 12])
def test_every_batch_size_chains_as_recomputed_from_the_reread_events(engine: Engine, batch: int) -> None:
    run_id = f"acme/chain-{uuid.uuid4().hex}"
    appended = []
    for round_ in range(3):
        with engine.begin() as conn:
            events = [NewEvent("log.appended", AWKWARD[(round_ + i) % len(AWKWARD)]) for i in range(batch)]
            appended += append(conn, run_id, events, now=NOW + timedelta(seconds=round_)).events
    assert_chained(engine, run_id)
    assert [e.chain_hash for e in appended] == [stored for stored, _ in recomputed(engine, run_id)]


def test_once_only_and_closing_appends_chain_too(engine: Engine) -> None:
    run_id = f"acme/chain-{uuid.uuid4().hex}"
    once = NewEvent("node.started", {"nodeId": "a"})
    with engine.begin() as conn:
        assert append(conn, run_id, [once], now=NOW, once=True)
        assert not append(conn, run_id, [once], now=NOW, once=True)  # a replay: nothing chained
        append(conn, run_id, [NewEvent("run.completed", {})], now=NOW, close=True)
    assert_chained(engine, run_id)
    assert len(recomputed(engine, run_id)) == 2


def test_a_rolled_back_append_leaves_the_chain_where_it_was(engine: Engine) -> None:
    run_id = f"acme/chain-{uuid.uuid4().hex}"
    with engine.begin() as conn:
        append(conn, run_id, [NewEvent("a", {})], now=NOW)
    with pytest.raises(RuntimeError), engine.begin() as conn:
        append(conn, run_id, [NewEvent("lost", {"x": 1})], now=NOW)
        raise RuntimeError("roll back")
    with engine.begin() as conn:
        append(conn, run_id, [NewEvent("b", {})], now=NOW)
    assert_chained(engine, run_id)
    with engine.connect() as conn:
        assert [e.type for e in read_events(conn, run_id)] == ["a", "b"]


def test_concurrent_appenders_build_one_chain(engine: Engine) -> None:
    run_id = f"acme/chain-{uuid.uuid4().hex}"
    errors: list[BaseException] = []

    def appender(worker: int) -> None:
        try:
            for i in range(15):
                with engine.begin() as conn:
                    batch = [NewEvent("w", {"w": worker, "i": i, "j": j}) for j in range(1 + i % 3)]
                    append(conn, run_id, batch, now=NOW)
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=appender, args=(w,)) for w in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors
    assert_chained(engine, run_id)


def test_appenders_of_two_engines_taking_turns_build_one_chain(engine: Engine, db_url: str) -> None:
    """Each engine's appends chain onto the head it saw last, which the other has moved on
    (SQLite: a stale guess of the counter row's head), and a rolled-back append leaves a guess
    of a head that never was: every append still chains onto the run's real last event."""
    run_id = f"acme/chain-{uuid.uuid4().hex}"
    other = make_engine(db_url)
    try:
        for turn in range(6):
            with (engine if turn % 2 else other).begin() as conn:
                append(conn, run_id, [NewEvent("turn", {"turn": turn})], now=NOW)
        with pytest.raises(RuntimeError), other.begin() as conn:
            append(conn, run_id, [NewEvent("lost", {})], now=NOW)
            raise RuntimeError("roll back")
        for turn in range(6, 9):
            with (other if turn % 2 else engine).begin() as conn:
                append(conn, run_id, [NewEvent("turn", {"turn": turn})], now=NOW, once=turn == 8)
    finally:
        other.dispose()
    assert_chained(engine, run_id)
    assert len(recomputed(engine, run_id)) == 9


def test_a_run_deleted_and_logged_again_chains_from_the_genesis(engine: Engine) -> None:
    run_id = f"acme/chain-{uuid.uuid4().hex}"
    with engine.begin() as conn:
        append(conn, run_id, [NewEvent("a", {}), NewEvent("b", {})], now=NOW)
    with engine.begin() as conn:
        conn.execute(events_table.delete().where(events_table.c.run_id == run_id))
        conn.execute(event_counters_table.delete().where(event_counters_table.c.run_id == run_id))
    with engine.begin() as conn:
        (again,) = append(conn, run_id, [NewEvent("again", {})], now=NOW).events
    assert again.sequence == 0
    assert again.chain_hash == chain_next(GENESIS, digest_of_stored(again))
    assert_chained(engine, run_id)


def test_an_append_reads_no_event_for_its_chain_head(engine: Engine) -> None:
    """The head is the counter row's (SQLite guesses it and the row checks the guess): the
    append's statements touch the events table only to insert."""
    run_id = f"acme/chain-{uuid.uuid4().hex}"
    statements: list[str] = []

    def seen(*args: object) -> None:
        statements.append(str(args[2]))

    with engine.begin() as conn:
        append(conn, run_id, [NewEvent("a", {})], now=NOW)
    sqlalchemy_event.listen(engine, "before_cursor_execute", seen)
    try:
        with engine.begin() as conn:
            append(conn, run_id, [NewEvent("b", {}), NewEvent("c", {})], now=NOW)
    finally:
        sqlalchemy_event.remove(engine, "before_cursor_execute", seen)
    # (on PostgreSQL one statement: the upsert, then the insert it feeds)
    reading = [s for s in statements if "wop_events" in s.split("INSERT INTO wop_events")[0]]
    assert statements and not reading, statements
    assert_chained(engine, run_id)


def test_a_run_logged_before_the_chain_starts_its_chain_at_its_next_event(engine: Engine) -> None:
    """An upgraded database: events and a counter row from before migration 7 have no chain."""
    run_id = f"acme/chain-{uuid.uuid4().hex}"
    with engine.begin() as conn:
        conn.execute(insert(event_counters_table).values(run_id=run_id, next_sequence=2, closed=False))
        for sequence in range(2):
            conn.execute(
                insert(events_table).values(
                    run_id=run_id,
                    sequence=sequence,
                    event_id=uuid.uuid4().hex,
                    type="old",
                    payload={},
                    timestamp=NOW,
                    schema_version=1,
                )
            )
    with engine.begin() as conn:
        (new,) = append(conn, run_id, [NewEvent("new", {"x": 1})], now=NOW).events
    assert new.sequence == 2
    assert new.chain_hash == chain_next(GENESIS, digest_of_stored(new))


def test_large_numbers_canonicalise_to_one_form_whatever_the_round_trip() -> None:
    assert canonical({"n": 2**62}) == b'{"n":4611686018427387904}'
    assert canonical({"n": 10**300}) == canonical({"n": 1e300}) == b'{"n":1e+300}'
    assert canonical({"n": 10**16}) == canonical({"n": 1e16})
    assert canonical([1.0, 1]) == b"[1,1]"
    for value in AWKWARD[:2] + AWKWARD[3:]:  # the fast path and rfc8785 agree (key order included)
        assert canonical(value) == rfc8785.dumps(value)
    with pytest.raises(TypeError):  # what JSON cannot carry
        canonical({"n": float("nan")})


def test_json_dumps_text_is_taken_as_canonical_exactly_where_rfc8785_writes_the_same() -> None:
    """The fast path (``json.dumps``'s text, stored and hashed as it is) is taken for digits
    inside strings, integers up to 21 digits, floats from 1e-4 up to 1e16 that are not
    integral, characters up to U+FFFF in keys and any character in values; not for another
    float (see the next test), a 22-digit integer anywhere or a key with a character beyond
    the BMP (UTF-16 may sort it otherwise), which ``rfc8785`` writes."""
    plain: list[Any] = [
        {"at": "2026-01-01T12:00:00.123Z", "v": "1e+16", "ids": ["4e5f", "0.5"]},
        {"x": [{"y": 1.5}], "confidence": 0.42, "low": 0.0001, "high": -999999999999999.5},
        {"n": 10**21 - 1, "m": -(10**21) + 1, "t": (1, 2), "b": [True, None]},
        {"\ue000": 1, "é": 2, "\uffff": [{"x": "ü"}]},  # key order is UTF-16's here too
        {"message": "on its way \U0001f389", "history": ["hi \U0001f44b"], "\ue000": "\U0001d11e"},
        {"level": Level.HIGH, "nested": [[[{"deep": Level.LOW}]]]},
    ]
    for value in plain:
        text = canonical_text(value)
        dumped = json.dumps(value, ensure_ascii=False, sort_keys=True, separators=(",", ":"))
        assert text is not None and text == dumped
        assert text.encode() == canonical(value)
    assert canonical_text({"\ue000": 1, "é": 2}).encode() == rfc8785.dumps({"\ue000": 1, "é": 2})  # type: ignore[union-attr]
    fast_would_be_wrong: list[Any] = [
        {"x": [1.0]},
        {"x": [0.5, -0.0]},
        {"x": 0.00009},
        {"x": 1e16 + 0.5},
        {"x": [[[10**21]]]},
        {"x": (-(10**21),)},
        {"\ue000": 1, "\U0001d11e": 2},  # UTF-16 sorts the second key first
        {"m": "\U0001f389", "nested": [{"\U0001f44b": 1}]},
        [1, 2, {"a": 1e16}],
    ]
    for value in fast_would_be_wrong:
        assert canonical_text(value) is None
    assert canonical({"\ue000": 1, "\U0001d11e": 2}) == rfc8785.dumps({"\ue000": 1, "\U0001d11e": 2})
    assert canonical({"\ue000": 1, "\U0001d11e": 2}).startswith('{"\U0001d11e"'.encode())
    assert canonical({"x": [[[10**21]]]}) == b'{"x":[[[1e+21]]]}'


def test_floats_take_the_fast_paths_and_what_is_stored_reads_back_as_themselves(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``json`` writes a float as ``repr`` does; from 1e-4 up to 1e16 that is RFC 8785's text
    (but for an integral float's ``.0``): such a payload is hashed and stored as ``json``
    writes it. Any other finite float (``1.0``, ``1e-05``, ``1e+16``) is hashed with RFC 8785's
    text of it, written by ``orjson``, and stored as ``json`` writes it, so that it reads back
    as a float. Neither asks ``rfc8785`` for more than a single float's text (its writer
    of a whole payload is ten times slower)."""
    repr_floats = [0.1, 0.0001, -0.0001, 0.5, 123456.789, 999999999999999.5, 1 / 3, 2**-10]
    respelt = [1.0, -1.0, 0.0, -0.0, 1e15, 9999999999999998.0, -123.0]
    respelt += [0.00009999, 1e-7, -2.5e-5, 5e-324, 1e16, 1.5e16, 1e300, -1e21, 2.0**70]
    expected = {n: rfc8785.dumps({"n": n, "k": [n, 0.25]}) for n in repr_floats + respelt}
    whole_payload = rfc8785.dumps

    def one_float_only(value: Any) -> bytes:
        if type(value) is not float:
            raise AssertionError(f"rfc8785 asked for {value!r}")
        return whole_payload(value)

    monkeypatch.setattr(rfc8785, "dumps", one_float_only)
    for number in repr_floats:
        text = canonical_text({"n": number, "k": [number, 0.25]})
        assert text == f'{{"k":[{number!r},0.25],"n":{number!r}}}'
        assert text.encode() == expected[number] == canonical({"n": number, "k": [number, 0.25]})
        assert json.loads(text) == {"n": number, "k": [number, 0.25]}
    for number in respelt:
        assert canonical_text({"n": number}) is None  # json's text is not RFC 8785's
        assert canonical({"n": number, "k": [number, 0.25]}) == expected[number]
        text, _ = appended_digest('"r"', "e", "t", {"n": number}, "2026-01-01T00:00:00.000Z", None, None, 1)
        assert type(json.loads(text)["n"]) is float
    assert expected[1.0] == b'{"k":[1,0.25],"n":1}' and expected[1e-7] == b'{"k":[1e-7,0.25],"n":1e-7}'
    monkeypatch.undo()
    for refused in (float("nan"), float("inf")):
        with pytest.raises(TypeError):
            canonical({"n": refused})


@settings(max_examples=400, deadline=None)
@given(
    st.lists(
        st.floats(min_value=1e-6, max_value=1e17)
        | st.floats(min_value=-1e17, max_value=-1e-6)
        | st.integers(min_value=-(10**16), max_value=10**16).map(float)
        | st.floats(allow_nan=False, allow_infinity=False),
        max_size=6,
    )
)
def test_every_float_canonicalises_as_rfc8785_writes_it(numbers: list[float]) -> None:
    value = {"n": numbers, "m": {"x": numbers[:1]}}
    assert canonical(value) == rfc8785.dumps(value)
    text = canonical_text(value)
    if text is not None:  # what is stored reads back as the value, floats as floats
        back = json.loads(text)
        assert back == value and all(type(n) is float for n in back["n"])


def test_floats_orjson_writes_as_repr_does_are_written_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """A payload whose floats are all from 1e-4 up to 1e16 and not integral (a model's scores)
    is written once, by ``orjson``, whose text of such a float is ``repr``'s and RFC 8785's:
    neither ``json`` nor ``rfc8785`` is asked. Were ``orjson`` to write them otherwise, every
    float takes the respelt path, and the canonical form is unchanged."""
    from wop_langgraph.proof import chain

    scores = {"label": "refund", "confidence": 0.683, "others": [0.21, -0.0901, 123456.789, 2**51 + 0.5]}
    expected = rfc8785.dumps(scores)

    def refused(*_: Any, **__: Any) -> Any:
        raise AssertionError("written a second time")

    monkeypatch.setattr(chain, "_fast", refused)
    monkeypatch.setattr(rfc8785, "dumps", refused)
    text, digest = appended_digest('"r"', "e", "t", scores, "2026-01-01T00:00:00.000Z", None, None, 1)
    assert text.encode() == expected and json.loads(text) == scores
    monkeypatch.undo()
    assert (
        digest
        == hashlib.sha256(
            b'{"eventId":"e","payload":' + expected + b',"runId":"r","schemaVersion":1,'
            b'"timestamp":"2026-01-01T00:00:00.000Z","type":"t"}'
        ).digest()
    )
    monkeypatch.setattr(chain, "_TAKEN_LOW", math.inf)
    monkeypatch.setattr(chain, "_TAKEN_HIGH", math.inf)
    assert canonical_text(scores) is None and canonical(scores) == expected
    stored, respelt = appended_digest('"r"', "e", "t", scores, "2026-01-01T00:00:00.000Z", None, None, 1)
    assert respelt == digest and json.loads(stored) == scores


def test_the_append_hashes_with_a_sha256_that_agrees_with_hashlib() -> None:
    """The short inputs' SHA-256 (the interpreter's own where it has one: see
    ``_short_sha256``) is SHA-256: empty, one block, several blocks; and a document is hashed
    alike either side of the length where it changes hands."""
    from wop_langgraph.proof import chain

    for data in (b"", b"a" * 55, b"b" * 64, bytes(range(256)) * 5):
        assert chain._short_sha256(data).digest() == hashlib.sha256(data).digest()
        assert chain._short_sha256(data).hexdigest() == hashlib.sha256(data).hexdigest()
    for length in (chain._SHORT - 1, chain._SHORT, chain._SHORT + 1, 10 * chain._SHORT):
        document = bytes(range(256)) * (length // 256) + b"x" * (length % 256)
        assert chain._document_sha256(document) == hashlib.sha256(document).digest()


def test_what_json_refuses_is_refused_and_what_it_writes_is_written_alike() -> None:
    """The canonical text comes from ``orjson`` where it writes the value, else from ``json``:
    values ``orjson`` takes and ``json`` refuses (a UUID, an enum that is not an int or a str)
    are refused as before, and values ``orjson`` refuses and ``json`` writes (a key that is
    not a string, a lone surrogate, nesting deeper than ``orjson``'s 255 levels) are written
    as ``json`` writes them."""

    class Colour(Enum):
        RED = "red"

    for refused in ({"u": uuid.uuid4()}, {"c": Colour.RED}, {"t": NOW}, {"x": {1, 2}}):
        assert canonical_text(refused) is None
        with pytest.raises(TypeError):
            canonical(refused)
    deep: Any = "leaf"
    for _ in range(300):
        deep = [deep]
    for written in ({1: "a", 2: "b"}, {"s": "\ud800"}, deep, {"level": Level.HIGH}):
        dumped = json.dumps(written, ensure_ascii=False, sort_keys=True, separators=(",", ":"))
        assert canonical_text(written) == dumped


def test_editing_a_chain_value_in_sql_does_not_change_what_the_next_append_chains_from(
    engine: Engine, db_url: str
) -> None:
    """PostgreSQL chains from the counter row: a forged head is caught by the recomputation."""
    run_id = f"acme/chain-{uuid.uuid4().hex}"
    with engine.begin() as conn:
        append(conn, run_id, [NewEvent("a", {})], now=NOW)
        conn.execute(update(events_table).where(events_table.c.run_id == run_id).values(chain_hash="f" * 64))
        append(conn, run_id, [NewEvent("b", {})], now=NOW)
    pairs = recomputed(engine, run_id)
    assert pairs[0][0] != pairs[0][1]  # the forged value is found where it was written


_JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**53) + 1, max_value=2**53 - 1)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=4),
    max_leaves=20,
)


@settings(max_examples=600, deadline=None)
@given(_JSON)
def test_the_fast_canonical_form_is_rfc8785(value: Any) -> None:
    try:
        expected = rfc8785.dumps(value)
    except rfc8785.CanonicalizationError:  # lone surrogates: not JSON text
        return
    assert canonical(value) == expected


_TEXT = st.text(max_size=12)


@settings(max_examples=300, deadline=None)
@given(
    payload=_JSON,
    ids=st.tuples(_TEXT, _TEXT, _TEXT, st.none() | _TEXT, st.none() | _TEXT),
    moment=st.datetimes(timezones=st.sampled_from([UTC, timezone(timedelta(hours=-5, minutes=-30))])),
)
def test_the_event_digest_is_sha256_of_the_rfc8785_wire_document(
    payload: Any, ids: tuple[str, str, str, str | None, str | None], moment: datetime
) -> None:
    """The append's digest (written member by member, the wire time formatted directly) is the
    definition's: SHA-256 of RFC 8785 over the event's wire document without ``sequence``; the
    append's text to store reads back as the payload, and its chain step is the definition's."""
    run_id, event_id, type_, node_id, causation_id = ids
    doc = {"runId": run_id, "eventId": event_id, "type": type_, "payload": payload, "schemaVersion": 1}
    doc |= {"timestamp": iso_z(moment)}
    doc |= {} if node_id is None else {"nodeId": node_id}
    doc |= {} if causation_id is None else {"causationId": causation_id}
    try:
        expected = hashlib.sha256(rfc8785.dumps(doc)).hexdigest()
    except rfc8785.CanonicalizationError:  # lone surrogates: not JSON text
        return
    digest = event_digest(
        run_id=run_id,
        event_id=event_id,
        type=type_,
        payload=payload,
        timestamp=moment,
        node_id=node_id,
        causation_id=causation_id,
        schema_version=1,
    )
    assert digest == expected
    stored, raw = appended_digest(
        json_string(run_id), event_id, type_, payload, wire_time(moment), node_id, causation_id, 1
    )
    assert raw.hex() == expected and json.loads(stored) == payload
    assert chain_raw(None, [raw, raw]) == [
        chain_next(None, expected),
        chain_next(chain_next(None, expected), expected),
    ]

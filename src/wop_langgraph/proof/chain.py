"""The per-run hash chain: each event's digest over its RFC 8785 canonical form, chained.

``digest(e)`` is the SHA-256 of the RFC 8785 (JCS) canonical JSON of the event's wire document
(``RunEventDoc``) without ``sequence``; ``chain(e_i) = SHA-256(chain(e_{i-1}) || digest(e_i))``
over the raw 32-byte values, from :data:`GENESIS` (32 zero bytes) for a run's first chained
event. The sequence is bound by the chain itself (position ``i`` holds sequence ``i``), which
is what lets the database assign it in the same statement that chains the event.

The canonical form is computed from the values the log stores and reads back (the wire
timestamp has millisecond precision, the payload is JSON), so the digest does not depend on
how a database round-trips JSON: JSONB's key order and number spelling are normalised away by
the canonicalisation. One extension of RFC 8785 (whose numbers are IEEE doubles): an integer
beyond the doubles' safe range (2**53), which a payload may hold up to 64 bits, is written
with its exact digits below 1e21 (as JCS writes an integral double there), and as JCS writes
the nearest double from 1e21 on (JSONB returns a large double such as 1e300 as an integer).
"""

from __future__ import annotations

import hashlib
import importlib
import json
import math
from collections.abc import Callable, Mapping, Sequence
from contextlib import suppress
from datetime import UTC, datetime
from typing import Any, Protocol

import orjson
import rfc8785

from wop_langgraph._clock import iso_z

__all__ = [
    "GENESIS",
    "appended_digest",
    "canonical",
    "canonical_text",
    "chain_next",
    "chain_raw",
    "event_digest",
    "event_digest_raw",
    "json_digest",
    "json_string",
    "wire_digest",
    "wire_time",
]

#: The chain value before a run's first chained event (hex of 32 zero bytes).
GENESIS = "0" * 64
_GENESIS_RAW = bytes(32)


#: ``json.dumps`` (C) writes what RFC 8785 writes for JSON without floats (but those
#: ``_REPR_LOW`` describes), without integers of 22 digits or more, and without keys holding
#: characters beyond the Basic Multilingual Plane (only with such a key can UTF-16 key order,
#: which RFC 8785 sorts by, differ from the code point order ``sort_keys`` uses): same escapes
#: (short forms for ``\b \t \n \f \r``, ``\u00xx`` for other controls, nothing else
#: escaped), same separators.
_fast: Callable[[Any], str] = json.JSONEncoder(
    ensure_ascii=False, allow_nan=False, sort_keys=True, separators=(",", ":")
).encode
_string: Callable[[str], str] = json.encoder.encode_basestring
#: A string as a JSON (and RFC 8785) string: quoted, escaped.
json_string = _string
#: From here on (22 digits), RFC 8785 writes an integer as a double does: ``1e+21``.
_LONG_INTEGER = 10**21
_sha256 = hashlib.sha256


class _Hash(Protocol):
    def digest(self) -> bytes: ...

    def hexdigest(self) -> str: ...


def _interpreter_sha256() -> Callable[[bytes], _Hash]:
    """The interpreter's own SHA-256, which ``hashlib`` falls back to where OpenSSL lacks one
    (``_sha2`` from Python 3.12, ``_sha256`` before), where it is importable and agrees with
    ``hashlib`` on a sample; else ``hashlib``'s."""
    for name in ("_sha2", "_sha256"):
        try:
            own: Callable[[bytes], _Hash] = importlib.import_module(name).sha256
        except (ImportError, AttributeError):
            continue
        sample = b"wop-langgraph" * 9
        if own(sample).digest() == hashlib.sha256(sample).digest():
            return own
    return hashlib.sha256


#: SHA-256 of an append's short inputs (a chain step's 64 bytes, a small event's document).
#: OpenSSL 3's digests look their provider up and take locks at every start
#: (openssl/openssl#19612, #25858): ``hashlib.sha256`` measured 2-3 us a call amid an append's
#: database work here, against 0.4 us in a tight loop (and a copy of a started one no less);
#: the interpreter's own, without SHA extensions, about 0.2 us a 64-byte block, measured 1 us
#: for a chain step there.
_short_sha256 = _interpreter_sha256()
#: Up to this many bytes an event's document is hashed by :data:`_short_sha256`; beyond, where
#: its blocks cost more than OpenSSL's start, by ``hashlib``.
_SHORT = 512


def _document_sha256(document: bytes) -> bytes:
    """SHA-256 of an event's document, by the quicker of the two for its length."""
    return (_short_sha256 if len(document) <= _SHORT else _sha256)(document).digest()


def _refuse(value: Any) -> Any:
    raise TypeError(f"{type(value).__name__} is not JSON")


def _c_encoder() -> Callable[[Any], str] | None:
    """``_fast`` without ``JSONEncoder.encode``'s per-call set-up: the C encoder it builds, built
    once (CPython's ``c_make_encoder``; ``None`` where it is missing or differs)."""
    make = getattr(json.encoder, "c_make_encoder", None)
    if make is None:
        return None
    try:
        encode = make(None, _refuse, _string, None, ":", ",", True, False, False)
        sample = {"b": [1, "é\n", None, True], "a": {}}
        if "".join(encode(sample, 0)) != _fast(sample):
            return None
    except Exception:  # another interpreter's signature: keep the public path
        return None
    return lambda value: "".join(encode(value, 0))


_fast = _c_encoder() or _fast


#: ``orjson`` writes what ``_fast`` does for what both take (the same escapes, separators and
#: key order; floats from 1e-4 up to 1e16 as ``repr`` does, see :data:`_TAKEN_LOW`; others
#: otherwise, ``1e-5`` for ``1e-05``), in a tenth of its time; what it takes and ``json`` refuses (a
#: UUID, an enum of other values) :func:`_kind` refuses, and ``datetime`` and dataclasses it
#: passes through to its ``default``, which it has none of: refused.
_ORJSON_OPTIONS = orjson.OPT_SORT_KEYS | orjson.OPT_PASSTHROUGH_DATETIME | orjson.OPT_PASSTHROUGH_DATACLASS
_orjson_dumps = orjson.dumps
_fragment = orjson.Fragment


def canonical_text(value: Any) -> str | None:
    """The RFC 8785 canonical JSON of ``value`` as text where ``json.dumps`` writes it (see
    ``_fast``: most JSON, floats included from 1e-4 up to 1e16 but for integral ones; written
    by ``orjson`` where it takes the value), else ``None`` (then
    :func:`canonical` takes ``rfc8785``).

    The text is also plain JSON that reads back as ``value``: the store writes it as the
    payload it has just digested, instead of serialising the payload again."""
    return _written(value)[0]


#: What :func:`_kind` finds in a value: nothing that ``orjson`` (or ``json``) writes otherwise
#: than RFC 8785 does; floats of which some they write otherwise (``1.0``, ``1e-05``: RFC 8785's
#: ``1``, ``0.00001``); something else, which ``rfc8785`` writes.
_PLAIN, _RESPELT_FLOATS, _OTHER = range(3)
#: ``json`` writes a float as ``repr`` does, without an exponent from 1e-4 up to 1e16, and
#: there ``rfc8785`` writes ``repr``'s text as it is, but for an integral float's ``.0`` (it
#: formats ``str(f)``: ECMAScript's shortest round-trip digits are ``repr``'s).
_REPR_LOW, _REPR_HIGH = 1e-4, 1e16


def _orjson_writes_repr() -> bool:
    """Whether ``orjson`` writes floats from 1e-4 up to 1e16 as ``repr`` does (its shortest
    round-trip digits are ``repr``'s, in the same notation there; checked on samples of the
    range's edges and of each decade, as a test checks many more)."""
    samples = [1e-4, 0.00012345678901234, 0.1, 1 / 3, 2.5, 123456.789, 2**51 + 0.5, 999999999999999.9]
    signed = [number for sample in samples for number in (sample, -sample)]
    return all(_orjson_dumps(number) == repr(number).encode() for number in signed)


#: The floats whose text in ``orjson``'s (and ``json``'s) JSON is RFC 8785's, the integral ones
#: aside: from 1e-4 up to 1e16 if ``orjson`` writes them as ``repr`` does (else none: every
#: float is then respelt, correct and slower).
_TAKEN_LOW, _TAKEN_HIGH = (_REPR_LOW, _REPR_HIGH) if _orjson_writes_repr() else (math.inf, math.inf)


def _written(value: Any) -> tuple[str | None, int]:
    """:func:`canonical_text` of ``value``, and what :func:`_kind` found in it."""
    try:
        text = _orjson_dumps(value, option=_ORJSON_OPTIONS).decode()
    except TypeError:  # (orjson's JSONEncodeError) what json may still write: a key that is not
        # a string, a lone surrogate, nesting deeper than orjson's 255 levels
        try:
            text = _fast(value)
        except (TypeError, ValueError):
            return None, _OTHER
    kind = _kind(value, text)
    return (text if kind == _PLAIN else None), kind


def _kind(value: Any, text: str) -> int:
    """Whether ``text``, ``orjson``'s (or ``json``'s) text of ``value``, is RFC 8785's too:
    ``_PLAIN`` where ``value`` holds no integer of 22 digits or more, no key with a character
    beyond the Basic Multilingual Plane and no float but those from 1e-4 up to 1e16 that are not
    integral; ``_RESPELT_FLOATS`` where it also holds other finite floats; else ``_OTHER``.

    The numbers are found by walking the value, not by scanning the text: a walk costs a few
    steps per value, where a regular expression cost tens of instructions per character, and
    several passes to tell a number from digits in a string (a timestamp's ``00.123``). The
    usual types are tested first, by identity (the append's hot path).
    """
    # Keys are sorted by code point, where RFC 8785 sorts them by UTF-16 code unit: the two
    # orders differ only for a key holding a character beyond the BMP, which is looked for
    # only if the text holds one (an emoji in a message is written alike by both).
    astral = not text.isascii() and _beyond_the_bmp(text)
    found = _PLAIN
    items = [value]
    for item in items:  # (what is appended to the list is visited too)
        kind = type(item)
        if kind is str:
            continue
        if kind is dict:
            if astral and _a_key_beyond_the_bmp(item):
                return _OTHER
            items += item.values()
        elif kind is int:
            if not -_LONG_INTEGER < item < _LONG_INTEGER:
                return _OTHER
        elif kind is float:
            if not _TAKEN_LOW <= abs(item) < _TAKEN_HIGH or item.is_integer():
                if not math.isfinite(item):
                    return _OTHER  # NaN, an infinity: not JSON, which rfc8785 says
                found = _RESPELT_FLOATS
        elif kind is list or kind is tuple:
            items += item
        elif kind is bool or item is None:
            continue
        elif isinstance(item, int):  # a subclass (an IntEnum): written as its digits
            items.append(int(item))
        elif isinstance(item, float):  # a subclass: written as a float
            items.append(float(item))
        elif isinstance(item, dict):
            items.append(dict(item))  # (its keys checked as a dict's)
        elif isinstance(item, list | tuple):
            items += item
        elif not isinstance(item, str):  # (what orjson writes and json refuses: a UUID, an Enum)
            return _OTHER
    return found


def _a_key_beyond_the_bmp(mapping: dict[Any, Any]) -> bool:
    """Whether a key of ``mapping`` holds a character beyond the Basic Multilingual Plane."""
    return any(type(key) is str and not key.isascii() and _beyond_the_bmp(key) for key in mapping)


def _beyond_the_bmp(text: str) -> bool:
    """Whether ``text`` holds a character beyond the Basic Multilingual Plane (UTF-16, whose
    codec is CPython's fast path, writes 2 bytes a character, 4 for such a one, and a BOM)."""
    return len(text.encode("utf-16", "surrogatepass")) != 2 * len(text) + 2


def _floats_written(value: Any) -> Any:
    """``value`` with each float replaced by RFC 8785's text of it, for ``orjson`` to write as
    it is (a ``Fragment``: ``1`` for ``1.0``, ``1e-7``, ``0.00001`` for ``1e-05``): for its
    canonical text, never to store (``1.0`` would read back as an integer)."""
    if isinstance(value, float):
        return _fragment(_float_text(value))
    if isinstance(value, dict):
        return {key: _floats_written(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_floats_written(item) for item in value]
    return value


def _spelt_alike(number: float) -> bool:
    """Whether ``json`` writes ``number`` as RFC 8785 does (see ``_REPR_LOW``)."""
    return _REPR_LOW <= abs(number) < _REPR_HIGH and not number.is_integer()


def _float_text(number: float) -> str | bytes:
    """RFC 8785's text of a finite float: ``repr``'s in its decimal range (see ``_REPR_LOW``),
    without the ``.0`` of an integral one; ``rfc8785``'s elsewhere."""
    if _spelt_alike(number):
        return repr(float(number))  # (a subclass's own repr aside)
    if number.is_integer() and -_REPR_HIGH < number < _REPR_HIGH:
        return str(int(number))  # (-0.0 as 0)
    return rfc8785.dumps(number)


def canonical(value: Any) -> bytes:
    """The RFC 8785 canonical JSON bytes of ``value`` (with large integers: see above).

    JSON that ``json.dumps`` writes exactly as RFC 8785 does (see ``_fast``) takes that path
    (the append is on the hot path); JSON whose only difference is floats that ``json`` spells
    otherwise is written by ``orjson`` with RFC 8785's text of each float; anything else is
    canonicalised by ``rfc8785``.

    Raises:
        TypeError: ``value`` is not JSON (a non-string key, NaN, an object of another type).
    """
    return _canonical(value, *_written(value))


def _canonical(value: Any, text: str | None, kind: int) -> bytes:
    """:func:`canonical` of ``value``, whose :func:`_written` gave ``text`` and ``kind``."""
    if text is None and kind == _RESPELT_FLOATS:
        with suppress(TypeError):  # what orjson refuses (a key that is not a string): rfc8785
            text = _orjson_dumps(_floats_written(value), option=_ORJSON_OPTIONS).decode()
    if text is not None:
        return text.encode()
    try:
        return rfc8785.dumps(value)
    except rfc8785.IntegerDomainError:
        try:
            return _exact(value)
        except rfc8785.CanonicalizationError as exc:
            raise TypeError(f"not JSON: {exc}") from None
    except rfc8785.CanonicalizationError as exc:
        raise TypeError(f"not JSON: {exc}") from None


def _exact(value: Any) -> bytes:
    """:func:`canonical` of a value holding an integer beyond 2**53 (rare: the slow path)."""
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value).encode() if abs(value) < 10**21 else rfc8785.dumps(float(value))
    if isinstance(value, list | tuple):
        return b"[" + b",".join(_exact(item) for item in value) + b"]"
    if isinstance(value, dict):
        items = sorted(value.items(), key=lambda item: str(item[0]).encode("utf-16be"))
        return b"{" + b",".join(rfc8785.dumps(key) + b":" + _exact(item) for key, item in items) + b"}"
    return rfc8785.dumps(value)


def json_digest(value: Any) -> str:
    """Hex SHA-256 of the canonical JSON of ``value``."""
    return hashlib.sha256(canonical(value)).hexdigest()


def event_digest(
    *,
    run_id: str,
    event_id: str,
    type: str,
    payload: Any,
    timestamp: datetime,
    node_id: str | None,
    causation_id: str | None,
    schema_version: int,
) -> str:
    """The digest of one event (hex): its wire document without ``sequence``, canonicalised."""
    return event_digest_raw(
        run_id=run_id,
        event_id=event_id,
        type=type,
        payload=canonical_text(payload) or canonical(payload),
        wire_time=wire_time(timestamp),
        node_id=node_id,
        causation_id=causation_id,
        schema_version=schema_version,
    ).hex()


def event_digest_raw(
    *,
    run_id: str,
    event_id: str,
    type: str,
    payload: str | bytes,
    wire_time: str,
    node_id: str | None,
    causation_id: str | None,
    schema_version: int,
) -> bytes:
    """:func:`event_digest` as 32 bytes, of the payload's canonical form already written
    (:func:`canonical_text`, or :func:`canonical`) and the wire time (:func:`wire_time`): the
    append's form, which has both at hand.

    Written member by member in RFC 8785's order (the hot path of every append): the strings as
    ``json`` escapes them, which RFC 8785 escapes alike.
    """
    if not isinstance(payload, str):
        payload = payload.decode()
    return _digest(_string(run_id), event_id, type, payload, wire_time, node_id, causation_id, schema_version)


def appended_digest(
    run_json: str,
    event_id: str,
    type: str,
    payload: Any,
    wire_time: str,
    node_id: str | None,
    causation_id: str | None,
    schema_version: int,
) -> tuple[str, bytes]:
    """An appended event's payload as the JSON text to store, and its digest (raw): the
    append's hot path, every event of every append, in one call.

    The payload is written once where ``json.dumps`` writes RFC 8785's form (see ``_fast``):
    that text is both hashed and stored; else the canonical bytes are hashed and
    ``json.dumps``'s text stored. ``run_json`` is the run id as :func:`json_string` writes it
    (once per batch), the rest as :func:`event_digest_raw` takes them.

    Raises:
        TypeError: the payload is not JSON.
    """
    canon, kind = _written(payload)
    if canon is None:
        canon = _canonical(payload, canon, kind).decode()
        # (json's text of floats reads back as the same floats)
        text = _fast(payload) if kind == _RESPELT_FLOATS else json.dumps(payload)
    else:
        text = canon
    return text, _digest(run_json, event_id, type, canon, wire_time, node_id, causation_id, schema_version)


def _digest(
    run_json: str,
    event_id: str,
    type: str,
    payload: str,
    wire_time: str,
    node_id: str | None,
    causation_id: str | None,
    schema_version: int,
) -> bytes:
    """:func:`event_digest_raw`, positional, the run id already a JSON string."""
    # The document in RFC 8785's member order, written by orjson (its strings escaped as json
    # escapes them, the payload and the run id as the JSON they are): the cheapest way to these
    # bytes measured, a fifth quicker than one f-string of json's escapes, encoded.
    document: dict[str, Any] = {} if causation_id is None else {"causationId": causation_id}
    document["eventId"] = event_id
    if node_id is not None:
        document["nodeId"] = node_id
    document["payload"] = _fragment(payload)
    document["runId"] = _fragment(run_json)
    document["schemaVersion"] = int(schema_version)
    document["timestamp"] = wire_time
    document["type"] = type
    try:
        return _document_sha256(_orjson_dumps(document))
    except TypeError as exc:  # (orjson's JSONEncodeError) an id with a lone surrogate
        raise ValueError(f"an event's ids are not UTF-8 text: {exc}") from None


def wire_time(moment: datetime) -> str:
    """The wire timestamp of ``moment`` (``iso_z``), quicker for the usual moment (aware, UTC)."""
    if moment.tzinfo is UTC:
        return moment.isoformat(timespec="milliseconds")[:-6] + "Z"
    return iso_z(moment)


def wire_digest(doc: Mapping[str, Any]) -> str:
    """:func:`event_digest` of an event's wire document (``RunEventDoc``, as exported)."""
    body = {name: value for name, value in doc.items() if name not in ("sequence", "chainHash")}
    return hashlib.sha256(canonical(body)).hexdigest()


def chain_raw(previous: str | None, digests: Sequence[bytes]) -> list[str]:
    """The chain values (hex) of events of ``digests`` (raw, as :func:`event_digest_raw` gives
    them) following ``previous`` (hex, or ``None`` for the run's first chained event)."""
    head = _GENESIS_RAW if previous is None else bytes.fromhex(previous)
    if len(digests) == 1:  # (an append's usual one event)
        return [_short_sha256(head + digests[0]).hexdigest()]
    values = []
    for digest in digests:
        head = _short_sha256(head + digest).digest()
        values.append(head.hex())
    return values


def chain_next(previous: str | None, digest: str) -> str:
    """The chain value after an event of ``digest`` (hex) follows ``previous`` (hex, or ``None``
    for the run's first chained event)."""
    return hashlib.sha256(bytes.fromhex(previous or GENESIS) + bytes.fromhex(digest)).hexdigest()

"""The statement engine: Core statements compiled once per dialect, run on DBAPI cursors.

Every statement the store runs goes through here, on one of two paths:

* :class:`DriverStatement` (the run ledger, interrupts, events, ...): in the transaction of an
  open SQLAlchemy ``Connection``, on its driver connection, with the bind and result processors
  of the statement's types, and pipelined on PostgreSQL (:func:`named_together`);
* :class:`Sql` run by a :class:`Tx` (the saver): on a bare DBAPI connection whose values are
  already in the driver's form.

The rest of this docstring is about the first path.

``Connection.execute`` does a lot per call besides the statement: a compiled-cache lookup, an
execution context, generic parameter processing, event dispatch, a result object. For a hot
statement on a fast database that costs more than the statement itself. A
:class:`DriverStatement` keeps a Core construct as the one source of its SQL, compiles it once
per dialect (the SQL text, the parameter layout, and the bind processors of the parameters'
types: JSON serialisation, SQLite's datetime text, psycopg's ``Jsonb`` wrapper) and runs it on
a cursor of the connection's own DBAPI connection: the SQL and parameter values SQLAlchemy
would send, in the caller's transaction, whose begin, commit and rollback stay SQLAlchemy's
(and with them every hook on them).

SQLAlchemy runs the statement itself (``conn.execute``, as if this module were not there)
whenever the direct path would skip something that can be observed:

* the connection has no active transaction: autobegin (and the engine's ``begin`` hooks), or
  the error a failed transaction raises, are SQLAlchemy's;
* a listener watches statement execution (``before_execute``/``after_execute``,
  ``before_cursor_execute``/``after_cursor_execute``, the dialect's ``do_execute`` and
  ``do_executemany``), or the engine logs its SQL (``echo``);
* the connection translates schema names (``schema_translate_map``).

Errors raised by the driver go through the connection's own error handling, as in
``execute``: wrapped in SQLAlchemy's exception types (a unique violation is a
:class:`sqlalchemy.exc.IntegrityError`), a lost connection invalidated, ``handle_error`` hooks
called. Statements needing per-execution rendering (``IN`` lists expanded at execution,
literal-execute parameters, Python-side column defaults, a schema translate map) are refused
when compiled.

Three SQLAlchemy internals are used: ``Connection._handle_dbapi_exception`` (the error handling
above), ``Connection._has_events`` and ``Connection._echo`` (the checks above, in
:func:`~wop_langgraph.store.engine.watches_statements`);
``tests/store/test_statements.py`` fails if any of them stops doing its part.
"""

from __future__ import annotations

import copy
import functools
import keyword
import operator
from collections import namedtuple
from collections.abc import Callable, Mapping, Sequence
from contextlib import suppress
from dataclasses import dataclass, field
from typing import Any, cast
from weakref import WeakKeyDictionary

from sqlalchemy import Connection
from sqlalchemy.engine import Dialect
from sqlalchemy.exc import InvalidRequestError
from sqlalchemy.sql import ClauseElement, Executable
from sqlalchemy.sql.compiler import SQLCompiler

from wop_langgraph.store.engine import watches_statements
from wop_langgraph.store.held import HeldWrite, store_ahead, storing

__all__ = [
    "DriverStatement",
    "Reads",
    "Sql",
    "Tx",
    "compile_sql",
    "driver_connection",
    "driver_statement",
    "named_together",
]

_Bind = Callable[[Mapping[str, Any]], Sequence[Any] | dict[str, Any]]
_NO_PARAMS: Mapping[str, Any] = {}


def driver_connection(conn: Connection) -> Any | None:
    """The DBAPI connection to run statements of ``conn``'s transaction on, or ``None``.

    ``None`` when SQLAlchemy must run them itself (see the module docstring): no active
    transaction, a statement or cursor listener, SQL logging, or a schema translate map.
    """
    transaction = conn.get_transaction()
    if transaction is None or not transaction.is_active:
        return None
    nested = conn.get_nested_transaction()
    if nested is not None and not nested.is_active:
        return None
    if watches_statements(conn):
        return None
    if conn.get_execution_options().get("schema_translate_map"):
        return None  # the SQL would be rendered per execution
    return conn.connection.driver_connection


@dataclass(frozen=True, slots=True)
class _Compiled:
    """A statement compiled for one dialect."""

    text: str
    #: ``params`` -> the parameters in the driver's form (a sequence or a dict).
    bind: _Bind
    #: The names of the result columns (empty for a statement that returns no rows).
    keys: tuple[str, ...]
    #: A driver row -> the row as SQLAlchemy would return it (its types' result processors).
    convert: Callable[[Sequence[Any]], Sequence[Any]] | None
    #: The named tuple type of a result row (``None``: no rows, or a name that is no identifier).
    row: Any
    #: ``DBAPI connection -> cursor`` to run ``text`` on (psycopg: a raw cursor, see :func:`_raw`).
    cursor: Callable[[Any], Any] = operator.methodcaller("cursor")


class DriverStatement:
    """A Core statement run on the driver connection of an open ``Connection``.

    Create it once (for instance from a ``functools.cache``'d builder of the construct) and
    share it: it compiles itself for each dialect it meets, on first use.
    """

    __slots__ = ("_compiled", "_last", "statement")

    def __init__(self, statement: Executable) -> None:
        self.statement = statement
        self._compiled: WeakKeyDictionary[Dialect, _Compiled] = WeakKeyDictionary()
        self._last: tuple[Dialect, _Compiled] | None = None

    def rows(self, conn: Connection, params: Mapping[str, Any]) -> Sequence[Sequence[Any]]:
        """Run the statement with ``params`` in ``conn``'s transaction; all its rows (or ``[]``)."""
        ran = self._on_driver(conn, params)
        if ran is None:
            result = conn.execute(self.statement, params)
            return result.all() if result.returns_rows else []
        return ran[1]

    def mappings(self, conn: Connection, params: Mapping[str, Any]) -> list[dict[str, Any]]:
        """:meth:`rows` as dicts keyed by result column name."""
        ran = self._on_driver(conn, params)
        if ran is None:
            return [dict(row) for row in conn.execute(self.statement, params).mappings()]
        compiled, found, _ = ran
        return [dict(zip(compiled.keys, row, strict=True)) for row in found]

    def named(self, conn: Connection, params: Mapping[str, Any]) -> list[Any]:
        """:meth:`rows` as named tuples (attribute access by result column name, like a ``Row``)."""
        ran = self._on_driver(conn, params)
        if ran is None:
            return list(conn.execute(self.statement, params).all())
        compiled, found, _ = ran
        if compiled.row is None:
            raise ValueError("the statement's result columns are not all identifiers")
        return [compiled.row._make(row) for row in found]

    def rowcount(self, conn: Connection, params: Mapping[str, Any]) -> int:
        """Run a statement that returns no rows; how many rows it changed."""
        ran = self._on_driver(conn, params)
        if ran is None:
            return int(conn.execute(self.statement, params).rowcount)
        return ran[2]

    def rows_on(self, conn: Connection, driver: Any, params: Mapping[str, Any]) -> Sequence[Sequence[Any]]:
        """:meth:`rows` on ``driver``, what :func:`driver_connection` gave for ``conn`` (not
        ``None``) since its last statement: a caller running statements in a row looks the
        driver connection up once."""
        return _run(conn, driver, self._for(conn.dialect), params, store_ahead(conn))[0]

    def execute_many(self, conn: Connection, params: Sequence[Mapping[str, Any]], driver: Any = None) -> None:
        """Run the statement once per parameter set (a statement that returns no rows);
        ``driver``: as :meth:`rows_on` takes it, if the caller has it."""
        if driver is not None and len(params) == 1:
            self.rows_on(conn, driver, params[0])
            return
        if len(params) == 1:
            self.rows(conn, params[0])
            return
        storing(conn, store_ahead(conn))  # (a batch is not pipelined: what waits goes first)
        driver = driver or driver_connection(conn)
        if driver is None:
            conn.execute(self.statement, params)
            return
        compiled = self._for(conn.dialect)
        bound = [_bind(conn, compiled, p) for p in params]
        cursor = None
        try:
            cursor = compiled.cursor(driver)
            cursor.executemany(compiled.text, bound)
            cursor.close()
        except BaseException as exc:
            _fail(conn, exc, compiled.text, bound, cursor)

    def _on_driver(
        self, conn: Connection, params: Mapping[str, Any]
    ) -> tuple[_Compiled, Sequence[Sequence[Any]], int] | None:
        """Run on the driver connection, if ``conn`` allows it: the compiled statement, its rows
        (converted) and its rowcount; ``None`` when SQLAlchemy must run it (nothing ran)."""
        driver = driver_connection(conn)
        if driver is None:
            storing(conn, store_ahead(conn))  # SQLAlchemy runs it: what waits goes first
            return None
        compiled = self._for(conn.dialect)
        found, count = _run(conn, driver, compiled, params, store_ahead(conn))
        return compiled, found, count

    def _for(self, dialect: Dialect) -> _Compiled:
        last = self._last
        if last is not None and last[0] is dialect:
            return last[1]
        compiled = self._compiled.get(dialect)
        if compiled is None:
            compiled = self._compiled.setdefault(dialect, _compile(self.statement, dialect))
        self._last = (dialect, compiled)
        return compiled


@functools.cache
def driver_statement(statement: Executable) -> DriverStatement:
    """The shared :class:`DriverStatement` of ``statement`` (a construct cached by its builder)."""
    return DriverStatement(statement)


@dataclass(slots=True)
class Reads:
    """Statements to run with another one, in its round trip (see :func:`named_together`):
    statements with their parameters, and more sent by functions (``also``); ``rows``, each
    statement's as :meth:`DriverStatement.named` gives them, once they ran."""

    runs: Sequence[tuple[DriverStatement, Mapping[str, Any]]]
    also: Sequence[Callable[[Connection], None]] = ()
    rows: list[list[Any]] | None = None

    def run(self, conn: Connection, first: tuple[DriverStatement, Mapping[str, Any]] | None = None) -> Any:
        """Run them in ``conn``'s transaction (after ``first``, if given, in the same round
        trip), keep their rows, and return ``first``'s (``None`` without it)."""
        ahead = [] if first is None else [first]
        found = named_together(conn, [*ahead, *self.runs], also=self.also)
        self.rows = found[len(ahead) :]
        return found[0] if first is not None else None


def named_together(
    conn: Connection,
    runs: Sequence[tuple[DriverStatement, Mapping[str, Any]]],
    *,
    also: Sequence[Callable[[Connection], None]] = (),
) -> list[list[Any]]:
    """Run each statement with its parameters, in order, in ``conn``'s transaction; each one's
    rows as :meth:`DriverStatement.named` gives them.

    On PostgreSQL's driver they go out in one pipeline: one round trip for them all (with the
    saves waiting to go ahead, :func:`~wop_langgraph.store.held.stored_ahead`). For statements
    none of which needs another's result; an error in one stops those after it (the
    transaction is failed anyway). ``also``: more statements sent after them, each by a
    function that runs it on ``conn``'s driver connection and keeps its cursor, to read once
    this returns.
    """
    driver = driver_connection(conn)
    if driver is None or conn.dialect.name != "postgresql" or len(runs) + len(also) < 2:
        named = [statement.named(conn, params) for statement, params in runs]
        for send in also:
            send(conn)
        return named
    compiled = [(statement._for(conn.dialect), params) for statement, params in runs]
    if any(c.row is None for c, _ in compiled):
        raise ValueError("a statement's result columns are not all identifiers")
    bound = [_bind(conn, c, params) for c, params in compiled]
    ahead = store_ahead(conn)
    cursors: list[Any] = []
    try:
        with driver.pipeline():  # its end sends them all and waits for every result
            for write in ahead:
                write(conn)
            for (c, _), values in zip(compiled, bound, strict=True):
                cursors.append(c.cursor(driver))
                cursors[-1].execute(c.text, values)
            for send in also:
                send(conn)
        pairs = zip(cursors, compiled, strict=True)
        found = [cursor.fetchall() if c.keys else [] for cursor, (c, _) in pairs]
        for cursor in cursors:
            cursor.close()
    except BaseException as exc:
        for cursor in cursors:
            with suppress(Exception):  # the original error is the one to report
                cursor.close()
        _fail(conn, exc, compiled[max(len(cursors) - 1, 0)][0].text, None, None)
    named = []
    for (c, _), rows in zip(compiled, found, strict=True):
        if c.convert is not None:
            rows = [c.convert(row) for row in rows]
        named.append([c.row._make(row) for row in rows])
    return named


def _run(
    conn: Connection,
    driver: Any,
    compiled: _Compiled,
    params: Mapping[str, Any],
    ahead: Sequence[HeldWrite] = (),
) -> tuple[Sequence[Sequence[Any]], int]:
    """Execute on ``driver``: the rows (converted as SQLAlchemy would) and the rowcount.

    ``ahead`` (saves waiting for this statement, see
    :func:`~wop_langgraph.store.held.stored_ahead`) go first, in one pipeline with it. The
    first statement of a psycopg transaction goes in one pipeline with the driver's ``BEGIN``."""
    bound = _bind(conn, compiled, params)
    cursor = None
    try:
        cursor = compiled.cursor(driver)
        if ahead:
            # One round trip: the pipeline's end sends them all and waits for every result.
            with driver.pipeline():
                for write in ahead:
                    write(conn)
                cursor.execute(compiled.text, bound)
        elif _begins_transaction(driver):
            # psycopg sends its implicit BEGIN as a round trip of its own; in a pipeline it goes
            # out with the statement, and their results come back together.
            with driver.pipeline():
                cursor.execute(compiled.text, bound)
        else:
            cursor.execute(compiled.text, bound)
        # (not ``cursor.description``: psycopg builds a column object per column to answer it)
        found = cursor.fetchall() if compiled.keys else []
        count = cursor.rowcount
        cursor.close()
    except BaseException as exc:
        _fail(conn, exc, compiled.text, bound, cursor)
    convert = compiled.convert
    if convert is not None and found:
        found = [convert(row) for row in found]
    return cast(Sequence[Sequence[Any]], found), int(count)


def _bind(conn: Connection, compiled: _Compiled, params: Mapping[str, Any]) -> Any:
    try:
        return compiled.bind(params)
    except Exception as exc:
        # As in SQLAlchemy, a parameter that cannot be processed raises a StatementError.
        conn._handle_dbapi_exception(exc, compiled.text, params, None, None)


def _fail(conn: Connection, exc: BaseException, text: str, bound: Any, cursor: Any) -> Any:
    if isinstance(exc, conn.dialect.loaded_dbapi.Error) or not isinstance(exc, Exception):
        # Wrapped (IntegrityError, OperationalError ...), the connection invalidated if it
        # broke; always raises.
        conn._handle_dbapi_exception(exc, text, bound, cursor, None)
    if cursor is not None:
        with suppress(Exception):  # the original error is the one to report
            cursor.close()
    raise exc


def _compile(statement: Executable, dialect: Dialect) -> _Compiled:
    raw = _raw(dialect)
    compiled = cast(SQLCompiler, cast(ClauseElement, statement).compile(dialect=raw or dialect))
    if (
        compiled.literal_execute_params
        or compiled.post_compile_params
        or compiled.insert_prefetch
        or compiled.update_prefetch
        or compiled.schema_translate_map
    ):
        raise ValueError("this statement needs SQLAlchemy's per-execution processing")
    # name in the SQL -> how to find its value; like SQLAlchemy's ``construct_params``, the
    # caller's value is looked up by the parameter's key, then by its name.
    slots: dict[str, _Slot] = {}
    for param, name in compiled.bind_names.items():
        if param.callable is not None or param.type._is_tuple_type:
            raise ValueError(f"bind parameter {param.key!r}: not supported on the driver path")
        processor = param.type.dialect_impl(dialect).bind_processor(dialect)
        slots[name] = _Slot(param.key, name, param.required, param.value, processor)
    keys, convert = _results(compiled, dialect)
    if compiled.positional:
        bind = _positional([slots[name] for name in compiled.positiontup or ()])
    else:
        escaped = compiled.escaped_bind_names
        bind = _named([(escaped.get(n, n), slot) for n, slot in slots.items()])
    row = namedtuple("Row", keys) if _field_names(keys) else None
    if raw is None:
        return _Compiled(compiled.string, bind, keys, convert, row)
    return _Compiled(compiled.string, bind, keys, convert, row, _raw_cursor())


def _raw(dialect: Dialect) -> Dialect | None:
    """psycopg: ``dialect`` rendering PostgreSQL's own ``$1`` placeholders, else ``None``.

    psycopg turns ``%(name)s`` placeholders into ``$n`` by parsing the SQL on every execution
    of a statement longer than 4 kB or with more than 50 parameters (it caches only shorter
    ones): a log append of several events is both, and parsing it took about 0.2 ms, more than
    its round trip. Compiled once with ``$n`` placeholders and run on a raw cursor, which sends the SQL
    as it is, nothing is parsed. The copy differs only in its parameter style: the types'
    bind processors still come from ``dialect``.
    """
    if dialect.driver != "psycopg":
        return None
    numbered = copy.copy(dialect)
    numbered.paramstyle, numbered.positional = "numeric_dollar", True
    return numbered


def _begins_transaction(driver: Any) -> bool:
    """Whether a statement on ``driver`` would start its transaction with psycopg's own ``BEGIN``
    (an idle connection, not in autocommit, not in a pipeline already)."""
    pgconn = getattr(driver, "pgconn", None)
    if pgconn is None or driver.autocommit:
        return False
    from psycopg import pq  # only ever on the psycopg dialect

    return bool(
        pgconn.transaction_status == pq.TransactionStatus.IDLE
        and pgconn.pipeline_status == pq.PipelineStatus.OFF
    )


@functools.cache
def _raw_cursor() -> Callable[[Any], Any]:
    import psycopg  # only ever on the psycopg dialect

    return psycopg.RawCursor


def _field_names(keys: tuple[str, ...]) -> bool:
    """Whether ``keys`` can name the fields of a named tuple."""
    names_ok = all(k.isidentifier() and not keyword.iskeyword(k) and not k.startswith("_") for k in keys)
    return bool(keys) and names_ok and len(set(keys)) == len(keys)


def _results(
    compiled: SQLCompiler, dialect: Dialect
) -> tuple[tuple[str, ...], Callable[[Sequence[Any]], Sequence[Any]] | None]:
    """The result columns' names, and a row converter applying their types' result processors
    (``None`` when no column has one: the driver's row is already what SQLAlchemy returns)."""
    columns = compiled._result_columns
    keys = tuple(column.keyname for column in columns)
    processors = tuple(
        (i, processor)
        for i, column in enumerate(columns)
        if (processor := column.type.dialect_impl(dialect).result_processor(dialect, None)) is not None
    )
    if not processors:
        return keys, None

    def convert(row: Sequence[Any]) -> list[Any]:
        return _processed(list(row), processors)

    return keys, convert


@dataclass(frozen=True, slots=True)
class _Slot:
    """One bind parameter: where its value comes from and how the driver gets it."""

    key: str
    name: str
    required: bool
    default: Any
    processor: Callable[[Any], Any] | None

    def value(self, params: Mapping[str, Any]) -> Any:
        if self.key in params:
            return params[self.key]
        if self.name in params:
            return params[self.name]
        if self.required:
            raise InvalidRequestError(f"A value is required for bind parameter {self.key!r}")
        return self.default


def _positional(layout: list[_Slot]) -> _Bind:
    """The values in placeholder order, each through its type's bind processor."""
    processors = tuple((i, slot.processor) for i, slot in enumerate(layout) if slot.processor is not None)
    if layout and all(slot.required and slot.key == slot.name for slot in layout):
        # The common case: itemgetter lays the values out in C.
        getter = operator.itemgetter(*(slot.key for slot in layout))
        single = len(layout) == 1

        def pick(params: Mapping[str, Any]) -> list[Any]:
            try:
                values = [getter(params)] if single else list(getter(params))
            except KeyError as missing:
                raise InvalidRequestError(
                    f"A value is required for bind parameter {missing.args[0]!r}"
                ) from None
            return _processed(values, processors)

        return pick

    def gather(params: Mapping[str, Any]) -> list[Any]:
        return _processed([slot.value(params) for slot in layout], processors)

    return gather


def _processed(values: list[Any], processors: tuple[tuple[int, Callable[[Any], Any]], ...]) -> list[Any]:
    """``values`` with each processed value replaced in place (index, type processor)."""
    for i, processor in processors:
        values[i] = processor(values[i])
    return values


def _named(layout: list[tuple[str, _Slot]]) -> _Bind:
    """A dict of the statement's own parameters, each through its type's bind processor."""
    plain = tuple((name, slot) for name, slot in layout if slot.processor is None)
    processed = tuple((name, slot, slot.processor) for name, slot in layout if slot.processor is not None)

    def gather(params: Mapping[str, Any]) -> dict[str, Any]:
        bound = {name: slot.value(params) for name, slot in plain}
        for name, slot, processor in processed:
            bound[name] = processor(slot.value(params))
        return bound

    return gather


# -- On a bare DBAPI connection: the saver's short transactions -------------------------------
#
# The saver runs most of its operations on a DBAPI connection of its own, outside any
# SQLAlchemy transaction (see :mod:`._saver_tx`): there nothing is watched, and its values are
# already in the driver's form (the codec's bytes, JSON text), so a statement is only its text
# and its parameter layout.


@dataclass(frozen=True, slots=True)
class Sql:
    """A statement compiled for one dialect: its text and how to lay out its parameters."""

    text: str
    #: Bind names in placeholder order for positional drivers (sqlite3); None for named ones.
    names: tuple[str, ...] | None
    #: Values of binds the statement carries itself (literals).
    defaults: Mapping[str, Any]
    _pick: Callable[[Mapping[str, Any]], Sequence[Any]] | None = field(default=None, init=False, repr=False)

    def __post_init__(self) -> None:
        if self.names:
            # itemgetter lays the values out in C; with one name it returns the bare value.
            getter = operator.itemgetter(*self.names)
            pick = getter if len(self.names) > 1 else lambda params: (getter(params),)
            object.__setattr__(self, "_pick", pick)

    def bind(self, params: Mapping[str, Any]) -> Sequence[Any] | Mapping[str, Any]:
        """``params`` in the form the driver expects for this statement."""
        merged = {**self.defaults, **params} if self.defaults else params
        if self.names is None:
            return merged
        return self._pick(merged) if self._pick is not None else ()


def compile_sql(statement: ClauseElement, dialect: Dialect) -> Sql:
    """Compile ``statement`` for ``dialect`` once, into a reusable :class:`Sql`."""
    compiled = cast(SQLCompiler, statement.compile(dialect=dialect))
    defaults = {
        name: value
        for name, value in compiled.params.items()
        if name in compiled.binds and not compiled.binds[name].required
    }
    names = tuple(compiled.positiontup) if dialect.positional and compiled.positiontup else None
    if dialect.positional and names is None:
        names = ()
    return Sql(compiled.string, names, defaults)


class Tx:
    """One open transaction: runs compiled statements on the driver connection."""

    __slots__ = ("_binary", "_connection", "_dbapi")

    def __init__(self, dbapi: Any, connection: Connection | None, *, binary: bool = False) -> None:
        self._dbapi = dbapi
        self._connection = connection
        # psycopg: results in binary format, so blobs arrive as bytes without hex decoding.
        self._binary = binary

    def _cursor(self) -> Any:
        return self._dbapi.cursor(binary=True) if self._binary else self._dbapi.cursor()

    def execute(self, sql: Sql, params: Mapping[str, Any] = _NO_PARAMS) -> Any:
        """Run ``sql`` and return its cursor (fetch from it for rows)."""
        cursor = self._cursor()
        cursor.execute(sql.text, sql.bind(params))
        return cursor

    def execute_bound(self, text: str, params: Sequence[Any] | Mapping[str, Any]) -> Any:
        """Run statement ``text`` with parameters already laid out for the driver."""
        cursor = self._cursor()
        cursor.execute(text, params)
        return cursor

    def rows(self, sql: Sql, params: Mapping[str, Any] = _NO_PARAMS) -> list[tuple[Any, ...]]:
        """Run ``sql`` and return all its rows."""
        return [tuple(row) for row in self.execute(sql, params).fetchall()]

    def execute_many(self, sql: Sql, params: Sequence[Mapping[str, Any]]) -> None:
        """Run ``sql`` once per parameter set, in one driver call."""
        if len(params) == 1:
            self.execute(sql, params[0])
            return
        cursor = self._cursor()
        cursor.executemany(sql.text, [sql.bind(p) for p in params])

    @property
    def connection(self) -> Connection:
        """The SQLAlchemy connection of this transaction (only when opened with one)."""
        if self._connection is None:
            raise RuntimeError("this transaction was opened without a SQLAlchemy connection")
        return self._connection

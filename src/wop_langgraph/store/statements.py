"""The statement engine: Core statements compiled once per dialect, run on DBAPI cursors.

Every statement the store runs is a :class:`Compiled`: a Core construct (the one source of its
SQL) compiled once for a dialect into its SQL text, its parameter layout and, unless it is
compiled in the driver's form, the bind and result processors of its types (JSON
serialisation, SQLite's datetime text, psycopg's ``Jsonb`` wrapper). It binds a mapping of
parameters and runs on a cursor of a DBAPI connection, with or without an SQLAlchemy
``Connection`` around it:

* :class:`DriverStatement` (the run ledger, interrupts, events, ...): in the transaction of an
  open ``Connection``, on its driver connection; several at once in one PostgreSQL pipeline
  (:func:`named_together`);
* the saver (:mod:`._saver_tx`): its statements are compiled in the driver's form
  (``driver_form``: its values are already the codec's bytes and JSON text, so no type
  processor runs) and run on a bare DBAPI connection of its own, or on a ``Connection``'s.

Errors raised by the driver go, when there is a ``Connection``, through its own error
handling, as in ``execute``: wrapped in SQLAlchemy's exception types (a unique violation is a
:class:`sqlalchemy.exc.IntegrityError`), a lost connection invalidated, ``handle_error`` hooks
called. On a bare connection they are the driver's, for its owner to handle. On psycopg every
statement is compiled with PostgreSQL's own ``$n`` placeholders and sent on a raw cursor
(:func:`_raw`). A transaction's first statement goes in a pipeline with its ``BEGIN`` on the
store's connections (:mod:`~wop_langgraph.store.pg_connection`: one round trip where psycopg
takes two); on another psycopg connection it does not, since psycopg waits for the ``BEGIN``'s
answer before the statement even in a pipeline, where the pipeline saved no round trip and cost
every transaction about nine more system calls (``strace`` on one resolve: 6.8 sends and 10.7
polls for 4 round trips, against 4 and 4 without it).

``Connection.execute`` does a lot per call besides the statement: a compiled-cache lookup, an
execution context, generic parameter processing, event dispatch, a result object. For a hot
statement on a fast database that costs more than the statement itself. A
:class:`DriverStatement` runs the SQL and parameter values SQLAlchemy would send, in the
caller's transaction, whose begin, commit and rollback stay SQLAlchemy's (and with them every
hook on them). SQLAlchemy runs the statement itself (``conn.exec_driver_sql``: the same SQL,
compiled once the same way, in the dialect's own parameter style, with the same parameters)
whenever the direct path would skip something that can be observed:

* the connection's transaction has failed: the error it raises is SQLAlchemy's (a connection
  not yet in a transaction first begins one as ``conn.execute`` would: SQLAlchemy's autobegin,
  the engine's ``begin`` hooks with it);
* a listener watches statement execution (``before_execute``/``after_execute``,
  ``before_cursor_execute``/``after_cursor_execute``, the dialect's ``do_execute`` and
  ``do_executemany``), or the engine logs its SQL (``echo``);
* the connection translates schema names (``schema_translate_map``: rendered in the SQL).

Not ``conn.execute(statement, params)``: SQLAlchemy compiles a statement with the names of the
parameters it is given, and a write whose table has a column named like one of them
(``run_id``) would also set that column, a statement the direct path never runs (nested in a
``WITH``, it sets it to an anonymous parameter that has no value, and fails).

Statements needing per-execution rendering (``IN`` lists expanded at execution,
literal-execute parameters, Python-side column defaults, a schema translate map) are refused
when compiled.

Four SQLAlchemy internals are used: ``Connection._handle_dbapi_exception`` (the error handling
above), ``Connection._autobegin`` (a statement on a connection not yet in a transaction begins
one as ``conn.execute`` would, then runs direct), ``Connection._has_events`` and
``Connection._echo`` (the checks above, in :func:`~wop_langgraph.store.engine.watches_statements`);
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
from dataclasses import dataclass
from typing import Any, cast
from weakref import WeakKeyDictionary

from sqlalchemy import Connection
from sqlalchemy.engine import Dialect
from sqlalchemy.exc import InvalidRequestError
from sqlalchemy.sql import ClauseElement, Executable
from sqlalchemy.sql.compiler import SQLCompiler

from wop_langgraph.store.engine import watches_statements
from wop_langgraph.store.held import HeldWrite, run_held, store_ahead, storing
from wop_langgraph.store.pg_connection import begins_with_statement

__all__ = [
    "Compiled",
    "DriverStatement",
    "Reads",
    "compile_statement",
    "driver_connection",
    "driver_statement",
    "named_together",
]

_Bind = Callable[[Mapping[str, Any]], Sequence[Any] | dict[str, Any]]
_Rows = Sequence[Sequence[Any]]


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
class Compiled:
    """A statement compiled for one dialect, run on cursors of a DBAPI connection (``driver``).

    Its methods take an optional ``conn``, the SQLAlchemy ``Connection`` whose transaction
    ``driver`` serves: an error is then raised as ``conn`` raises it (see the module
    docstring); without it, as the driver raised it.
    """

    text: str
    #: The bind names in placeholder order (a positional parameter style), else ``None``.
    names: tuple[str, ...] | None
    #: ``params`` -> the parameters in the driver's form (a sequence or a dict).
    bind: _Bind
    #: The names of the result columns (empty for a statement that returns no rows).
    keys: tuple[str, ...]
    #: A driver row -> the row as SQLAlchemy would return it (its types' result processors).
    convert: Callable[[Sequence[Any]], Sequence[Any]] | None
    #: The named tuple type of a result row (``None``: no rows, or a name that is no identifier).
    row: Any
    #: Whether the values go to and come from the driver as they are: no type processors run
    #: (the caller's values are in the driver's form already), and on psycopg the results come
    #: in binary format (blobs arrive as bytes, without hex decoding).
    driver_form: bool
    #: ``DBAPI connection -> cursor`` to run ``text`` on (psycopg: a raw cursor, see :func:`_raw`).
    cursor: Callable[[Any], Any]

    def bound(self, params: Mapping[str, Any], conn: Connection | None = None) -> Any:
        """``params`` in the form the driver takes for this statement (:attr:`bind`, whose
        errors are raised here as SQLAlchemy raises them)."""
        try:
            return self.bind(params)
        except Exception as exc:
            if isinstance(exc, KeyError):  # (from the positional layout's itemgetter)
                exc = InvalidRequestError(f"A value is required for bind parameter {exc.args[0]!r}")
            if conn is None:
                raise exc from None
            # As in SQLAlchemy, a parameter that cannot be processed raises a StatementError.
            conn._handle_dbapi_exception(exc, self.text, params, None, None)

    def execute(
        self, driver: Any, bound: Any, conn: Connection | None = None, ahead: Sequence[HeldWrite] = ()
    ) -> Any:
        """Run with ``bound`` (parameters in the driver's form) on a new cursor of ``driver``;
        the cursor, to fetch its rows from (see :meth:`fetch`).

        ``ahead`` (saves waiting for this statement of ``conn``'s transaction, see
        :func:`~wop_langgraph.store.held.stored_ahead`) go first, in one pipeline with it."""
        cursor = None
        try:
            cursor = self.cursor(driver)
            if ahead or begins_with_statement(driver):
                # One round trip: the pipeline's end sends them all (and the transaction's BEGIN,
                # if this statement begins it) and waits for every result.
                with driver.pipeline():
                    run_held(cast(Connection, conn), ahead)
                    cursor.execute(self.text, bound)
            else:
                cursor.execute(self.text, bound)
        except BaseException as exc:
            _fail(conn, exc, self.text, bound, cursor)
        return cursor

    def fetch(self, cursor: Any, conn: Connection | None = None) -> tuple[_Rows, int]:
        """The rows of ``cursor`` (converted as SQLAlchemy would) and its rowcount; closes it."""
        found: Any
        count: int
        try:
            # (not ``cursor.description``: psycopg builds a column object per column to answer it)
            found = cursor.fetchall() if self.keys else []
            count = cursor.rowcount
            cursor.close()
        except BaseException as exc:
            _fail(conn, exc, self.text, None, cursor)
        convert = self.convert
        if convert is not None and found:
            found = [convert(row) for row in found]
        return found, count

    def run(
        self,
        driver: Any,
        params: Mapping[str, Any],
        conn: Connection | None = None,
        ahead: Sequence[HeldWrite] = (),
    ) -> tuple[_Rows, int]:
        """Bind ``params``, :meth:`execute` and :meth:`fetch`: the rows and the rowcount."""
        bound = self.bind(params) if conn is None else self.bound(params, conn)  # (a call less)
        return self.fetch(self.execute(driver, bound, conn, ahead), conn)

    def execute_many(
        self, driver: Any, params: Sequence[Mapping[str, Any]], conn: Connection | None = None
    ) -> None:
        """Run the statement once per parameter set (a statement that returns no rows)."""
        if len(params) == 1:
            self.fetch(self.execute(driver, self.bound(params[0], conn), conn), conn)
            return
        bound = [self.bound(p, conn) for p in params]
        cursor = None
        try:
            cursor = self.cursor(driver)
            cursor.executemany(self.text, bound)
            cursor.close()
        except BaseException as exc:
            _fail(conn, exc, self.text, bound, cursor)


def compile_statement(
    statement: Executable,
    dialect: Dialect,
    *,
    driver_form: bool = False,
    native: bool = True,
    schema_translate_map: Mapping[str | None, str | None] | None = None,
) -> Compiled:
    """Compile ``statement`` for ``dialect`` once, into a reusable :class:`Compiled`.

    ``driver_form``: its parameters will be given, and its rows taken, in the driver's form
    (see :attr:`Compiled.driver_form`). ``native=False``: in the dialect's own parameter style
    (to run through SQLAlchemy's ``exec_driver_sql``), not psycopg's ``$n`` (:func:`_raw`).
    ``schema_translate_map``: its schema names rendered as the map translates them.

    Raises:
        ValueError: the statement needs SQLAlchemy's per-execution processing.
    """
    raw = _raw(dialect) if native else None
    translating: dict[str, Any] = (
        {"schema_translate_map": schema_translate_map, "render_schema_translate": True}
        if schema_translate_map
        else {}
    )
    # Compiled without column keys: its SQL is the statement's own, whatever its parameters
    # are named (``Connection.execute`` adds columns named like them to a write's SET).
    compiled = cast(
        SQLCompiler, cast(ClauseElement, statement).compile(dialect=raw or dialect, **translating)
    )
    if (
        compiled.literal_execute_params
        or compiled.post_compile_params
        or compiled.insert_prefetch
        or compiled.update_prefetch
        or (compiled.schema_translate_map and not schema_translate_map)
    ):
        raise ValueError("this statement needs SQLAlchemy's per-execution processing")
    # name in the SQL -> how to find its value; like SQLAlchemy's ``construct_params``, the
    # caller's value is looked up by the parameter's key, then by its name.
    slots: dict[str, _Slot] = {}
    for param, name in compiled.bind_names.items():
        if param.callable is not None or param.type._is_tuple_type:
            raise ValueError(f"bind parameter {param.key!r}: not supported on the driver path")
        processor = None if driver_form else param.type.dialect_impl(dialect).bind_processor(dialect)
        slots[name] = _Slot(param.key, name, param.required, param.value, processor)
    keys, convert = _results(compiled, dialect, driver_form)
    names: tuple[str, ...] | None = None
    if compiled.positional:
        names = tuple(compiled.positiontup or ())
        bind = _positional([slots[name] for name in names])
    else:
        escaped = compiled.escaped_bind_names
        bind = _named([(escaped.get(n, n), slot) for n, slot in slots.items()])
    row = _row_type(keys)
    if raw is None:
        return Compiled(compiled.string, names, bind, keys, convert, row, driver_form, _DBAPI_CURSOR)
    cursor = _raw_cursor(binary=driver_form)
    return Compiled(compiled.string, names, bind, keys, convert, row, driver_form, cursor)


class DriverStatement:
    """A Core statement run on the driver connection of an open ``Connection``.

    Create it once (for instance from a ``functools.cache``'d builder of the construct) and
    share it: it compiles itself for each dialect it meets, on first use.
    """

    __slots__ = ("_compiled", "_last", "_shown", "statement")

    def __init__(self, statement: Executable) -> None:
        self.statement = statement
        self._compiled: WeakKeyDictionary[Dialect, Compiled] = WeakKeyDictionary()
        self._last: tuple[Dialect, Compiled] | None = None
        # (per dialect: per schema translate map, ``None`` without one)
        self._shown: WeakKeyDictionary[Dialect, dict[Any, Compiled]] = WeakKeyDictionary()

    def rows(self, conn: Connection, params: Mapping[str, Any]) -> _Rows:
        """Run the statement with ``params`` in ``conn``'s transaction; all its rows (or ``[]``)."""
        return self._run(conn, params)[1]

    def mappings(self, conn: Connection, params: Mapping[str, Any]) -> list[dict[str, Any]]:
        """:meth:`rows` as dicts keyed by result column name."""
        compiled, found, _ = self._run(conn, params)
        return [dict(zip(compiled.keys, row, strict=True)) for row in found]

    def named(self, conn: Connection, params: Mapping[str, Any]) -> list[Any]:
        """:meth:`rows` as named tuples (attribute access by result column name, like a ``Row``)."""
        compiled, found, _ = self._run(conn, params)
        if compiled.row is None:
            raise ValueError("the statement's result columns are not all identifiers")
        return [compiled.row._make(row) for row in found]

    def rowcount(self, conn: Connection, params: Mapping[str, Any]) -> int:
        """Run a statement that returns no rows; how many rows it changed."""
        return self._run(conn, params)[2]

    def rows_on(self, conn: Connection, driver: Any, params: Mapping[str, Any]) -> _Rows:
        """:meth:`rows` on ``driver``, what :func:`driver_connection` gave for ``conn`` (not
        ``None``) since its last statement: a caller running statements in a row looks the
        driver connection up once."""
        return self.compiled(conn.dialect).run(driver, params, conn, store_ahead(conn))[0]

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
            if params:  # (no parameter sets: nothing to run, as on the driver)
                shown = self.shown(conn)
                conn.exec_driver_sql(shown.text, [_driver_params(shown.bound(p, conn)) for p in params])
            return
        self.compiled(conn.dialect).execute_many(driver, params, conn)

    def compiled(self, dialect: Dialect) -> Compiled:
        """The statement compiled for ``dialect`` (the first time it is asked for)."""
        last = self._last
        if last is not None and last[0] is dialect:
            return last[1]
        compiled = self._compiled.get(dialect)
        if compiled is None:
            compiled = self._compiled.setdefault(dialect, compile_statement(self.statement, dialect))
        self._last = (dialect, compiled)
        return compiled

    def shown(self, conn: Connection) -> Compiled:
        """The statement as SQLAlchemy runs it for ``conn`` when something watches (see the
        module docstring): compiled as :meth:`compiled` is, in the dialect's own parameter
        style (not psycopg's ``$n``), with ``conn``'s schema translate map rendered."""
        translate = conn.get_execution_options().get("schema_translate_map") or None
        key = None if translate is None else tuple(sorted(translate.items(), key=repr))
        shown = self._shown.setdefault(conn.dialect, {})
        compiled = shown.get(key)
        if compiled is None:
            compiled = compile_statement(
                self.statement, conn.dialect, native=False, schema_translate_map=translate
            )
            shown[key] = compiled
        return compiled

    def _run(self, conn: Connection, params: Mapping[str, Any]) -> tuple[Compiled, _Rows, int]:
        """Run with ``params`` in ``conn``'s transaction: the compiled statement that ran, its
        rows (converted) and its rowcount. On the driver connection if ``conn`` allows it,
        else the same SQL and parameters through SQLAlchemy (``exec_driver_sql``, see the
        module docstring), which shows it to whatever watches."""
        driver = driver_connection(conn)
        if driver is None and conn.get_transaction() is None and not conn.closed:
            # What conn.execute would do first (SQLAlchemy's autobegin, its begin hooks and
            # all): a read on a connection not yet in a transaction then runs direct too.
            conn._autobegin()
            driver = driver_connection(conn)
        if driver is not None:
            compiled = self.compiled(conn.dialect)
            found, count = compiled.run(driver, params, conn, store_ahead(conn))
            return compiled, found, count
        storing(conn, store_ahead(conn))  # SQLAlchemy runs it: what waits goes first
        compiled = self.shown(conn)
        result = conn.exec_driver_sql(compiled.text, _driver_params(compiled.bound(params, conn)))
        rows: _Rows = result.all() if result.returns_rows else []
        convert = compiled.convert
        if convert is not None and rows:
            rows = [convert(row) for row in rows]
        return compiled, rows, int(result.rowcount)


def _driver_params(bound: Any) -> Any:
    """Parameters in the driver's form as ``exec_driver_sql`` takes them (a tuple, not a list)."""
    return tuple(bound) if isinstance(bound, list) else bound


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
    compiled = [(statement.compiled(conn.dialect), params) for statement, params in runs]
    if any(c.row is None for c, _ in compiled):
        raise ValueError("a statement's result columns are not all identifiers")
    bound = [c.bound(params, conn) for c, params in compiled]
    ahead = store_ahead(conn)
    cursors: list[Any] = []
    try:
        with driver.pipeline():  # its end sends them all and waits for every result
            run_held(conn, ahead)
            for (c, _), values in zip(compiled, bound, strict=True):
                cursors.append(c.execute(driver, values, conn))
            for send in also:
                send(conn)
    except BaseException as exc:
        for cursor in cursors:
            with suppress(Exception):  # the original error is the one to report
                cursor.close()
        _fail(conn, exc, compiled[max(len(cursors) - 1, 0)][0].text, None, None)
    return [
        [c.row._make(row) for row in c.fetch(cursor, conn)[0]]
        for cursor, (c, _) in zip(cursors, compiled, strict=True)
    ]


def _fail(conn: Connection | None, exc: BaseException, text: str, bound: Any, cursor: Any) -> Any:
    """Raise ``exc`` (a failure running ``text``) as ``conn`` raises it, if there is one."""
    if conn is not None and (
        isinstance(exc, conn.dialect.loaded_dbapi.Error) or not isinstance(exc, Exception)
    ):
        # Wrapped (IntegrityError, OperationalError ...), the connection invalidated if it
        # broke; always raises.
        conn._handle_dbapi_exception(exc, text, bound, cursor, None)
    if cursor is not None:
        with suppress(Exception):  # the original error is the one to report
            cursor.close()
    raise exc


_DBAPI_CURSOR: Callable[[Any], Any] = operator.methodcaller("cursor")


def _raw(dialect: Dialect) -> Dialect | None:
    """psycopg: ``dialect`` rendering PostgreSQL's own ``$1`` placeholders, else ``None``.

    psycopg turns ``%(name)s`` placeholders into ``$n`` by parsing the SQL on every execution
    of a statement longer than 4 kB or with more than 50 parameters (it caches only shorter
    ones): a log append of several events is both, and parsing it took about 0.2 ms, more than
    its round trip. Compiled once with ``$n`` placeholders and run on a raw cursor, which sends
    the SQL as it is, nothing is parsed. The copy differs only in its parameter style: the
    types' bind processors still come from ``dialect``.
    """
    if dialect.driver != "psycopg":
        return None
    numbered = copy.copy(dialect)
    numbered.paramstyle, numbered.positional = "numeric_dollar", True
    return numbered


@functools.cache
def _raw_cursor(*, binary: bool) -> Callable[[Any], Any]:
    """psycopg: ``driver -> a raw cursor`` (with results in binary format if ``binary``)."""
    import psycopg  # only ever on the psycopg dialect

    if not binary:
        return psycopg.RawCursor
    binary_format = psycopg.pq.Format.BINARY

    def cursor(driver: Any) -> Any:
        raw = psycopg.RawCursor(driver)
        raw.format = binary_format
        return raw

    return cursor


@functools.cache
def _row_type(keys: tuple[str, ...]) -> Any:
    """The named tuple type of rows with columns ``keys``, or ``None`` if they cannot name one."""
    names_ok = all(k.isidentifier() and not keyword.iskeyword(k) and not k.startswith("_") for k in keys)
    if not keys or not names_ok or len(set(keys)) != len(keys):
        return None
    return namedtuple("Row", keys)


def _results(
    compiled: SQLCompiler, dialect: Dialect, driver_form: bool
) -> tuple[tuple[str, ...], Callable[[Sequence[Any]], Sequence[Any]] | None]:
    """The result columns' names, and a row converter applying their types' result processors
    (``None`` when no column has one, or in the driver's form: the driver's row is the row)."""
    columns = compiled._result_columns
    keys = tuple(column.keyname for column in columns)
    if driver_form:
        return keys, None
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

    @property
    def by_name(self) -> bool:
        """Whether the caller's value is looked up by the name alone: it is the key, or the
        key is an anonymous one no caller passes (a ``literal()``, a value compiled in)."""
        return self.key == self.name or (not self.required and self.key.startswith("%("))


def _positional(layout: list[_Slot]) -> _Bind:
    """The values in placeholder order, each through its type's bind processor.

    A missing value raises ``KeyError`` (:meth:`Compiled.bound` tells which parameter)."""
    processors = tuple((i, slot.processor) for i, slot in enumerate(layout) if slot.processor is not None)
    if not layout:
        return lambda _params: ()
    if not all(slot.by_name for slot in layout):

        def gather(params: Mapping[str, Any]) -> list[Any]:
            return _processed([slot.value(params) for slot in layout], processors)

        return gather
    # The common case: itemgetter lays the values out in C, the caller's over the defaults.
    getter = operator.itemgetter(*(slot.name for slot in layout))
    defaults = {slot.name: slot.default for slot in layout if not slot.required}
    if len(layout) > 1 and not defaults and not processors:
        return getter  # a tuple of the values: nothing else to do
    single = len(layout) == 1

    def pick(params: Mapping[str, Any]) -> Sequence[Any]:
        found = getter({**defaults, **params} if defaults else params)
        if not processors:
            return (found,) if single else found
        return _processed([found] if single else list(found), processors)

    return pick


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

"""The base of every wire model: closed, camelCase on the wire, absent is not null.

Three rules hold for every model in :mod:`wop_langgraph.protocol`:

* **Closed.** An unknown member is refused (``extra="forbid"``), as the v2 schemas are closed.
  :class:`HatchModel` is the one exception: it carries the ``^(openwop-|x-|vendor\\.)``
  extension members that the official payload defs admit, opaquely, and refuses any other.
* **Strict JSON types.** ``"5"`` is not an integer and ``true`` is not a number, as in JSON
  Schema; an integral float such as ``5.0`` *is* an integer there, and here too.
* **Absent is not null.** An optional member is omitted when unset. A member typed as "any
  JSON value" (:data:`AnyJson`) keeps an explicit ``null`` through a round trip, because
  ``{"resumeValue": null}`` and ``{}`` are different facts. :meth:`WireModel.from_wire`
  refuses an explicit ``null`` for any other member, as the official schemas do.

:meth:`WireModel.from_wire` is the entry point for outside data: it raises
:class:`~wop_langgraph.protocol.errors.ValidationError` (``400 validation_error``) whose
``details`` name the failing JSON pointer and rule.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Annotated, Any, ClassVar, Final, Literal, Self, get_args, get_origin

import pydantic
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    JsonValue,
    SerializationInfo,
    SerializerFunctionWrapHandler,
    ValidationInfo,
    model_serializer,
    model_validator,
)
from pydantic.alias_generators import to_camel
from pydantic.fields import FieldInfo
from pydantic_core import PydanticCustomError

from wop_langgraph.protocol.errors import ValidationError

__all__ = [
    "ANY_JSON",
    "HATCH_PATTERN",
    "WIRE_CONTEXT",
    "WIRE_REQUIRED",
    "AnyJson",
    "HatchModel",
    "WireModel",
    "is_wire_required",
    "json_pointer",
    "member_error",
    "validation_error_from",
]

HATCH_PATTERN: Final = r"^(openwop-|x-|vendor\.)"
"""Extension members the official payload defs admit (RFC 0185 §B): carried, never interpreted."""
_HATCH_RE: Final = re.compile(HATCH_PATTERN)

WIRE_CONTEXT: Final[Mapping[str, bool]] = {"wop_wire": True}
"""Validation context marking a document that came over the wire (see :meth:`WireModel.from_wire`).

Wire validation also passes ``by_alias=True, by_name=False``: a wire document names members
by their wire names only, as the official schemas do.
"""

_MAX_LISTED_ERRORS: Final = 20


class _AnyJsonMarker:
    """Metadata marking a field whose value may be any JSON value, ``null`` included."""

    def __repr__(self) -> str:
        return "ANY_JSON"


ANY_JSON: Final = _AnyJsonMarker()
AnyJson = Annotated[JsonValue, ANY_JSON]
"""Any JSON value; an explicit ``null`` is kept and re-emitted, unlike an unset member."""


class _WireRequiredMarker:
    """Metadata marking a field the wire requires although Python callers may omit it."""

    def __repr__(self) -> str:
        return "WIRE_REQUIRED"


WIRE_REQUIRED: Final = _WireRequiredMarker()


def is_wire_required(field: FieldInfo) -> bool:
    """Whether the wire requires a field that has a Python default.

    True for a discriminator tag (a one-value ``Literal`` defaulting to that value, such as
    ``kind``) and for a field marked :data:`WIRE_REQUIRED` (such as the snapshot's
    ``eventLogSchemaVersion``). Such fields are always emitted, so the contract requires them.
    """
    if WIRE_REQUIRED in field.metadata:
        return True
    args = get_args(field.annotation)
    return get_origin(field.annotation) is Literal and len(args) == 1 and field.default == args[0]


def json_pointer(parts: tuple[int | str, ...] | list[int | str]) -> str:
    """The RFC 6901 JSON pointer for a path of member names and array indexes."""
    return "".join("/" + str(part).replace("~", "~0").replace("/", "~1") for part in parts)


def member_error(member: str, message: str, *, rule: str = "required") -> PydanticCustomError:
    """A validation error about one member, raised from a model validator.

    :func:`validation_error_from` appends ``member`` to the failing path, so the error names
    ``/refineFeedback`` rather than the object that lacks it.
    """
    return PydanticCustomError("wop_rule", message, {"member": member, "rule": rule})


def validation_error_from(
    exc: pydantic.ValidationError, *, what: str, union_tag: str | None = None
) -> ValidationError:
    """Translate a pydantic error into the project's ``400 validation_error``.

    Args:
        exc: The pydantic error.
        what: What was being validated, for the message (``"interrupt payload"``).
        union_tag: The discriminator member when the value was validated through a
            discriminated union (``"kind"``); pydantic puts the tag value first in each path.

    Returns:
        A :class:`ValidationError` whose ``details`` are ``{schema, path, rule, errors[]}``:
        ``path`` is the JSON pointer of the first failure, ``rule`` the JSON Schema keyword it
        breaks (``required``, ``pattern``, ``additionalProperties``, ...) or the project rule,
        and ``errors`` lists every failure the same way.
    """
    listed: list[dict[str, str]] = []
    for error in exc.errors(include_url=False):
        loc = list(error["loc"])
        kind = str(error["type"])
        if union_tag is not None:
            if kind in {"union_tag_invalid", "union_tag_not_found"}:
                loc.append(union_tag)
            elif loc:
                loc = loc[1:]
        ctx = error.get("ctx") or {}
        rule = _RULES.get(kind) or ("type" if kind.endswith("_type") else kind)
        if kind == "wop_rule":
            loc.append(str(ctx["member"]))
            rule = str(ctx.get("rule", "invalid"))
            loc.extend(part for part in str(ctx.get("pointer", "")).split("/")[1:])
        message = str(error["msg"]).removeprefix("Value error, ")
        listed.append({"path": json_pointer(loc), "rule": rule, "message": message})
    first = listed[0] if listed else {"path": "", "rule": "invalid", "message": str(exc)}
    where = first["path"] or "the document root"
    details: dict[str, Any] = {
        "schema": what,
        "path": first["path"],
        "rule": first["rule"],
        "errors": listed[:_MAX_LISTED_ERRORS],
    }
    return ValidationError(f"{what} is invalid at {where}: {first['message']}", details=details)


# pydantic error types -> the JSON Schema keyword a reader of the contract would look for.
_RULES: Final[Mapping[str, str]] = {
    "missing": "required",
    "union_tag_not_found": "required",
    "union_tag_invalid": "enum",
    "literal_error": "enum",
    "extra_forbidden": "additionalProperties",
    "string_pattern_mismatch": "pattern",
    "string_too_short": "minLength",
    "string_too_long": "maxLength",
    "too_short": "minItems",
    "too_long": "maxItems",
    "greater_than_equal": "minimum",
    "greater_than": "exclusiveMinimum",
    "less_than_equal": "maximum",
    "less_than": "exclusiveMaximum",
    "finite_number": "type",
    "value_error": "invalid",
}


def _wire_json_schema(schema: dict[str, Any], cls: type[Any]) -> None:
    # Runs for every subclass: states the wire-only requirements and cross-member rules that
    # pydantic cannot derive from the field types alone.
    fields = cls.model_fields
    required: list[str] = list(schema.get("required", []))
    for name in fields:
        alias = fields[name].alias or name
        if name in cls.__wire_required__ and alias not in required:
            required.append(alias)
    if required:
        schema["required"] = required
    if cls.model_config.get("extra") == "allow":
        schema["additionalProperties"] = False
        schema["patternProperties"] = {HATCH_PATTERN: {}}
    if cls.__wire_all_of__:
        schema["allOf"] = [dict(rule) for rule in cls.__wire_all_of__]


class WireModel(BaseModel):
    """A closed OpenWOP wire object: camelCase members, strict JSON types, absent is not null."""

    model_config = ConfigDict(
        extra="forbid",
        populate_by_name=True,
        alias_generator=to_camel,
        strict=True,
        frozen=True,
        allow_inf_nan=False,
        json_schema_extra=_wire_json_schema,
    )

    __wire_nullable__: ClassVar[frozenset[str]] = frozenset()
    __wire_required__: ClassVar[frozenset[str]] = frozenset()
    __wire_names__: ClassVar[Mapping[str, str]] = {}
    __wire_all_of__: ClassVar[tuple[Mapping[str, Any], ...]] = ()
    """Cross-member rules the model's validators enforce, as JSON Schema, for the contract."""

    @classmethod
    def __pydantic_init_subclass__(cls, **kwargs: Any) -> None:
        super().__pydantic_init_subclass__(**kwargs)
        fields = cls.model_fields
        cls.__wire_nullable__ = frozenset(name for name, f in fields.items() if ANY_JSON in f.metadata)
        cls.__wire_required__ = frozenset(name for name, f in fields.items() if is_wire_required(f))
        names: dict[str, str] = {}
        for name, f in fields.items():
            names[name] = name
            if f.alias:
                names[f.alias] = name
        cls.__wire_names__ = names

    @classmethod
    def from_wire(cls, data: object, *, what: str | None = None) -> Self:
        """Validate a JSON document received from outside.

        Args:
            data: The parsed JSON (``dict``/``list``/scalars).
            what: A name for error messages; defaults to the class name.

        Members are matched by their wire names only (``nodeId``, never ``node_id``).

        Returns:
            The validated model.

        Raises:
            ValidationError: The document breaks the contract; ``details.path`` is the JSON
                pointer of the first failure.
        """
        try:
            return cls.model_validate(data, context=WIRE_CONTEXT, by_alias=True, by_name=False)
        except pydantic.ValidationError as exc:
            raise validation_error_from(exc, what=what or cls.__name__) from exc

    def to_wire(self) -> dict[str, Any]:
        """The JSON document: wire names, unset members omitted, explicit JSON ``null`` kept."""
        return self.model_dump(mode="json", by_alias=True, exclude_none=True)

    @model_validator(mode="before")
    @classmethod
    def _hold_wire_documents_to_the_schema(cls, data: Any, info: ValidationInfo) -> Any:
        # The official schemas type optional members without `null` and require discriminators
        # such as `kind`; only a wire document is held to that, so Python callers may still pass
        # `None` to mean "absent" and leave a class's one possible `kind` implied.
        context = info.context
        if not (isinstance(context, Mapping) and context.get("wop_wire")) or not isinstance(data, Mapping):
            return data
        for name in cls.__wire_required__:
            alias = cls.model_fields[name].alias or name
            if alias not in data:
                raise member_error(alias, f"{alias} is required", rule="required")
        for key, value in data.items():
            if value is not None:
                continue
            field_name = cls.__wire_names__.get(key)
            if field_name is not None and field_name not in cls.__wire_nullable__:
                raise member_error(str(key), f"{key} must be omitted rather than null", rule="type")
        return data

    @model_serializer(mode="wrap")
    def _keep_explicit_nulls(self, handler: SerializerFunctionWrapHandler, info: SerializationInfo) -> Any:
        data = handler(self)
        if not (info.exclude_none and isinstance(data, dict)):
            return data
        fields = type(self).model_fields
        for name in self.model_fields_set:
            if name in self.__wire_nullable__ and getattr(self, name) is None:
                alias = fields[name].alias
                data[alias if (info.by_alias and alias) else name] = None
        for key, value in (self.__pydantic_extra__ or {}).items():
            if value is None:
                data[key] = None
        return data


class HatchModel(WireModel):
    """A closed payload that also carries ``openwop-*``, ``x-*`` and ``vendor.*`` members.

    The official v2 payload defs admit these extension members through ``patternProperties``
    and require a host to carry them, never interpret them, and never drop them silently. This
    model keeps them (any JSON value) in ``__pydantic_extra__`` and refuses every other
    unknown member.
    """

    model_config = ConfigDict(extra="allow")

    __pydantic_extra__: dict[str, JsonValue] = Field(init=False)

    @model_validator(mode="after")
    def _only_hatch_extras(self) -> Self:
        for key in self.__pydantic_extra__ or {}:
            if not _HATCH_RE.match(key):
                raise member_error(
                    key,
                    f"unknown member {key!r}; only openwop-*, x-* and vendor.* extensions are carried",
                    rule="additionalProperties",
                )
        return self

    @property
    def extensions(self) -> dict[str, JsonValue]:
        """The extension members carried opaquely, by their wire names."""
        return dict(self.__pydantic_extra__ or {})

"""Properties of the parameters schema exported from a pydantic model (`model_parameters_schema`).

Hypothesis builds random params models (scalars, lists, dicts, optionals, literals, enums,
nested and recursive models; constraints, aliases, defaults, descriptions), and each exported
schema is checked for shape (valid, no titles, no references unless recursive, `required`,
defaults, constraints) and for fidelity: what the schema accepts the model accepts, and what
the model dumps the schema accepts.

Instances are generated from the exported schema by `instances_of` below: it walks the schema's
structure itself and hands every scalar subschema (strings with patterns and lengths, numbers
with bounds) to `hypothesis_jsonschema.from_schema`. `from_schema` cannot take the whole
schema: it does not support recursive references, and its object strategy calls
`hypothesis.internal.conjecture.utils.many(...).more()`, which the hypothesis installed here
(6.170) no longer has (`AttributeError: 'many' object has no attribute 'more'`, with
hypothesis-jsonschema 0.23.1, its latest release).
Every generated instance is first checked against the schema with jsonschema_rs, so a mistake
in the generator fails loudly instead of testing the wrong thing.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Any, Literal, Optional

import jsonschema_rs
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.strategies import SearchStrategy
from hypothesis_jsonschema import from_schema
from pydantic import BaseModel, Field, create_model
from pydantic_core import PydanticUndefined, to_jsonable_python

from kosong.tooling import CallableTool2, ToolOk, ToolReturnValue
from kosong.tooling._schema import model_parameters_schema
from kosong.utils.jsonschema import deref_json_schema

SETTINGS = settings(
    max_examples=100,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)

# --- fixed types the generated models use ------------------------------------------------------


class Color(enum.Enum):
    """A colour."""

    RED = "red"
    GREEN = "green"


class Level(enum.IntEnum):
    LOW = 1
    HIGH = 2


class TreeNode(BaseModel):
    """A node with children: recursion through a list."""

    label: str
    children: list[TreeNode] = []


class ChainLink(BaseModel):
    """A linked list: recursion through an optional field, with an alias."""

    value: int = Field(alias="the-value")
    next: ChainLink | None = None


class Ping(BaseModel):
    """Mutual recursion: Ping -> Pong -> Ping."""

    pong: Pong | None = None


class Pong(BaseModel):
    ping: Ping | None = None
    count: int = 0


Ping.model_rebuild()

RECURSIVE_MODELS: tuple[type[BaseModel], ...] = (TreeNode, ChainLink, Ping)

# --- a small type language: what a field can be -----------------------------------------------


@dataclass(frozen=True)
class Ty:
    """A field type: `kind` plus its arguments (an item type, literal values, a model...)."""

    kind: str
    args: tuple[Any, ...] = ()

    @property
    def recursive(self) -> bool:
        if self.kind == "recursive":
            return True
        if self.kind == "model":
            return any(ty.recursive for _, ty in self.args[1])
        return any(isinstance(a, Ty) and a.recursive for a in self.args)


def annotation(ty: Ty) -> Any:
    """The Python annotation for `ty` (a nested model is created here)."""
    simple = {"int": int, "float": float, "str": str, "bool": bool}
    if ty.kind in simple:
        return simple[ty.kind]
    if ty.kind == "list":
        return list[annotation(ty.args[0])]
    if ty.kind == "dict":
        return dict[str, annotation(ty.args[0])]
    if ty.kind == "optional":
        return Optional[annotation(ty.args[0])]  # noqa: UP045 (both spellings are generated)
    if ty.kind == "union_none":
        return annotation(ty.args[0]) | None
    if ty.kind == "literal":
        return Literal[ty.args]  # Literal[("a", "b")] is Literal["a", "b"]
    if ty.kind in ("enum", "recursive"):
        return ty.args[0]
    if ty.kind == "model":
        name, fields = ty.args
        definitions: dict[str, Any] = {n: (annotation(t), ...) for n, t in fields}
        return create_model(name, **definitions)
    raise AssertionError(ty)


SCALARS = st.sampled_from([Ty("int"), Ty("float"), Ty("str"), Ty("bool")])
LITERALS = st.lists(
    st.sampled_from(["web", "news", "title", "$ref", "a-b", ""]),
    min_size=1,
    max_size=3,
    unique=True,
).map(lambda values: Ty("literal", tuple(values)))
LEAF_TYPES = (
    SCALARS
    | LITERALS
    | st.sampled_from([Ty("enum", (Color,)), Ty("enum", (Level,))])
    | st.sampled_from([Ty("recursive", (m,)) for m in RECURSIVE_MODELS])
)
# Field names of nested models; "title" and "$ref"-like names are the interesting ones.
NESTED_NAMES = st.sampled_from(["title", "type", "name", "definitions", "items", "x"])


def _compound(inner: SearchStrategy[Ty]) -> SearchStrategy[Ty]:
    wrapped = st.tuples(st.sampled_from(["list", "dict", "optional", "union_none"]), inner)
    nested = st.tuples(
        # Two nested models may share a name: pydantic then disambiguates their $defs keys.
        st.sampled_from(["Inner", "Nested"]),
        st.lists(st.tuples(NESTED_NAMES, inner), min_size=1, max_size=3, unique_by=lambda f: f[0]),
    )
    return st.builds(lambda kt: Ty(kt[0], (kt[1],)), wrapped) | st.builds(
        lambda nf: Ty("model", (nf[0], tuple(nf[1]))), nested
    )


TYPES: SearchStrategy[Ty] = st.recursive(LEAF_TYPES, _compound, max_leaves=4)
# Half the fields are plain scalars, so constraints (which only they and lists carry) are common.
FIELD_TYPES = st.one_of(SCALARS, TYPES)

# Dict keys and strings for defaults: data that looks like schema keywords must stay data.
# Pydantic (2.14) walks defaults as if they were schemas in model_json_schema, so two kinds of
# default are left out, as they fail there before kosong sees a schema: a "$defs" key
# ("'int' object has no attribute 'items'") and a "$ref" key holding a string that is not one of
# the model's own references (KeyError). A "$ref" key holding anything else is generated.
TRICKY_KEYS = st.sampled_from(["$ref", "definitions", "title", "type", "k"])


def _pydantic_can_export(default: dict[str, Any]) -> bool:
    return not isinstance(to_jsonable_python(default).get("$ref"), str)  # Color.RED is "red"


TRICKY_TEXT = st.sampled_from(["#/$defs/Color", "#/$defs/TreeNode", "#/nowhere", "title"])


def default_values(ty: Ty) -> SearchStrategy[Any] | None:
    """Valid Python defaults for `ty`, or None when it gets no default (models)."""
    if ty.kind == "int":
        return st.integers(-(2**40), 2**40)
    if ty.kind == "float":
        return st.floats(allow_nan=False, allow_infinity=False)
    if ty.kind == "str":
        return st.text(max_size=8) | TRICKY_TEXT
    if ty.kind == "bool":
        return st.booleans()
    if ty.kind == "literal":
        return st.sampled_from(ty.args)
    if ty.kind == "enum":
        return st.sampled_from(list(ty.args[0]))
    inner = default_values(ty.args[0]) if ty.args and isinstance(ty.args[0], Ty) else None
    if ty.kind == "list":
        return st.just([]) if inner is None else st.lists(inner, max_size=2)
    if ty.kind == "dict":
        if inner is None:
            return st.just({})
        return st.dictionaries(TRICKY_KEYS, inner, max_size=2).filter(_pydantic_can_export)
    if ty.kind in ("optional", "union_none"):
        return st.none() if inner is None else st.none() | inner
    return None  # nested and recursive models


# --- fields and models -------------------------------------------------------------------------


@dataclass(frozen=True)
class FieldSpec:
    name: str
    alias: str | None
    ty: Ty
    default: Any  # PydanticUndefined: required
    description: str | None
    constraints: dict[str, Any]  # JSON Schema keywords, e.g. {"minimum": 1}

    @property
    def key(self) -> str:
        """The property name in the schema (what the model must send)."""
        return self.alias if self.alias is not None else self.name


FIELD_NAMES = st.sampled_from(
    ["type", "description", "default", "items", "properties", "required", "enum", "definitions"]
)
FIELD_NAMES |= st.sampled_from(["ref", "query", "count", "max_results", "flag", "value", "x"])
ALIASES = st.none() | st.sampled_from(
    ["$ref", "$defs", "definitions", "max-results", "x-api-key", "with space", "a/b~c", "é"]
)
DESCRIPTIONS = st.none() | st.sampled_from(["How many.", "The $ref to follow", "title"])
PATTERNS = ["^[a-z]+$", "^[A-Z][a-z]*$", "[0-9]", "^x-", "^[a-f0-9]{2,4}$"]
"""Simple patterns only: no `\\d` or `\\w` (ASCII in ECMA 262, Unicode in Python and in pydantic's
Rust regex). `$` is fine: hypothesis-jsonschema never puts a newline before it (Python's `re`
would allow one; ECMA 262 and Rust do not). Every pattern is met by some string of 2 to 4
characters, so it combines with the length bounds drawn below."""

_PYDANTIC_CONSTRAINT = {
    "minimum": "ge",
    "maximum": "le",
    "minLength": "min_length",
    "maxLength": "max_length",
    "minItems": "min_length",
    "maxItems": "max_length",
    "pattern": "pattern",
}


@st.composite
def constraints_for(draw: st.DrawFn, ty: Ty) -> dict[str, Any]:
    """JSON Schema constraints that fit `ty` and are satisfiable."""
    out: dict[str, Any] = {}
    if ty.kind in ("int", "float"):
        number = st.integers(-100, 100) if ty.kind == "int" else st.floats(-100, 100)
        low, high = sorted([draw(number), draw(number)])
        if draw(st.booleans()):
            out["minimum"] = low
        if draw(st.booleans()):
            out["maximum"] = high
    elif ty.kind == "str":
        if draw(st.booleans()):
            out["minLength"] = draw(st.integers(0, 2))
        if draw(st.booleans()):
            out["maxLength"] = draw(st.integers(4, 8))
        if draw(st.booleans()):
            out["pattern"] = draw(st.sampled_from(PATTERNS))
    elif ty.kind == "list":
        if draw(st.booleans()):
            out["minItems"] = draw(st.integers(0, 1))
        if draw(st.booleans()):
            out["maxItems"] = draw(st.integers(2, 4))
    return out


@st.composite
def constrained_default(draw: st.DrawFn, ty: Ty, constraints: dict[str, Any]) -> Any:
    """A default for `ty` that meets `constraints`, or PydanticUndefined if there is none."""
    if ty.kind == "int":
        return draw(st.integers(constraints.get("minimum"), constraints.get("maximum")))
    if ty.kind == "float":
        low, high = constraints.get("minimum"), constraints.get("maximum")
        return draw(st.floats(low, high, allow_nan=False, allow_infinity=False))
    if ty.kind == "str" and constraints:
        return draw(from_schema({"type": "string", **constraints}))
    if ty.kind == "list" and constraints:
        inner = default_values(ty.args[0])
        low, high = constraints.get("minItems", 0), constraints.get("maxItems", 3)
        if inner is None:
            return [] if low == 0 else PydanticUndefined
        return draw(st.lists(inner, min_size=low, max_size=high))
    values = default_values(ty)
    return PydanticUndefined if values is None else draw(values)


@st.composite
def field_specs(draw: st.DrawFn, name: st.SearchStrategy[str] = FIELD_NAMES) -> FieldSpec:
    ty = draw(FIELD_TYPES)
    constraints = draw(constraints_for(ty))
    has_default = draw(st.booleans())
    return FieldSpec(
        name=draw(name),
        alias=draw(ALIASES),
        ty=ty,
        default=draw(constrained_default(ty, constraints)) if has_default else PydanticUndefined,
        description=draw(DESCRIPTIONS),
        constraints=constraints,
    )


@dataclass(frozen=True)
class ModelSpec:
    fields: tuple[FieldSpec, ...]

    @property
    def recursive(self) -> bool:
        return any(f.ty.recursive for f in self.fields)

    def build(self) -> type[BaseModel]:
        definitions: dict[str, Any] = {}
        for f in self.fields:
            extra = {_PYDANTIC_CONSTRAINT[k]: v for k, v in f.constraints.items()}
            info = Field(f.default, alias=f.alias, description=f.description, **extra)
            definitions[f.name] = (annotation(f.ty), info)
        return create_model("Params", **definitions)


@st.composite
def model_specs(draw: st.DrawFn) -> ModelSpec:
    """A params model that always has a property named "title" (from a name or an alias)."""
    title_field = draw(
        field_specs(name=st.just("title")).map(lambda f: _with(f, alias=None))
        | field_specs(name=st.just("heading")).map(lambda f: _with(f, alias="title"))
    )
    # FIELD_NAMES and ALIASES hold neither "title" nor "heading": no clash with title_field.
    others = draw(
        st.lists(field_specs(), max_size=5, unique_by=(lambda f: f.name, lambda f: f.key))
    )
    fields = [title_field, *others]
    draw(st.randoms()).shuffle(fields)
    return ModelSpec(tuple(fields))


def _with(f: FieldSpec, **changes: Any) -> FieldSpec:
    return FieldSpec(**{**f.__dict__, **changes})


# --- walking schemas ---------------------------------------------------------------------------

# JSON Schema 2020-12 keywords whose value is one subschema, a list of them, or a name map.
_ONE = ("items", "additionalProperties", "not", "if", "then", "else", "contains")
_ONE += ("propertyNames", "unevaluatedItems", "unevaluatedProperties")
_MANY = ("anyOf", "oneOf", "allOf", "prefixItems")
_MAP = ("properties", "patternProperties", "$defs", "definitions", "dependentSchemas")


def subschemas(schema: Any) -> list[dict[str, Any]]:
    """`schema` and every subschema in it: dicts in schema positions only, never data (a
    `default`) or names (the keys of `properties`)."""
    if not isinstance(schema, dict):
        return []
    found = [schema]
    for key, value in schema.items():
        if key in _ONE:
            found += subschemas(value)
        elif key in _MANY:
            found += [s for v in value for s in subschemas(v)]
        elif key in _MAP:
            found += [s for v in value.values() for s in subschemas(v)]
    return found


def resolve(root: dict[str, Any], ref: str) -> Any:
    """The target of a local `$ref` in `root` (KeyError/IndexError if there is none)."""
    assert ref.startswith("#"), ref
    node: Any = root
    for raw in ref[1:].split("/")[1:]:
        token = raw.replace("~1", "/").replace("~0", "~")
        node = node[int(token)] if isinstance(node, list) else node[token]
    return node


# --- instances from a schema -------------------------------------------------------------------

_TEXT = st.text(max_size=5)
JSON_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | _TEXT,
    lambda inner: st.lists(inner, max_size=2) | st.dictionaries(_TEXT, inner, max_size=2),
    max_leaves=4,
)
_STRUCTURE = {"properties", "additionalProperties", "items", "anyOf", "$ref", "enum", "const"}
_ANNOTATIONS = {"description", "default", "title", "examples", "$defs", "definitions"}
_MAX_REF_DEPTH = 2


def instances_of(schema: Any, root: dict[str, Any], depth: int = 0) -> SearchStrategy[Any] | None:
    """JSON values valid against `schema` (the subset pydantic emits), or None if there are none
    within the recursion budget (a `$ref` followed more than twice on one path)."""
    if schema is True or schema == {}:
        return JSON_VALUES
    if schema is False:
        return None
    if "$ref" in schema:
        if depth >= _MAX_REF_DEPTH:
            return None
        siblings = {k: v for k, v in schema.items() if k != "$ref"}
        return instances_of({**resolve(root, schema["$ref"]), **siblings}, root, depth + 1)
    if "anyOf" in schema:
        options = [instances_of(s, root, depth) for s in schema["anyOf"]]
        present = [o for o in options if o is not None]
        return st.one_of(present) if present else None
    if "const" in schema:
        return st.just(schema["const"])
    if "enum" in schema:
        return st.sampled_from(schema["enum"])
    kind = schema.get("type")
    if kind == "object":
        return _objects(schema, root, depth)
    if kind == "array":
        items = instances_of(schema.get("items", True), root, depth)
        low, high = schema.get("minItems", 0), schema.get("maxItems", schema.get("minItems", 0) + 3)
        if items is None:
            return st.just([]) if low == 0 else None
        return st.lists(items, min_size=low, max_size=high)
    leaf = {k: v for k, v in schema.items() if k not in _ANNOTATIONS}
    assert not set(leaf) & _STRUCTURE, leaf
    if kind == "integer":
        # JSON has no integer type: 3.0 is an integer to JSON Schema, and to pydantic in lax mode.
        exact_floats = from_schema(leaf).filter(_exact_as_float).map(_float)
        return from_schema(leaf) | exact_floats
    if kind == "number":
        # Integers are numbers too. Kept within 2**53: pydantic's float rejects an integer past
        # float range (10**400), which JSON Schema accepts as a number; no model sends that.
        integral = {**leaf, "type": "integer", "minimum": -(2**53), "maximum": 2**53}
        integral["minimum"] = max(integral["minimum"], leaf.get("minimum", -(2**53)))
        integral["maximum"] = min(integral["maximum"], leaf.get("maximum", 2**53))
        return from_schema(leaf) | from_schema(integral)
    return from_schema(leaf)


def _exact_as_float(i: Any) -> bool:
    return abs(i) < 2**53


def _float(i: Any) -> float:
    return float(i)


def _objects(
    schema: dict[str, Any], root: dict[str, Any], depth: int
) -> SearchStrategy[Any] | None:
    properties: dict[str, Any] = schema.get("properties", {})
    required = set(schema.get("required", []))
    additional = schema.get("additionalProperties", True)
    # A required name without a property schema takes any value additionalProperties allows.
    schemas = {name: additional for name in required} | properties
    strategies = {name: instances_of(s, root, depth) for name, s in schemas.items()}
    if any(strategies[name] is None for name in required):
        return None
    declared = st.fixed_dictionaries(
        {name: s for name, s in strategies.items() if name in required and s is not None},
        optional={n: s for n, s in strategies.items() if n not in required and s is not None},
    )
    extra_values = instances_of(additional, root, depth)
    if extra_values is None:
        return declared
    # Undeclared properties: pydantic ignores them (extra="ignore"), the schema allows them.
    extra_keys = st.text(max_size=6).filter(lambda k: k not in schemas)
    extras = st.dictionaries(extra_keys, extra_values, max_size=2)
    return st.builds(lambda d, e: {**e, **d}, declared, extras)


# --- the properties ----------------------------------------------------------------------------


def _check_shape(spec: ModelSpec, schema: dict[str, Any]) -> None:
    # (a) a valid JSON Schema
    assert jsonschema_rs.meta.is_valid(schema)
    # (b) no `title` keyword in any subschema; properties *named* "title" survive
    assert [s for s in subschemas(schema) if "title" in s] == []
    properties = schema["properties"]
    assert list(properties) == [f.key for f in spec.fields]
    assert "title" in properties
    # (c) references only where a recursive model closes a cycle, and then they resolve
    refs = [s["$ref"] for s in subschemas(schema) if "$ref" in s]
    defs = [s for s in subschemas(schema)[1:] if "$defs" in s or "definitions" in s]
    assert defs == []
    if spec.recursive:
        assert refs
        for ref in refs:
            assert isinstance(resolve(schema, ref), dict), ref
    else:
        assert refs == []
        assert "$defs" not in schema and "definitions" not in schema
    # (d) required: the fields without defaults, in order
    assert schema.get("required", []) == [
        f.key for f in spec.fields if f.default is PydanticUndefined
    ]
    # (e) defaults, descriptions, constraints and enums on the right property
    for f in spec.fields:
        prop = properties[f.key]
        if f.default is PydanticUndefined:
            assert "default" not in prop
        else:
            assert prop["default"] == to_jsonable_python(f.default)
        if f.description is not None:
            assert prop["description"] == f.description
        for keyword, value in f.constraints.items():
            assert prop[keyword] == value
        if f.ty.kind == "literal":
            values = list(f.ty.args)
            assert prop.get("enum", [prop.get("const")]) == values
        if f.ty.kind == "enum":
            assert prop["enum"] == [m.value for m in f.ty.args[0]]


@SETTINGS
@given(spec=model_specs())
def test_exported_schema_is_valid_flat_untitled_and_keeps_defaults_and_constraints(
    spec: ModelSpec,
) -> None:
    _check_shape(spec, model_parameters_schema(spec.build()))


def _check_fidelity(model: type[BaseModel], schema: dict[str, Any], instance: Any) -> BaseModel:
    validator = jsonschema_rs.validator_for(schema)
    # The generator's own check: the instance really is valid against the exported schema.
    assert validator.is_valid(instance), list(validator.iter_errors(instance))
    # Schema -> model: whatever the schema accepts, the model accepts.
    validated = model.model_validate(instance)
    # Model -> schema: what the model dumps (defaults filled in) the schema accepts.
    dumped = validated.model_dump(mode="json", by_alias=True)
    assert validator.is_valid(dumped), [e.message for e in validator.iter_errors(dumped)]
    return validated


@SETTINGS
@given(spec=model_specs(), data=st.data())
def test_what_the_exported_schema_accepts_the_model_accepts_and_dumps_back(
    spec: ModelSpec, data: st.DataObject
) -> None:
    model = spec.build()
    schema = model_parameters_schema(model)
    strategy = instances_of(schema, schema)
    assert strategy is not None
    _check_fidelity(model, schema, data.draw(strategy, label="instance"))


@pytest.mark.parametrize("model", RECURSIVE_MODELS, ids=lambda m: m.__name__)
@settings(max_examples=30, deadline=None)
@given(data=st.data())
def test_recursive_model_as_the_whole_params_keeps_resolvable_refs_and_round_trips(
    model: type[BaseModel], data: st.DataObject
) -> None:
    schema = model_parameters_schema(model)
    assert jsonschema_rs.meta.is_valid(schema)
    assert [s for s in subschemas(schema) if "title" in s] == []
    refs = [s["$ref"] for s in subschemas(schema) if "$ref" in s]
    assert refs
    for ref in refs:
        assert isinstance(resolve(schema, ref), dict), ref
    strategy = instances_of(schema, schema)
    assert strategy is not None
    _check_fidelity(model, schema, data.draw(strategy, label="instance"))


class ParamsEcho(CallableTool2[BaseModel]):
    """Any params model (given when the tool is made): returns the validated params, dumped."""

    name: str = "params_echo"
    description: str = "Echo the validated params."

    async def __call__(self, params: BaseModel) -> ToolReturnValue:
        return ToolOk(output="ok", extras={"params": params.model_dump(mode="json", by_alias=True)})


@settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(spec=model_specs(), data=st.data())
async def test_callable_tool2_exposes_the_exported_schema_and_accepts_what_it_allows(
    spec: ModelSpec, data: st.DataObject
) -> None:
    model = spec.build()
    tool = ParamsEcho(params=model)
    schema = tool.base.parameters
    assert schema == model_parameters_schema(model)
    _check_shape(spec, schema)
    strategy = instances_of(schema, schema)
    assert strategy is not None
    instance = data.draw(strategy, label="instance")
    expected = _check_fidelity(model, schema, instance)
    result = await tool.call(instance)
    assert isinstance(result, ToolOk), result
    assert result.extras == {"params": expected.model_dump(mode="json", by_alias=True)}


# --- regressions found by the properties above -------------------------------------------------


def test_properties_named_defs_definitions_or_ref_are_kept_in_the_exported_schema() -> None:
    # deref_json_schema dropped "$defs" and "definitions" keys wherever they were, property
    # names included: the schema then required a property it no longer described.
    class Params(BaseModel):
        defs: Color = Field(alias="$defs")
        definitions: list[int]
        ref: Color = Field(Color.RED, alias="$ref", description="which")
        options: dict[str, Any] = {"definitions": {"a": 1}, "title": "kept"}

    colors = {"type": "string", "description": "A colour.", "enum": ["red", "green"]}
    assert model_parameters_schema(Params) == {
        "type": "object",
        "properties": {
            "$defs": colors,
            "definitions": {"type": "array", "items": {"type": "integer"}},
            "$ref": {**colors, "description": "which", "default": "red"},
            "options": {
                "type": "object",
                "additionalProperties": True,
                "default": {"definitions": {"a": 1}, "title": "kept"},
            },
        },
        "required": ["$defs", "definitions"],
    }


def test_deref_leaves_data_that_looks_like_a_reference_alone() -> None:
    # Defaults, enums, consts and examples are values: a "$ref" in one is not followed (it
    # raised "points at nothing", or inlined a definition into the value), a "$defs" key in one
    # is not dropped, and a property named "$ref" is a name.
    data = {"$ref": "#/$defs/A", "$defs": 1, "definitions": [{"$ref": "#/nowhere"}]}
    schema = {
        "type": "object",
        "properties": {
            "$ref": {"$ref": "#/$defs/A"},
            "a": {"type": "object", "default": data, "examples": [data]},
            "b": {"enum": [data, "x"]},
            "c": {"const": data},
        },
        "$defs": {"A": {"type": "string"}},
    }
    assert deref_json_schema(schema) == {
        "type": "object",
        "properties": {
            "$ref": {"type": "string"},
            "a": {"type": "object", "default": data, "examples": [data]},
            "b": {"enum": [data, "x"]},
            "c": {"const": data},
        },
    }

"""RocketMQ's SQL92 message filter (FilterExpression type SQL, definition.proto's FilterType), parsed
with lark (an LALR grammar, GRAMMAR below) and evaluated over a message's properties. Source: the
v1 seed's FilterExpression and RocketMQ's filter module (SelectorParser.jj, the subset of JMS
selectors its ExpressionType.SQL92 documents) and its ComparisonExpression semantics.

**The subset.** Keywords are case-insensitive; property names are not.

    condition   := condition OR condition | condition AND condition | NOT condition | ( condition )
                 | operand (= | <> | < | <= | > | >=) operand
                 | operand [NOT] BETWEEN operand AND operand
                 | property [NOT] IN ('text', ...)
                 | property IS [NOT] NULL
                 | TRUE | FALSE
    operand     := property | 'text' ('' inside is one quote) | number (123, -4, 1.5, .5, 2E3, 10L)
                 | TRUE | FALSE
    property    := [A-Za-z_$][A-Za-z0-9_$]*

Precedence is SQL's: comparisons, then NOT, then AND, then OR. `--` and `/* */` comments are skipped.

**Refused when parsed** (INVALID_ARGUMENT, `InvalidArgumentError`, naming the problem and its
column), as RocketMQ's parser refuses them: a syntax error; an empty expression; a property or a
literal where a condition is expected (`a`, `NOT 'x'`); `< <= > >=` or BETWEEN with a text, TRUE,
FALSE or NULL literal (only numbers are ordered); `= NULL` (IS NULL is the test); TRUE or FALSE
compared with a text or number literal; BETWEEN bounds low > high; IN or IS NULL after a literal;
more than MAX_EXPRESSION_CHARS characters or MAX_DEPTH levels of nesting.

**Evaluation** is SQL's three-valued logic, as RocketMQ evaluates it: a comparison with a property
the message does not have is unknown (NULL), NOT unknown is unknown, and a message matches only
when the whole condition is TRUE (so `a <> 'x'` and `NOT a = 'x'` both leave out a message without
`a`; `a IS NULL` takes it). Property values are text: compared with a number (or with `<`, `>`,
BETWEEN) a value is read as a decimal number (`10` > 9, `1e3` = 1000); with TRUE or FALSE as
`true`/`false` in any case. A value that does not read as the other side's type makes that
comparison unknown (RocketMQ's broker drops the message on its evaluation error, so with OR this
filter can be more lenient, never stricter). Text compares with text exactly (`=`, `<>`, IN).
"""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from decimal import Decimal

from lark import Lark, Token, Transformer, Tree
from lark.exceptions import UnexpectedCharacters, UnexpectedEOF, UnexpectedInput, UnexpectedToken, VisitError
from weir.errors import InvalidArgumentError

MAX_EXPRESSION_CHARS = 4096
MAX_DEPTH = 64  # nested conditions (parentheses and NOTs; AND and OR chains are flat)

GRAMMAR = r"""
start: or_expr
?or_expr: and_expr (_OR and_expr)*
?and_expr: not_expr (_AND not_expr)*
?not_expr: _NOT not_expr -> negation
    | predicate
?predicate: operand COMPARATOR operand -> comparison
    | operand _BETWEEN operand _AND operand -> between
    | operand _NOT _BETWEEN operand _AND operand -> not_between
    | operand _IN "(" STRING ("," STRING)* ")" -> in_list
    | operand _NOT _IN "(" STRING ("," STRING)* ")" -> not_in_list
    | operand _IS NULL -> is_null
    | operand _IS _NOT NULL -> is_not_null
    | "(" or_expr ")"
    | operand
?operand: PROPERTY | STRING | number | TRUE | FALSE | NULL
number: SIGN? NUMBER
SIGN: "+" | "-"
COMPARATOR: "=" | "<>" | "<=" | ">=" | "<" | ">"
_OR: "OR"i
_AND: "AND"i
_NOT: "NOT"i
_BETWEEN: "BETWEEN"i
_IN: "IN"i
_IS: "IS"i
TRUE: "TRUE"i
FALSE: "FALSE"i
NULL: "NULL"i
PROPERTY: /[a-z_$][a-z0-9_$]*/i
STRING: /'(?:[^']|'')*'/
NUMBER: /(?:\d+\.\d*|\.\d+|\d+)(?:e[+-]?\d+)?l?/i
%ignore /\s+/
%ignore /--[^\n\r]*/
%ignore /\/\*(?:.|\n)*?\*\//
"""
_PARSER = Lark(GRAMMAR, parser="lalr")

# What the parser's terminal names mean, for error messages.
_TERMINALS = {
    "PROPERTY": "a property name",
    "STRING": "a 'text' literal",
    "NUMBER": "a number",
    "SIGN": "+ or -",
    "TRUE": "TRUE",
    "FALSE": "FALSE",
    "NULL": "NULL",
    "LPAR": "(",
    "RPAR": ")",
    "COMMA": ",",
    "COMPARATOR": "a comparison (= <> < <= > >=)",
    "_OR": "OR",
    "_AND": "AND",
    "_NOT": "NOT",
    "_BETWEEN": "BETWEEN",
    "_IN": "IN",
    "_IS": "IS",
    "$END": "the end",
}
_NUMBER_TEXT = re.compile(r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?")
ORDERING = frozenset({"<", "<=", ">", ">="})

Value = str | Decimal | bool
Properties = Mapping[str, str]


@dataclass(frozen=True, slots=True)
class Property:
    """A message property (a Weir header) by name; its value is text, None when missing."""

    name: str

    def value(self, properties: Properties) -> Value | None:
        return properties.get(self.name)


@dataclass(frozen=True, slots=True)
class Literal:
    """A constant: text, a number (Decimal), TRUE/FALSE, or NULL (None)."""

    constant: Value | None
    text: str  # as written, for error messages

    def value(self, properties: Properties) -> Value | None:
        return self.constant


Operand = Property | Literal


class Condition:
    """A parsed condition: `evaluate` gives True, False or None (unknown) for a message's properties."""

    def evaluate(self, properties: Properties) -> bool | None:
        raise NotImplementedError

    def matches(self, properties: Properties) -> bool:
        """Whether a message with these properties passes the filter: only a TRUE condition does."""
        return self.evaluate(properties) is True


@dataclass(frozen=True, slots=True)
class Constant(Condition):
    truth: bool

    def evaluate(self, properties: Properties) -> bool | None:
        return self.truth


@dataclass(frozen=True, slots=True)
class AnyOf(Condition):
    """OR: TRUE if any is TRUE, else unknown if any is unknown, else FALSE."""

    conditions: tuple[Condition, ...]

    def evaluate(self, properties: Properties) -> bool | None:
        answer: bool | None = False
        for condition in self.conditions:
            truth = condition.evaluate(properties)
            if truth is True:
                return True
            if truth is None:
                answer = None
        return answer


@dataclass(frozen=True, slots=True)
class AllOf(Condition):
    """AND: FALSE if any is FALSE, else unknown if any is unknown, else TRUE."""

    conditions: tuple[Condition, ...]

    def evaluate(self, properties: Properties) -> bool | None:
        answer: bool | None = True
        for condition in self.conditions:
            truth = condition.evaluate(properties)
            if truth is False:
                return False
            if truth is None:
                answer = None
        return answer


@dataclass(frozen=True, slots=True)
class Negation(Condition):
    """NOT: unknown stays unknown."""

    condition: Condition

    def evaluate(self, properties: Properties) -> bool | None:
        truth = self.condition.evaluate(properties)
        return None if truth is None else not truth


@dataclass(frozen=True, slots=True)
class Comparison(Condition):
    operator: str  # one of = <> < <= > >=
    left: Operand
    right: Operand

    def evaluate(self, properties: Properties) -> bool | None:
        return compare(self.operator, self.left.value(properties), self.right.value(properties))


@dataclass(frozen=True, slots=True)
class InList(Condition):
    """property IN ('a', ...): text equality with any of the values; unknown when the property is missing."""

    property: Property
    values: frozenset[str]

    def evaluate(self, properties: Properties) -> bool | None:
        value = properties.get(self.property.name)
        return None if value is None else value in self.values


@dataclass(frozen=True, slots=True)
class IsNull(Condition):
    """property IS NULL: the message does not have the property (never unknown)."""

    property: Property

    def evaluate(self, properties: Properties) -> bool | None:
        return self.property.name not in properties


def number_of(value: Value) -> Decimal | None:
    """A value as a finite decimal number: numbers as they are, text that reads as one; else None."""
    if isinstance(value, bool):
        return None
    if isinstance(value, Decimal):
        return value
    text = value.strip()
    return Decimal(text) if _NUMBER_TEXT.fullmatch(text) else None


def boolean_of(value: Value) -> bool | None:
    """A value as TRUE/FALSE: booleans as they are, text `true`/`false` in any case; else None."""
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in ("true", "false"):
        return value.strip().lower() == "true"
    return None


def compare(operator: str, left: Value | None, right: Value | None) -> bool | None:
    """`left operator right` in three-valued logic (see the module docstring): unknown (None) when
    either side is missing or does not read as the other side's type."""
    if left is None or right is None:
        return None
    pair: tuple[Value | None, Value | None]
    if operator in ORDERING or isinstance(left, Decimal) or isinstance(right, Decimal):
        pair = number_of(left), number_of(right)
    elif isinstance(left, bool) or isinstance(right, bool):
        pair = boolean_of(left), boolean_of(right)
    else:
        pair = left, right
    a, b = pair
    if a is None or b is None:
        return None
    if operator == "=":
        return a == b
    if operator == "<>":
        return a != b
    assert isinstance(a, Decimal) and isinstance(b, Decimal)
    return {"<": a < b, "<=": a <= b, ">": a > b, ">=": a >= b}[operator]


class _Refused(Exception):
    """A parsed expression RocketMQ's parser would refuse (the message says why)."""


def _condition(node: Condition | Operand) -> Condition:
    """A node in a condition's place: TRUE/FALSE are conditions; a property or another literal is not."""
    if isinstance(node, Condition):
        return node
    if isinstance(node, Literal) and isinstance(node.constant, bool):
        return Constant(node.constant)
    raise _Refused(
        f"{_shown(node)} alone is not a condition: compare it (a = 'x', a > 1, a IS NOT NULL), or use TRUE or FALSE"
    )


def _shown(operand: Operand) -> str:
    return f"property {operand.name}" if isinstance(operand, Property) else operand.text


def _ordered(operand: Operand, operator: str) -> Operand:
    """An operand of < <= > >= or BETWEEN: a property or a number literal."""
    if isinstance(operand, Literal) and not isinstance(operand.constant, Decimal):
        raise _Refused(f"{operator} orders numbers: {operand.text} is not a number")
    return operand


def _property(operand: Operand, what: str) -> Property:
    if not isinstance(operand, Property):
        raise _Refused(f"{what} tests a property, not {operand.text}")
    return operand


class _Builder(Transformer[Token, Condition]):
    """The parse tree as Condition nodes, refusing what RocketMQ's parser refuses (_Refused)."""

    def PROPERTY(self, token: Token) -> Property:
        return Property(str(token))

    def STRING(self, token: Token) -> Literal:
        return Literal(str(token)[1:-1].replace("''", "'"), str(token))

    def TRUE(self, token: Token) -> Literal:
        return Literal(True, "TRUE")

    def FALSE(self, token: Token) -> Literal:
        return Literal(False, "FALSE")

    def NULL(self, token: Token) -> Literal:
        return Literal(None, "NULL")

    def number(self, parts: list[Token]) -> Literal:
        text = "".join(str(part) for part in parts)
        return Literal(Decimal(text.rstrip("lL")), text)

    def start(self, children: list[Condition | Operand]) -> Condition:
        return _condition(children[0])

    def or_expr(self, children: list[Condition | Operand]) -> Condition:
        return AnyOf(tuple(_condition(child) for child in children))

    def and_expr(self, children: list[Condition | Operand]) -> Condition:
        return AllOf(tuple(_condition(child) for child in children))

    def negation(self, children: list[Condition | Operand]) -> Condition:
        return Negation(_condition(children[0]))

    def comparison(self, children: list[Operand | Token]) -> Condition:
        left, symbol, right = children
        assert not isinstance(left, Token) and not isinstance(right, Token)
        operator = str(symbol)
        if operator in ORDERING:
            return Comparison(operator, _ordered(left, operator), _ordered(right, operator))
        for side in (left, right):
            if isinstance(side, Literal) and side.constant is None:
                raise _Refused(f"{operator} NULL is never true: test a property with IS NULL or IS NOT NULL")
        if (
            isinstance(left, Literal)
            and isinstance(right, Literal)
            and isinstance(left.constant, bool) != isinstance(right.constant, bool)
        ):
            raise _Refused(f"{_shown(left)} cannot be compared with {_shown(right)}")
        return Comparison(operator, left, right)

    def between(self, children: list[Operand]) -> Condition:
        operand, low, high = (_ordered(child, "BETWEEN") for child in children)
        if isinstance(low, Literal) and isinstance(high, Literal):
            assert isinstance(low.constant, Decimal) and isinstance(high.constant, Decimal)
            if low.constant > high.constant:
                raise _Refused(f"BETWEEN {low.text} AND {high.text}: the low bound is above the high one")
        return AllOf((Comparison(">=", operand, low), Comparison("<=", operand, high)))

    def not_between(self, children: list[Operand]) -> Condition:
        return Negation(self.between(children))

    def in_list(self, children: list[Operand]) -> Condition:
        values = frozenset(str(child.constant) for child in children[1:] if isinstance(child, Literal))
        return InList(_property(children[0], "IN"), values)

    def not_in_list(self, children: list[Operand]) -> Condition:
        return Negation(self.in_list(children))

    def is_null(self, children: list[Operand]) -> Condition:
        return IsNull(_property(children[0], "IS NULL"))

    def is_not_null(self, children: list[Operand]) -> Condition:
        return Negation(IsNull(_property(children[0], "IS NOT NULL")))


def _depth(tree: Tree[Token]) -> int:
    """How deeply the parse tree nests (iteratively: a deep tree must not exhaust the stack here)."""
    deepest, stack = 0, [(tree, 1)]
    while stack:
        node, depth = stack.pop()
        deepest = max(deepest, depth)
        stack.extend((child, depth + 1) for child in node.children if isinstance(child, Tree))
    return deepest


def _syntax_error(expression: str, error: UnexpectedInput) -> InvalidArgumentError:
    """An InvalidArgumentError naming what was found where, and what would have been accepted."""
    column = getattr(error, "column", "?")
    expected: Collection[str] = ()
    if isinstance(error, UnexpectedCharacters):
        position = error.pos_in_stream or 0
        character = expression[position] if position < len(expression) else ""
        found = "a 'text' literal is never closed" if character == "'" else f"unexpected character {character!r}"
        expected = error.allowed or ()
    elif isinstance(error, UnexpectedEOF) or (isinstance(error, UnexpectedToken) and error.token.type == "$END"):
        found, column = "the expression ends too early", len(expression) + 1
        expected = error.expected
    else:
        assert isinstance(error, UnexpectedToken)
        found = f"unexpected {str(error.token)!r}"
        expected = error.expected
    wanted = ", ".join(sorted({_TERMINALS.get(name, name) for name in expected}))
    return InvalidArgumentError(
        f"filter_expression {expression!r}: SQL92 syntax error at column {column}: {found}"
        + (f"; expected {wanted}" if wanted else "")
    )


def parse(expression: str) -> Condition:
    """The condition of a SQL92 FilterExpression (the module docstring's subset). Errors:
    InvalidArgumentError (INVALID_ARGUMENT) naming the problem, as the module docstring lists."""
    if not expression.strip():
        raise InvalidArgumentError("filter_expression: an SQL92 expression is required (TRUE matches every message)")
    if len(expression) > MAX_EXPRESSION_CHARS:
        raise InvalidArgumentError(
            f"filter_expression: at most {MAX_EXPRESSION_CHARS} characters for SQL92, got {len(expression)}"
        )
    try:
        tree = _PARSER.parse(expression)
    except UnexpectedInput as error:
        raise _syntax_error(expression, error) from None
    if _depth(tree) > MAX_DEPTH:
        raise InvalidArgumentError(f"filter_expression: nested more than {MAX_DEPTH} levels deep")
    try:
        return _Builder().transform(tree)
    except VisitError as error:
        if isinstance(error.orig_exc, _Refused):
            raise InvalidArgumentError(f"filter_expression {expression!r}: {error.orig_exc}") from None
        raise

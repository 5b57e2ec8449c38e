"""Parse a ``shardSelector`` as a v1.36 kube-apiserver does: a CEL expression, then its AST checked.

The server parses the value with a CEL parser (no macros), then walks the tree: the root must be a
``shardRange(FIELD, 'START', 'END')`` call or ``||`` of such calls; anything else that is valid
CEL is refused with a message naming what was found; text that is not CEL is refused as a parse
error. This module restates that behaviour (reference: ``kep-5866-sharded-list-watch.md``) with
a small recursive-descent parser for CEL's expression grammar, so that the client validates a
selector before sending it and the test server refuses exactly what a real server refuses, with
the same message. ``parse`` returns ``(field, start, end)`` strings; ``informer.shards`` builds
typed values from them. A leaf: it imports nothing of the product.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Final

__all__ = ["ShardSelectorSyntaxError", "parse"]

SUPPORTED_FIELDS: Final = ("object.metadata.uid", "object.metadata.namespace")
SPACE_END: Final = "0x10000000000000000"  # 2^64, the only 17-digit bound

_MAX_CODE_POINTS: Final = 100_000  # cel-go's default expression size limit
_MAX_DEPTH: Final = 250  # cel-go's default recursion limit


class ShardSelectorSyntaxError(ValueError):
    """A selector the server refuses; ``why`` is the text after ``invalid shard selector: ``."""

    def __init__(self, why: str) -> None:
        super().__init__(f"invalid shard selector: {why}")
        self.why = why


# --- the tree: only what the walk distinguishes -------------------------------------------------
# cel-go's ast.ExprKind numbers, printed by the server's "%v" (the enum has no String method).
_CALL, _IDENT, _LIST, _LITERAL, _MAP, _SELECT, _STRUCT = 1, 3, 4, 5, 6, 7, 8


@dataclass(frozen=True, slots=True)
class _Node:
    kind: int
    name: str = ""  # function name (call), identifier, field name (select)
    args: tuple[_Node, ...] = ()  # call arguments (target excluded), select operand as args[0]
    value: object = None  # literal value
    go_type: str = ""  # literal's Go type as "%T" prints it


def _call(name: str, *args: _Node) -> _Node:
    return _Node(_CALL, name, args)


# --- lexer --------------------------------------------------------------------------------------
_TOKEN = re.compile(
    r"""
    (?P<ws>[ \t\n\r\f]+|//[^\n]*)
  | (?P<num>(?:[0-9]+\.[0-9]+(?:[eE][+-]?[0-9]+)?|[0-9]+[eE][+-]?[0-9]+
        |\.[0-9]+(?:[eE][+-]?[0-9]+)?)|0[xX][0-9a-fA-F]+[uU]?|[0-9]+[uU]?)
  | (?P<str>[bB]?[rR]?(?:\"\"\"|'''|"|')|[rR][bB](?:\"\"\"|'''|"|'))
  | (?P<ident>[_a-zA-Z][_a-zA-Z0-9]*)
  | (?P<op>==|!=|<=|>=|&&|\|\||\.\?|\[\?|[<>\[\]{}().,\-!?:+*/%])
    """,
    re.VERBOSE,
)
_ESCAPES: Final = {
    "a": "\a", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t", "v": "\v",
    "\\": "\\", "'": "'", '"': '"', "`": "`", "?": "?",
}  # fmt: skip
_KEYWORDS: Final = {"true", "false", "null", "in"}
_RESERVED: Final = frozenset(
    "as break const continue else for function if import let loop package namespace return var "
    "void while".split()
)


@dataclass(frozen=True, slots=True)
class _Tok:
    kind: str  # num, str, ident, op, eof
    text: str
    pos: int
    value: object = None
    go_type: str = ""


def _syntax(message: str) -> ShardSelectorSyntaxError:
    return ShardSelectorSyntaxError(f"CEL parse error: Syntax error: {message}")


def _read_string(text: str, pos: int, prefix_len: int) -> tuple[object, str, int]:
    """The literal starting at ``pos``: (value, Go type, end). Raw and bytes prefixes honoured."""
    prefix = text[pos : pos + prefix_len].lower()
    is_raw, is_bytes = "r" in prefix, "b" in prefix
    i = pos + prefix_len
    quote = text[i : i + 3] if text[i : i + 3] in ('"""', "'''") else text[i]
    i += len(quote)
    out: list[str] = []
    while True:
        if i >= len(text):
            raise _syntax(f"token recognition error at: '{text[pos:]}'")
        if text.startswith(quote, i):
            i += len(quote)
            break
        c = text[i]
        if c == "\n" and len(quote) == 1:
            raise _syntax(f"token recognition error at: '{text[pos:i]}'")
        if c != "\\" or is_raw:
            out.append(c)
            i += 1
            continue
        e = text[i + 1 : i + 2]
        if e in _ESCAPES:
            out.append(_ESCAPES[e])
            i += 2
        elif e in ("x", "X", "u", "U") or e.isdigit():
            width = {"x": 2, "X": 2, "u": 4, "U": 8}.get(e, 3)
            start = i + (1 if e.isdigit() else 2)
            digits = text[start : start + width]
            base = 8 if e.isdigit() else 16
            try:
                code = int(digits, base) if len(digits) == width else -1
            except ValueError:
                code = -1
            if code < 0 or code > 0x10FFFF:
                raise _syntax(f"token recognition error at: '{text[pos : start + width]}'")
            out.append(chr(code))
            i = start + width
        else:
            raise _syntax(f"token recognition error at: '{text[pos : i + 2]}'")
    s = "".join(out)
    if is_bytes:
        return s.encode("utf-8", "surrogatepass"), "[]uint8", i
    return s, "string", i


def _lex(text: str) -> list[_Tok]:
    toks: list[_Tok] = []
    pos = 0
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if m is None:
            raise _syntax(f"token recognition error at: '{text[pos]}'")
        kind = m.lastgroup or ""
        if kind == "ws":
            pos = m.end()
        elif kind == "str":
            prefix_len = len(m.group()) - len(m.group().lstrip("bBrR"))
            value, go_type, end = _read_string(text, pos, prefix_len)
            toks.append(_Tok("lit", text[pos:end], pos, value, go_type))
            pos = end
        elif kind == "num":
            t = m.group()
            if any(c in t for c in ".eE") and not t.lower().startswith("0x"):
                toks.append(_Tok("lit", t, pos, float(t), "float64"))
            elif t[-1] in "uU":
                toks.append(_Tok("lit", t, pos, int(t[:-1], 0), "uint64"))
            else:
                toks.append(_Tok("lit", t, pos, int(t, 0) if t[:2].lower() == "0x" else int(t)))
            pos = m.end()
        elif kind == "ident" and m.group() in _KEYWORDS:
            t = m.group()
            if t == "in":
                toks.append(_Tok("op", t, pos))
            else:
                value = {"true": True, "false": False, "null": None}[t]
                go = "structpb.NullValue" if t == "null" else "bool"
                toks.append(_Tok("lit", t, pos, value, go))
            pos = m.end()
        else:
            toks.append(_Tok(kind, m.group(), pos))
            pos = m.end()
    toks.append(_Tok("eof", "<EOF>", len(text)))
    return toks


# --- parser (CEL's grammar: expr, or, and, relation, calc, unary, member, primary) -------------
_RELATIONS: Final = {
    "==": "_==_", "!=": "_!=_", "<": "_<_", "<=": "_<=_", ">": "_>_", ">=": "_>=_", "in": "@in",
}  # fmt: skip


class _Parser:
    def __init__(self, toks: list[_Tok]) -> None:
        self.toks = toks
        self.i = 0
        self.depth = 0

    def peek(self, text: str) -> bool:
        t = self.toks[self.i]
        return t.kind == "op" and t.text == text

    def take(self, text: str) -> None:
        if not self.peek(text):
            t = self.toks[self.i]
            raise _syntax(f"mismatched input '{t.text}' expecting '{text}'")
        self.i += 1

    def enter(self) -> None:
        self.depth += 1
        if self.depth > _MAX_DEPTH:
            raise ShardSelectorSyntaxError(
                f"CEL parse error: expression recursion limit exceeded: {_MAX_DEPTH}"
            )

    def start(self) -> _Node:
        e = self.expr()
        t = self.toks[self.i]
        if t.kind != "eof":
            raise _syntax(f"extraneous input '{t.text}' expecting <EOF>")
        return e

    def expr(self) -> _Node:
        self.enter()
        e = self.or_()
        if self.peek("?"):
            self.i += 1
            a = self.or_()
            self.take(":")
            b = self.expr()
            e = _call("_?_:_", e, a, b)
        self.depth -= 1
        return e

    def or_(self) -> _Node:
        e = self.and_()
        while self.peek("||"):
            self.i += 1
            e = _call("_||_", e, self.and_())
        return e

    def and_(self) -> _Node:
        e = self.relation()
        while self.peek("&&"):
            self.i += 1
            e = _call("_&&_", e, self.relation())
        return e

    def relation(self) -> _Node:
        e = self.calc()
        while self.toks[self.i].kind == "op" and self.toks[self.i].text in _RELATIONS:
            op = _RELATIONS[self.toks[self.i].text]
            self.i += 1
            e = _call(op, e, self.calc())
        return e

    def calc(self) -> _Node:
        e = self.product()
        while self.peek("+") or self.peek("-"):
            op = f"_{self.toks[self.i].text}_"
            self.i += 1
            e = _call(op, e, self.product())
        return e

    def product(self) -> _Node:
        e = self.unary()
        while self.peek("*") or self.peek("/") or self.peek("%"):
            op = f"_{self.toks[self.i].text}_"
            self.i += 1
            e = _call(op, e, self.unary())
        return e

    def unary(self) -> _Node:
        if self.peek("!") or self.peek("-"):
            op = self.toks[self.i].text
            self.i += 1
            t = self.toks[self.i]
            if op == "-" and t.kind == "lit" and t.go_type in ("", "float64"):
                self.i += 1
                value = -t.value if isinstance(t.value, int | float) else t.value
                return self.member_tail(_Node(_LITERAL, value=value, go_type=t.go_type or "int64"))
            operand = self.unary()
            return _call("!_" if op == "!" else "-_", operand)
        return self.member_tail(self.primary())

    def member_tail(self, e: _Node) -> _Node:
        while True:
            if self.peek("."):
                self.i += 1
                t = self.toks[self.i]
                if t.kind != "ident":
                    raise _syntax(f"mismatched input '{t.text}' expecting IDENTIFIER")
                self.i += 1
                if self.peek("("):
                    e = _call(t.text, *self.arguments(")"))  # a member call: target dropped
                else:
                    e = _Node(_SELECT, t.text, (e,))
            elif self.peek("["):
                self.i += 1
                index = self.expr()
                self.take("]")
                e = _call("_[_]", e, index)
            elif self.peek("{") and e.kind in (_IDENT, _SELECT):
                self.i += 1
                self.entries("}", fields=True)
                e = _Node(_STRUCT)
            elif self.peek(".?") or self.peek("[?"):
                raise _syntax(f"unsupported syntax '{self.toks[self.i].text}'")
            else:
                return e

    def arguments(self, close: str) -> tuple[_Node, ...]:
        self.take("(" if close == ")" else "[")
        args: list[_Node] = []
        while not self.peek(close):
            args.append(self.expr())
            if not self.peek(","):
                break
            self.i += 1
        self.take(close)
        return tuple(args)

    def entries(self, close: str, *, fields: bool) -> None:
        while not self.peek(close):
            if fields:
                t = self.toks[self.i]
                if t.kind != "ident":
                    raise _syntax(f"mismatched input '{t.text}' expecting IDENTIFIER")
                self.i += 1
            else:
                self.expr()
            self.take(":")
            self.expr()
            if not self.peek(","):
                break
            self.i += 1
        self.take(close)

    def primary(self) -> _Node:
        t = self.toks[self.i]
        if t.kind == "op" and t.text == ".":
            self.i += 1
            t = self.toks[self.i]
            if t.kind != "ident":
                raise _syntax(f"mismatched input '{t.text}' expecting IDENTIFIER")
        if t.kind == "ident":
            self.i += 1
            if self.peek("("):
                return _call(t.text, *self.arguments(")"))
            if t.text in _RESERVED:
                raise ShardSelectorSyntaxError(f"CEL parse error: reserved identifier: {t.text}")
            return _Node(_IDENT, t.text)
        if t.kind == "lit":
            self.i += 1
            return _Node(_LITERAL, value=t.value, go_type=t.go_type or "int64")
        if t.kind == "op" and t.text == "(":
            self.i += 1
            e = self.expr()
            self.take(")")
            return e
        if t.kind == "op" and t.text == "[":
            self.arguments("]")
            return _Node(_LIST)
        if t.kind == "op" and t.text == "{":
            self.i += 1
            self.entries("}", fields=False)
            return _Node(_MAP)
        raise _syntax(f"mismatched input '{t.text}' expecting <expression>")


# --- the server's checks on the tree ------------------------------------------------------------
def go_quote(s: str) -> str:
    """``s`` as Go's ``%q`` writes it (double quotes, Go escapes, printable runes kept)."""
    out = ['"']
    for c in s:
        if c in ('"', "\\"):
            out.append("\\" + c)
        elif c in "\a\b\f\n\r\t\v":
            out.append({"\a": "\\a", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r",
                        "\t": "\\t", "\v": "\\v"}[c])  # fmt: skip
        elif c.isprintable():
            out.append(c)
        elif ord(c) < 0x80:
            out.append(f"\\x{ord(c):02x}")
        elif ord(c) < 0x10000:
            out.append(f"\\u{ord(c):04x}")
        else:
            out.append(f"\\U{ord(c):08x}")
    out.append('"')
    return "".join(out)


def _field_path(e: _Node) -> str:
    if e.kind == _IDENT:
        return e.name
    if e.kind == _SELECT:
        return f"{_field_path(e.args[0])}.{e.name}"
    raise ShardSelectorSyntaxError(
        "shardRange() first argument: expected field path (e.g. object.metadata.uid), "
        f"got expression kind {e.kind}"
    )


def _hex_bound(e: _Node, name: str) -> str:
    if e.kind != _LITERAL:
        raise ShardSelectorSyntaxError(
            f"{name} must be a string literal (e.g. '0xff'), got expression kind {e.kind}"
        )
    if not isinstance(e.value, str):
        raise ShardSelectorSyntaxError(f"{name} must be a string literal, got {e.go_type}")
    s = e.value
    if not s.startswith("0x"):
        raise ShardSelectorSyntaxError(f"{name} must have '0x' prefix, got {go_quote(s)}")
    digits = s[2:]
    if not digits:
        raise ShardSelectorSyntaxError(f"{name}: hex value is required after '0x'")
    size = len(digits.encode("utf-8", "surrogatepass"))
    if size > 17:
        raise ShardSelectorSyntaxError(
            f"{name}: hex value too long ({size} chars, max 17): {go_quote(digits)}"
        )
    for c in digits:
        if c not in "0123456789abcdef":
            raise ShardSelectorSyntaxError(
                f"{name}: invalid hex character {go_quote(c)} in {go_quote(s)}"
            )
    if len(digits) == 17:
        if s != SPACE_END:
            raise ShardSelectorSyntaxError(
                f"{name}: 17-digit hex value must be '{SPACE_END}' (2^64), got {go_quote(s)}"
            )
    elif len(digits) != 16:
        padded = "0x" + digits.rjust(16, "0")
        raise ShardSelectorSyntaxError(
            f"{name} must be a 0x-prefixed 16-digit hex value, got {go_quote(s)} "
            f"(did you mean {go_quote(padded)}?)"
        )
    return s


def _hex_less(a: str, b: str) -> bool:
    return (len(a), a) < (len(b), b)


def _shard_range(call: _Node) -> tuple[str, str, str]:
    if len(call.args) != 3:
        raise ShardSelectorSyntaxError(
            f"shardRange() requires exactly 3 arguments, got {len(call.args)}"
        )
    path = _field_path(call.args[0])
    if path not in SUPPORTED_FIELDS:
        raise ShardSelectorSyntaxError(
            f"unsupported field path {go_quote(path)}; supported: {', '.join(SUPPORTED_FIELDS)}"
        )
    start = _hex_bound(call.args[1], "hexStart")
    end = _hex_bound(call.args[2], "hexEnd")
    if not _hex_less(start, end):
        raise ShardSelectorSyntaxError(f"shard range start {start} must be less than end {end}")
    return path, start, end


def _walk(root: _Node) -> list[tuple[str, str, str]]:
    found: list[tuple[str, str, str]] = []
    stack = [root]
    while stack:  # depth first, left before right: the order the ranges were written
        e = stack.pop()
        if e.kind != _CALL:
            raise ShardSelectorSyntaxError(
                f"unexpected expression kind {e.kind}; expected shardRange() call or || operator"
            )
        if e.name == "_||_":
            stack.extend(reversed(e.args))
        elif e.name == "shardRange":
            found.append(_shard_range(e))
        else:
            raise ShardSelectorSyntaxError(
                f"unsupported function {go_quote(e.name)}; only shardRange() and || are allowed"
            )
    return found


def parse(text: str) -> list[tuple[str, str, str]]:
    """The ranges of a selector as ``(field, start, end)``, in the order written.

    Raises ``ShardSelectorSyntaxError`` with the message a v1.36 server puts in its 500 Status.
    """
    text = text.strip(" \t\n\v\f\r\x85\xa0")
    if not text:
        raise ShardSelectorSyntaxError(
            "empty shard selector is not allowed; omit the parameter for unfiltered lists"
        )
    size = len(text)
    if size > _MAX_CODE_POINTS:
        raise ShardSelectorSyntaxError(
            "CEL parse error: expression code point size exceeds limit: "
            f"size: {size}, limit {_MAX_CODE_POINTS}"
        )
    try:
        tree = _Parser(_lex(text)).start()
    except RecursionError:  # deep nesting of unary operators: deeper than any real selector
        raise ShardSelectorSyntaxError(
            f"CEL parse error: expression recursion limit exceeded: {_MAX_DEPTH}"
        ) from None
    ranges = _walk(tree)
    for field, _, _ in ranges[1:]:
        if field != ranges[0][0]:
            raise ShardSelectorSyntaxError(
                "all shard ranges must use the same field, got "
                f"{go_quote(ranges[0][0])} and {go_quote(field)}"
            )
    return ranges

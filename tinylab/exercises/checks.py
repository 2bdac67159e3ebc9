"""The check language of the exercises: a tiny expression language with its own parser.

Scenario files are data, so their checks must never run as Python: no eval, no exec, no
ast-evaluation. This module tokenizes and parses an expression into a small tree, type-checks
it against the names it may use, and evaluates it over measured values. Anything it does not
know is an ExprError, whose message names the problem and its column.

    expr     := or
    or       := and ("or" and)*
    and      := not ("and" not)*
    not      := "not" not | compare
    compare  := sum (("<" | "<=" | ">" | ">=" | "==" | "!=") sum)*    chains as in 0.5 < x < 2
    sum      := product (("+" | "-") product)*
    product  := unary (("*" | "/") unary)*
    unary    := "-" unary | primary
    primary  := NUMBER | STRING | "true" | "false" | NAME | CALL | "(" expr ")"
    NAME     := measured value, or "baseline." + measured value (the step's comparison run)
    CALL     := FUNCTION "(" [expr ("," expr)*] ")"

Functions: abs, ln, sqrt, min, max (numbers); contains(text, part); and the run functions, which
read the run: over its kernel table kernel_calls(part), kernel_ms(part), kernel_pct(part): calls,
total milliseconds and share of all kernel time of the kernels whose name contains `part`
(case-insensitive); over its hardware counters (rocprof-compute) top_bound(sel) ("memory" or
"compute"), top_intensity(sel) (FLOP per HBM byte), top_bw_pct(sel) and top_flops_pct(sel) (% of
the measured peak) of the kernel with the most time among those whose name contains `sel` or
whose category is `sel`; over its rocprof-compute speed-of-light tables sol_pct(sel, metric) and
sol_value(sel, metric) ("Pct of Peak" and "Avg" of the metric so named, e.g. "MFMA Utilization", of
the analyzed kernel whose name contains `sel` or whose category is `sel`); over its proton
instrumentation profile region_pct(kernel, region), the share of the kernel's measured cycles spent
in that region; and profile_files(part), the files its profilers wrote whose path holds `part`. The run functions take the "baseline."
prefix too: baseline.kernel_calls("copy").

Anatomy functions read the step's Triton kernels compiled for a GPU on this machine (what
`tinylab kernels --json` reports): compiled_regs, compiled_lds, compiled_spills,
compiled_occupancy (numbers) and compiled_limiter (text) of (kernel, target), or of (kernel,
target, param, value) recompiled with one parameter changed; their arguments are literals, so a
step's compiles are known before it runs. They take the "baseline." prefix: the kernel as the
baseline's step launches it.
"""

from __future__ import annotations

from functools import lru_cache

import contextlib
import math
import re
from dataclasses import dataclass
from typing import Any, Callable, Iterator

from tinylab.core.errors import UserError

NUM, STR, BOOL = "number", "text", "boolean"

MAX_LENGTH = 500
MAX_DEPTH = 40
BASELINE = "baseline."

#: Scalar functions: name -> (argument types, or None for "one or more numbers"; result type).
FUNCTIONS: dict[str, tuple[tuple[str, ...] | None, str]] = {
    "abs": ((NUM,), NUM),
    "ln": ((NUM,), NUM),
    "sqrt": ((NUM,), NUM),
    "min": (None, NUM),
    "max": (None, NUM),
    "contains": ((STR, STR), BOOL),
}
#: Run functions: they read the run (or its baseline) and take text arguments; name -> result type.
KERNEL_FUNCTIONS: dict[str, str] = {
    "kernel_calls": NUM, "kernel_ms": NUM, "kernel_pct": NUM,
    "top_bound": STR, "top_intensity": NUM, "top_bw_pct": NUM, "top_flops_pct": NUM,
    "sol_pct": NUM, "sol_value": NUM,
    "region_pct": NUM,
    "profile_files": NUM,
}
#: How many text arguments a run function takes, where not one: sol_pct(sel, metric).
RUN_FUNCTION_ARGS = {"sol_pct": 2, "sol_value": 2, "region_pct": 2}
#: Anatomy functions: they read the kernels compiled for a target; name -> result type. Their
#: arguments are one of ANATOMY_ARGS, literals only.
ANATOMY_FUNCTIONS: dict[str, str] = {
    "compiled_regs": NUM, "compiled_lds": NUM, "compiled_spills": NUM, "compiled_occupancy": NUM,
    "compiled_limiter": STR,
}
ANATOMY_ARGS = ((STR, STR), (STR, STR, STR, NUM))  # (kernel, target[, param, value])
#: Every function that reads something measured (a run, a recorded output, compiled kernels).
MEASURED_FUNCTIONS = {**KERNEL_FUNCTIONS, **ANATOMY_FUNCTIONS}
KEYWORDS = ("and", "or", "not", "true", "false")


class ExprError(UserError):
    """A check expression that cannot be parsed, typed or evaluated; `column` is 1-based or None."""

    def __init__(self, message: str, column: int | None = None):
        super().__init__(message if column is None else f"column {column}: {message}")
        self.problem = message
        self.column = column


# ----------------------------------------------------------------------------- tokens
_TOKEN = re.compile(
    r"""\s*(?:
        (?P<number>(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?)
      | (?P<string>"[^"\\\n]*"|'[^'\\\n]*')
      | (?P<name>[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*)
      | (?P<op><=|>=|==|!=|[-+*/<>(),])
    )""",
    re.VERBOSE,
)


@dataclass(frozen=True)
class Token:
    kind: str  # number, string, name, op, end
    text: str
    column: int


def tokenize(text: str) -> list[Token]:
    if not isinstance(text, str):
        raise ExprError("a check expression must be text")
    if len(text) > MAX_LENGTH:
        raise ExprError(f"expression longer than {MAX_LENGTH} characters")
    tokens: list[Token] = []
    pos = 0
    while pos < len(text):
        if text[pos:].strip() == "":
            break
        m = _TOKEN.match(text, pos)
        if m is None or m.end() == pos:
            column = pos + len(text[pos:]) - len(text[pos:].lstrip()) + 1
            raise ExprError(f"unexpected character {text[column - 1]!r}", column)
        kind = m.lastgroup or "op"
        tokens.append(Token(kind, m.group(kind), m.start(kind) + 1))
        pos = m.end()
    tokens.append(Token("end", "", len(text) + 1))
    return tokens


# ----------------------------------------------------------------------------- tree
@dataclass(frozen=True)
class Node:
    """One tree node. op: num, str, bool, name, call, neg, not, and, or, cmp, + - * /."""

    op: str
    args: tuple[Any, ...]
    column: int


class _Parser:
    def __init__(self, text: str):
        self.tokens = tokenize(text)
        self.i = 0
        self.depth = 0

    def peek(self) -> Token:
        return self.tokens[self.i]

    def take(self) -> Token:
        tok = self.tokens[self.i]
        self.i += 1
        return tok

    def expect(self, text: str) -> Token:
        tok = self.take()
        if tok.kind != "op" or tok.text != text:
            raise ExprError(f"expected {text!r}, found {_show(tok)}", tok.column)
        return tok

    def parse(self) -> Node:
        node = self.expr()
        tok = self.peek()
        if tok.kind != "end":
            raise ExprError(f"unexpected {_show(tok)} after a complete expression", tok.column)
        return node

    @contextlib.contextmanager
    def nested(self, tok: Token) -> Iterator[None]:
        """Bound the recursion, so a hostile expression is an ExprError, not a RecursionError."""
        self.depth += 1
        if self.depth > MAX_DEPTH:
            raise ExprError(f"expression nested deeper than {MAX_DEPTH} levels", tok.column)
        try:
            yield
        finally:
            self.depth -= 1

    def expr(self) -> Node:
        with self.nested(self.peek()):
            return self.binary_words("or", self.and_)

    def and_(self) -> Node:
        return self.binary_words("and", self.not_)

    def binary_words(self, word: str, operand: Callable[[], Node]) -> Node:
        node = operand()
        while self.peek().kind == "name" and self.peek().text == word:
            tok = self.take()
            node = Node(word, (node, operand()), tok.column)
        return node

    def not_(self) -> Node:
        tok = self.peek()
        if tok.kind == "name" and tok.text == "not":
            self.take()
            with self.nested(tok):
                return Node("not", (self.not_(),), tok.column)
        return self.compare()

    def compare(self) -> Node:
        first = self.sum()
        ops: list[str] = []
        operands = [first]
        while self.peek().kind == "op" and self.peek().text in ("<", "<=", ">", ">=", "==", "!="):
            ops.append(self.take().text)
            operands.append(self.sum())
        if not ops:
            return first
        return Node("cmp", (tuple(ops), tuple(operands)), first.column)

    def sum(self) -> Node:
        node = self.product()
        while self.peek().kind == "op" and self.peek().text in ("+", "-"):
            tok = self.take()
            node = Node(tok.text, (node, self.product()), tok.column)
        return node

    def product(self) -> Node:
        node = self.unary()
        while self.peek().kind == "op" and self.peek().text in ("*", "/"):
            tok = self.take()
            node = Node(tok.text, (node, self.unary()), tok.column)
        return node

    def unary(self) -> Node:
        tok = self.peek()
        if tok.kind == "op" and tok.text == "-":
            self.take()
            with self.nested(tok):
                return Node("neg", (self.unary(),), tok.column)
        return self.primary()

    def primary(self) -> Node:
        tok = self.take()
        if tok.kind == "number":
            value = float(tok.text)
            if not math.isfinite(value):
                raise ExprError(f"number {tok.text} is too large", tok.column)
            return Node("num", (value,), tok.column)
        if tok.kind == "string":
            return Node("str", (tok.text[1:-1],), tok.column)
        if tok.kind == "op" and tok.text == "(":
            node = self.expr()
            self.expect(")")
            return node
        if tok.kind == "name":
            if tok.text in ("true", "false"):
                return Node("bool", (tok.text == "true",), tok.column)
            if tok.text in KEYWORDS:
                raise ExprError(f"{tok.text!r} needs an operand before it", tok.column)
            if self.peek().kind == "op" and self.peek().text == "(":
                return self.call(tok)
            return Node("name", (tok.text,), tok.column)
        raise ExprError(f"expected a value, found {_show(tok)}", tok.column)

    def call(self, name: Token) -> Node:
        self.expect("(")
        args: list[Node] = []
        if not (self.peek().kind == "op" and self.peek().text == ")"):
            args.append(self.expr())
            while self.peek().kind == "op" and self.peek().text == ",":
                self.take()
                args.append(self.expr())
        self.expect(")")
        return Node("call", (name.text, tuple(args)), name.column)


def _show(tok: Token) -> str:
    return "the end of the expression" if tok.kind == "end" else repr(tok.text)


@lru_cache(maxsize=512)  # a step's checks are parsed again at every evaluation
def parse(text: str) -> Node:
    """The expression's tree; ExprError on any syntax problem."""
    return _Parser(text).parse()


# ----------------------------------------------------------------------------- types
def check_types(node: Node, names: dict[str, str], allow_baseline: bool,
                functions: frozenset[str] = frozenset(KERNEL_FUNCTIONS)) -> str:
    """Type of `node` given the known names' types and the measured `functions` it may call (by
    default the run functions); ExprError on unknown names or mismatches.

    Checking before any run means a scenario file with `"gemm" + 1` or an unknown name is
    rejected when it is loaded, not half-way through a learner's exercise.
    """
    op, args = node.op, node.args
    if op == "num":
        return NUM
    if op == "str":
        return STR
    if op == "bool":
        return BOOL
    if op == "name":
        return _name_type(args[0], node.column, names, allow_baseline)
    if op == "neg":
        _want(check_types(args[0], names, allow_baseline, functions), NUM, "'-'", args[0])
        return NUM
    if op == "not":
        _want(check_types(args[0], names, allow_baseline, functions), BOOL, "'not'", args[0])
        return BOOL
    if op in ("and", "or"):
        for arg in args:
            _want(check_types(arg, names, allow_baseline, functions), BOOL, f"'{op}'", arg)
        return BOOL
    if op in ("+", "-", "*", "/"):
        for arg in args:
            _want(check_types(arg, names, allow_baseline, functions), NUM, f"'{op}'", arg)
        return NUM
    if op == "cmp":
        ops, operands = args
        types = [check_types(o, names, allow_baseline, functions) for o in operands]
        for i, cmp in enumerate(ops):
            left, right = types[i], types[i + 1]
            if cmp in ("==", "!="):
                if left != right:
                    raise ExprError(f"'{cmp}' compares a {left} with a {right}", operands[i + 1].column)
            else:
                _want(left, NUM, f"'{cmp}'", operands[i])
                _want(right, NUM, f"'{cmp}'", operands[i + 1])
        return BOOL
    if op == "call":
        return _call_type(node, names, allow_baseline, functions)
    raise ExprError(f"unknown operation {op!r}", node.column)  # pragma: no cover - parser makes no others


def _name_type(name: str, column: int, names: dict[str, str], allow_baseline: bool) -> str:
    base = base_name(name)
    if name.startswith(BASELINE) and not allow_baseline:
        raise ExprError(f"{name!r} needs a baseline run: add a `baseline` preset to this step", column)
    if base not in names:
        hint = _closest(base, names)
        raise ExprError(f"unknown name {name!r}" + (f" (did you mean {hint!r}?)" if hint else ""), column)
    return names[base]


def _call_type(node: Node, names: dict[str, str], allow_baseline: bool, functions: frozenset[str]) -> str:
    fname, args = node.args
    base = base_name(fname)
    if base in MEASURED_FUNCTIONS:
        if base not in functions:
            where = "compiled kernels: give the check on = \"anatomy\"" if base in ANATOMY_FUNCTIONS \
                else "a run: a check with on = \"anatomy\" reads only compiled kernels"
            raise ExprError(f"{base}() reads {where}", node.column)
        if fname.startswith(BASELINE) and not allow_baseline:
            raise ExprError(f"{fname!r} needs a baseline run: add a `baseline` preset to this step", node.column)
        if base in ANATOMY_FUNCTIONS:
            return _anatomy_type(node, base, names, allow_baseline, functions)
        count = RUN_FUNCTION_ARGS.get(base, 1)
        if len(args) != count:
            raise ExprError(f"{fname}() takes {'one text argument' if count == 1 else f'{count} text arguments'}, "
                            f"got {len(args)}", node.column)
        for arg in args:
            _want(check_types(arg, names, allow_baseline, functions), STR, f"{fname}()", arg)
        return KERNEL_FUNCTIONS[base]
    if fname not in FUNCTIONS:
        known = ", ".join([*FUNCTIONS, *(f for f in MEASURED_FUNCTIONS if f in functions)])
        raise ExprError(f"unknown function {fname!r}: the functions are {known}", node.column)
    params, result = FUNCTIONS[fname]
    if params is None:
        if not args:
            raise ExprError(f"{fname}() needs at least one argument", node.column)
        for arg in args:
            _want(check_types(arg, names, allow_baseline, functions), NUM, f"{fname}()", arg)
        return result
    if len(args) != len(params):
        raise ExprError(f"{fname}() takes {len(params)} argument(s), got {len(args)}", node.column)
    for arg, want in zip(args, params):
        _want(check_types(arg, names, allow_baseline, functions), want, f"{fname}()", arg)
    return result


def _anatomy_type(node: Node, base: str, names: dict[str, str], allow_baseline: bool, functions: frozenset[str]) -> str:
    args = node.args[1]
    shapes = {len(a): a for a in ANATOMY_ARGS}
    if len(args) not in shapes:
        raise ExprError(f"{base}() takes (kernel, target) or (kernel, target, param, value), got {len(args)} "
                        "argument(s)", node.column)
    for arg, want in zip(args, shapes[len(args)]):
        _want(check_types(arg, names, allow_baseline, functions), want, f"{base}()", arg)
        if arg.op not in ("str", "num"):
            raise ExprError(f"{base}() takes literal arguments, such as \"attn_fwd\", \"gfx942\"", arg.column)
    return ANATOMY_FUNCTIONS[base]


def anatomy_calls(node: Node) -> Iterator[tuple[str, tuple]]:
    """Every anatomy function call of a checked tree: (name with its prefix, literal arguments)."""
    for leaf in measured_leaves(node):
        if leaf.op == "call" and base_name(leaf.args[0]) in ANATOMY_FUNCTIONS:
            yield leaf.args[0], tuple(a.args[0] for a in leaf.args[1])


def _want(got: str, want: str, where: str, node: Node) -> None:
    if got != want:
        raise ExprError(f"{where} needs a {want}, got a {got}", node.column)


def _closest(name: str, names: dict[str, str]) -> str | None:
    import difflib

    found = difflib.get_close_matches(name, list(names), n=1, cutoff=0.75)
    return found[0] if found else None


def measured_leaves(node: Node) -> Iterator[Node]:
    """The nodes that read the run: names and measured calls, in order of appearance."""
    if node.op == "name" or (node.op == "call" and base_name(node.args[0]) in MEASURED_FUNCTIONS):
        yield node
    elif node.op == "call":
        for arg in node.args[1]:
            yield from measured_leaves(arg)
    elif node.op == "cmp":
        for arg in node.args[1]:
            yield from measured_leaves(arg)
    elif node.op not in ("num", "str", "bool"):
        for arg in node.args:
            yield from measured_leaves(arg)


def leaf_text(node: Node) -> str:
    """How a measured leaf reads in a report: `fwd_ms`, `kernel_calls("copy")`."""
    if node.op == "name":
        return node.args[0]
    fname, args = node.args
    inner = ", ".join(f'"{a.args[0]}"' if a.op == "str" else f"{a.args[0]:g}" if a.op == "num" else "..."
                      for a in args)
    return f"{fname}({inner})"


def base_name(name: str) -> str:
    return name[len(BASELINE):] if name.startswith(BASELINE) else name


# ----------------------------------------------------------------------------- evaluation
class Missing(Exception):
    """A value the run did not measure; `name` says which, `reason` why."""

    def __init__(self, name: str, reason: str):
        super().__init__(f"{name}: {reason}")
        self.name = name
        self.reason = reason


class Unsupported(Missing):
    """A value this machine's tools cannot give at all (rocprof-compute's roofline on MI300 with ROCm
    6.2/6.3): the check is skipped with the reason, not failed, since no run here could pass it."""


def evaluate(node: Node, lookup: Callable[[str], Any], kernels: Callable[..., Any]) -> Any:
    """Value of `node`; names come from lookup(name), measured functions from kernels(fname,
    *arguments): kernels("kernel_calls", part), kernels("compiled_regs", kernel, target).

    Raises ExprError on arithmetic problems (division by zero, ln of a non-positive number,
    a value of the wrong type, a measured integer too large for a float) and lets `Missing` from
    the lookups through.
    """
    try:
        return _evaluate(node, lookup, kernels)
    except OverflowError:
        raise ExprError("a value too large to compute with", node.column) from None


def _evaluate(node: Node, lookup: Callable[[str], Any], kernels: Callable[..., Any]) -> Any:
    op, args = node.op, node.args
    if op in ("num", "str", "bool"):
        return args[0]
    if op == "name":
        return lookup(args[0])
    if op == "neg":
        return -_number(_evaluate(args[0], lookup, kernels), node)
    if op == "not":
        return not _boolean(_evaluate(args[0], lookup, kernels), node)
    if op == "and":
        return _boolean(_evaluate(args[0], lookup, kernels), node) and _boolean(_evaluate(args[1], lookup, kernels), node)
    if op == "or":
        return _boolean(_evaluate(args[0], lookup, kernels), node) or _boolean(_evaluate(args[1], lookup, kernels), node)
    if op in ("+", "-", "*", "/"):
        a = _number(_evaluate(args[0], lookup, kernels), args[0])
        b = _number(_evaluate(args[1], lookup, kernels), args[1])
        if op == "/" and b == 0:
            raise ExprError("division by zero", node.column)
        result = {"+": lambda: a + b, "-": lambda: a - b, "*": lambda: a * b, "/": lambda: a / b}[op]()
        if not math.isfinite(result):
            raise ExprError(f"'{op}' overflowed", node.column)
        return result
    if op == "cmp":
        ops, operands = args
        values = [_evaluate(o, lookup, kernels) for o in operands]
        for i, cmp in enumerate(ops):
            if not _compare(cmp, values[i], values[i + 1], operands[i + 1]):
                return False
        return True
    if op == "call":
        return _call(node, lookup, kernels)
    raise ExprError(f"unknown operation {op!r}", node.column)  # pragma: no cover


def _call(node: Node, lookup, kernels) -> Any:
    fname, arg_nodes = node.args
    values = [_evaluate(a, lookup, kernels) for a in arg_nodes]
    if base_name(fname) in KERNEL_FUNCTIONS:
        return kernels(fname, *(_text(v, a) for v, a in zip(values, arg_nodes)))
    if base_name(fname) in ANATOMY_FUNCTIONS:
        return kernels(fname, *[_number(v, a) if i == 3 else _text(v, a) for i, (v, a) in enumerate(zip(values, arg_nodes))])
    if fname == "contains":
        return _text(values[1], arg_nodes[1]).lower() in _text(values[0], arg_nodes[0]).lower()
    numbers = [_number(v, a) for v, a in zip(values, arg_nodes)]
    if fname == "abs":
        return abs(numbers[0])
    if fname == "min":
        return min(numbers)
    if fname == "max":
        return max(numbers)
    if fname in ("ln", "sqrt"):
        x = numbers[0]
        if x < 0 or (fname == "ln" and x == 0):
            raise ExprError(f"{fname}({x:g}) is undefined", node.column)
        return math.log(x) if fname == "ln" else math.sqrt(x)
    raise ExprError(f"unknown function {fname!r}", node.column)


def _compare(cmp: str, a: Any, b: Any, node: Node) -> bool:
    if cmp == "==":
        return _same_type(a, b, node) and a == b
    if cmp == "!=":
        return _same_type(a, b, node) and a != b
    a, b = _number(a, node), _number(b, node)
    return {"<": a < b, "<=": a <= b, ">": a > b, ">=": a >= b}[cmp]


def _same_type(a: Any, b: Any, node: Node) -> bool:
    if _type_of(a) != _type_of(b):
        raise ExprError(f"cannot compare a {_type_of(a)} with a {_type_of(b)}", node.column)
    return True


def _type_of(value: Any) -> str:
    if isinstance(value, bool):
        return BOOL
    if isinstance(value, (int, float)):
        return NUM
    if isinstance(value, str):
        return STR
    return type(value).__name__


def _number(value: Any, node: Node) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ExprError(f"expected a number, got a {_type_of(value)}", node.column)
    return value


def _boolean(value: Any, node: Node) -> bool:
    if not isinstance(value, bool):
        raise ExprError(f"expected true/false, got a {_type_of(value)}", node.column)
    return value


def _text(value: Any, node: Node) -> str:
    if not isinstance(value, str):
        raise ExprError(f"expected text, got a {_type_of(value)}", node.column)
    return value


def display_operand(node: Node) -> Node | None:
    """The measured side of a top-level comparison (the x of `0.5 < x < 2`): the value to show."""
    if node.op != "cmp":
        return None
    operands = node.args[1]
    return next((o for o in operands if o.op not in ("num", "str", "bool")), operands[0])

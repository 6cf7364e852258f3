"""Candidate TVMScript is checked before TVM parses it (issue 26 item 4). Pure Python, no tvm.

TVMScript's parser evaluates every annotation, decorator and expression of the text with Python's
`eval`, with the interpreter's builtins in reach, so a Relax or TIR text written by a model could run
any Python in the process that parses it (`R.Tensor((__import__("os").system(...), 3), "float32")`):
the agent loop, which holds the API keys, `leka bench eval --candidate`, the evaluator.

`check_tvmscript` reads the text with `ast` and accepts only the subset TVM's printer writes (and that
an agent editing such text needs): literals, operators, subscripts, the TVMScript namespaces
(`NAMESPACES`) and names the text binds itself (functions, parameters, assignments, loop and `with`
variables). Rejected, with the line: any other free name (every builtin: `__import__`, `open`, `eval`,
`getattr`, ...), attributes starting with `_`, lambdas, comprehensions, generators, f-strings, walrus,
`global` / `nonlocal`, imports other than `from tvm.script import ... as ...`, `try` / `raise` /
`del` / `async` / `yield` / `await`, star-arguments, class bases and keywords, and names the text binds
that shadow a builtin or a namespace (TVM looks a name up in the builtins when the text has not bound
it yet, so a builtin name bound in one function would be the real builtin in another).

Two builtins stay, each in the one form the printer writes: `range(...)` as the iterator of a TIR
`for` loop (TVM's TIR parser turns it into `T.serial`) and `float("inf")` / `float("-inf")` /
`float("nan")` (how `tvm_adapter.parseable_relax_text` writes non-finite constants).

The adapter (`tvm_adapter.importer.guarded_from_source`, the only caller of TVM's parser) also checks
each attribute chain on a namespace against the real namespace objects (`resolve`: no module outside
the DSL, e.g. `R.parser.tvm.os`) and parses with a namespace that has no builtins but `float`.
"""

from __future__ import annotations

import ast
import builtins
from collections.abc import Callable, Iterator

# What TVM's parser puts in scope (tvm.script.parser.core.entry._default_globals) less `tvm`
# (`tvm.os.system` is one attribute away), plus `metadata`, which printed modules with constants
# index (`metadata["relax.expr.Constant"][0]`). `TypeVar` is allowed only as `TypeVar("name")`, the
# printer's symbolic buffer offsets (`elem_offset = TypeVar("elem_offset")`).
NAMESPACES = frozenset({"I", "ir", "T", "tir", "tirx", "Tx", "R", "relax", "Axis", "metadata", "TypeVar"})

# `from tvm.script import X as Y`: the imports printed texts carry (as comments, or uncommented by an
# agent); TVM's parser binds nothing from them, its namespaces are preset.
_IMPORTABLE = frozenset({"ir", "relax", "tirx", "tir"})
_NONFINITE = frozenset({"inf", "-inf", "+inf", "nan", "-nan", "+nan", "infinity", "-infinity"})
_BUILTIN_NAMES = frozenset(dir(builtins))
# Builtins the text may bind anyway: the printer names PrimFuncs after their op (`def sum(...)`,
# `def max(...)`), and each of these, reached by TVM's fallback to the builtins, computes and returns.
_SHADOWABLE = frozenset({"abs", "all", "any", "max", "min", "pow", "round", "sum", "divmod", "len", "range",
                         "slice", "zip", "map", "filter", "sorted", "reversed", "bool", "int", "float",
                         "complex", "str", "list", "tuple", "dict", "set", "frozenset", "hash", "id",
                         "iter", "next", "format", "ascii", "bin", "hex", "oct", "chr", "ord", "repr",
                         "enumerate", "isinstance", "callable"})

_STATEMENTS = (ast.ClassDef, ast.FunctionDef, ast.Assign, ast.AnnAssign, ast.AugAssign, ast.Return, ast.For,
               ast.While, ast.If, ast.With, ast.Expr, ast.Assert, ast.Pass, ast.Break, ast.Continue)
_EXPRESSIONS = (ast.BoolOp, ast.BinOp, ast.UnaryOp, ast.IfExp, ast.Dict, ast.Set, ast.Compare, ast.Call,
                ast.Constant, ast.Attribute, ast.Subscript, ast.Name, ast.List, ast.Tuple, ast.Slice)
_PARTS = (ast.expr_context, ast.operator, ast.boolop, ast.unaryop, ast.cmpop, ast.keyword, ast.arguments,
          ast.arg, ast.withitem, ast.alias)

_NAMED = {ast.Lambda: "lambda", ast.ListComp: "a list comprehension", ast.SetComp: "a set comprehension",
          ast.DictComp: "a dict comprehension", ast.GeneratorExp: "a generator expression",
          ast.JoinedStr: "an f-string", ast.FormattedValue: "an f-string", ast.NamedExpr: "':=' (walrus)",
          ast.Starred: "a star-argument", ast.Global: "'global'", ast.Nonlocal: "'nonlocal'",
          ast.Import: "'import'", ast.Try: "'try'", ast.Raise: "'raise'", ast.Delete: "'del'",
          ast.Yield: "'yield'", ast.YieldFrom: "'yield from'", ast.Await: "'await'",
          ast.AsyncFunctionDef: "'async def'", ast.AsyncFor: "'async for'", ast.AsyncWith: "'async with'"}

# (chain of names, e.g. ("R", "nn", "conv2d"), used as a value rather than as the base of a longer
# chain) -> why it is refused, or None
Resolver = Callable[[tuple[str, ...], bool], "str | None"]


class ScriptRejected(ValueError):
    """The text uses a construct outside the TVMScript subset; it is not handed to TVM's parser.
    A ValueError, as TVM's own parse errors reach callers: an edit that fails, a `compile` result."""

    def __init__(self, line: int, what: str):
        super().__init__(f"TVMScript rejected before parsing: line {line}: {what}")
        self.line = line
        self.what = what


def check_tvmscript(text: str, resolve: Resolver | None = None) -> None:
    """Raise ScriptRejected for the first construct outside the subset (module docstring)."""
    try:
        tree = ast.parse(text)
    except SyntaxError as e:
        raise ScriptRejected(e.lineno or 0, f"syntax error: {e.msg}") from None
    _Checker(_bound_names(tree), resolve).visit(tree)


def _bound_names(tree: ast.AST) -> set[str]:
    """Every name the text binds anywhere. Scopes are not told apart: a name is free only if no part of
    the text binds it, which is safe because builtins and namespaces may not be bound (`_Checker`)."""
    out: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            out.add(node.name)
        elif isinstance(node, ast.arg):
            out.add(node.arg)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            out.add(node.id)
    return out


def _chain(node: ast.expr) -> tuple[str, ...] | None:
    """`R.nn.conv2d` -> ("R", "nn", "conv2d"); None unless names and attributes only."""
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    return (node.id, *reversed(parts))


def _str_call(node: ast.Call, func: str) -> str | None:
    """The string of `func("...")`, one literal argument and no keywords, else None."""
    if (isinstance(node.func, ast.Name) and node.func.id == func and not node.keywords and len(node.args) == 1
            and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str)):
        return node.args[0].value
    return None


class _Checker(ast.NodeVisitor):
    def __init__(self, bound: set[str], resolve: Resolver | None):
        self.bound = bound
        self.resolve = resolve
        self.line = 0

    def fail(self, node: ast.AST, what: str) -> None:
        raise ScriptRejected(getattr(node, "lineno", self.line), what)

    def visit(self, node: ast.AST) -> None:
        self.line = getattr(node, "lineno", self.line)
        if type(node) in _NAMED:
            self.fail(node, f"{_NAMED[type(node)]} is not TVMScript")
        if not isinstance(node, (ast.Module, ast.ImportFrom, *_STATEMENTS, *_EXPRESSIONS, *_PARTS)):
            self.fail(node, f"{type(node).__name__} is not TVMScript")
        super().visit(node)

    # --- bindings
    def _binding(self, node: ast.AST, name: str) -> None:
        if name.startswith("__"):
            self.fail(node, f"the name {name!r} (leading '__') is not allowed")
        if name in NAMESPACES:
            self.fail(node, f"the text may not rebind the TVMScript namespace {name!r}")
        if name in _BUILTIN_NAMES and name not in _SHADOWABLE:
            self.fail(node, f"the text may not bind the Python builtin name {name!r}")

    def visit_FunctionDef(self, node: ast.FunctionDef) -> None:
        self._binding(node, node.name)
        self.generic_visit(node)

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        # a base or metaclass is evaluated as Python (BasePyModule turns on @I.pyfunc)
        if node.bases or node.keywords:
            self.fail(node, f"class {node.name} may not have bases or keywords")
        self._binding(node, node.name)
        self.generic_visit(node)

    def visit_arguments(self, node: ast.arguments) -> None:
        if node.vararg or node.kwarg:
            self.fail(node.vararg or node.kwarg, "*args / **kwargs parameters are not TVMScript")
        self.generic_visit(node)

    def visit_arg(self, node: ast.arg) -> None:
        self._binding(node, node.arg)
        self.generic_visit(node)

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        for a in node.names:
            if node.module != "tvm.script" or node.level or a.name not in _IMPORTABLE or a.asname not in NAMESPACES:
                self.fail(node, f"'from {node.module or '.'} import {a.name}' is not a TVMScript namespace import")

    # --- names, attributes, calls
    def visit_Name(self, node: ast.Name) -> None:
        self._name(node, as_value=True)

    def _name(self, node: ast.Name, as_value: bool) -> None:
        if isinstance(node.ctx, ast.Store):
            self._binding(node, node.id)
        elif node.id.startswith("__"):
            self.fail(node, f"the name {node.id!r} (leading '__') is not allowed")
        elif node.id not in NAMESPACES and node.id not in self.bound:
            what = "the Python builtin" if node.id in _BUILTIN_NAMES else "the name"
            self.fail(node, f"{what} {node.id!r} is neither a TVMScript namespace nor defined in the text")
        elif node.id == "TypeVar":
            self.fail(node, "TypeVar is allowed only as TypeVar(\"name\")")
        elif node.id in NAMESPACES:
            self._resolve(node, (node.id,), as_value)

    def visit_Attribute(self, node: ast.Attribute) -> None:
        self._attribute(node, as_value=True)

    def _attribute(self, node: ast.Attribute, as_value: bool) -> None:
        """`as_value`: the expression is used as a value, not only as the base of a longer chain; a
        namespace module may only be a base (`R.nn.conv2d`, never `x = R.nn`), so that no alias
        reaches past `resolve`."""
        self.line = getattr(node, "lineno", self.line)
        if node.attr.startswith("_"):
            self.fail(node, f"the attribute {node.attr!r} (leading '_') is not allowed")
        chain = _chain(node)
        if chain is not None and chain[0] in NAMESPACES:
            self._resolve(node, chain, as_value)
        if isinstance(node.value, ast.Attribute):
            self._attribute(node.value, as_value=False)
        elif isinstance(node.value, ast.Name):
            self._name(node.value, as_value=False)
        else:
            self.visit(node.value)

    def _resolve(self, node: ast.AST, chain: tuple[str, ...], as_value: bool) -> None:
        why = self.resolve(chain, as_value) if self.resolve is not None else None
        if why:
            self.fail(node, f"{'.'.join(chain)}: {why}")

    def visit_Call(self, node: ast.Call) -> None:
        if any(k.arg is None for k in node.keywords):
            self.fail(node, "'**' arguments are not TVMScript")
        arg = _str_call(node, "float")
        if arg is not None and arg.strip().lower() in _NONFINITE:
            return  # the literal is all there is
        if _str_call(node, "TypeVar") is not None:
            return
        if isinstance(node.func, ast.Name) and node.func.id == "TypeVar":
            self.fail(node, "TypeVar is allowed only as TypeVar(\"name\")")
        self.generic_visit(node)

    def visit_For(self, node: ast.For) -> None:
        it = node.iter
        if isinstance(it, ast.Call) and isinstance(it.func, ast.Name) and it.func.id == "range":
            # TVM's TIR parser reads `range(...)` here itself; only its arguments are evaluated
            for child in (node.target, *it.args, *it.keywords, *node.body, *node.orelse):
                self.visit(child)
            return
        self.generic_visit(node)


def iter_chains(text: str) -> Iterator[tuple[str, ...]]:
    """Every attribute chain on a namespace in `text` (for tests and for surveying texts)."""
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.Attribute):
            chain = _chain(node)
            if chain is not None and chain[0] in NAMESPACES:
                yield chain

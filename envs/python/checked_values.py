"""What a test may compare: checkers a test is rewritten with, so that a value compared,
converted or tested true by the submission's own code fails the test. Sent ahead of the
Python env's scorer (scorer.py) and of the exported Harbor verifier (harbor_verify.py)."""

import ast
import os
import sys
import types

# A submitted function can return an object whose `==` is its own (`class E: __eq__ = lambda
# s, o: True`): every `assert f(x) == y` would pass. So a test runs rewritten: each value it
# reads (a name, a call, an attribute, an item) is checked, and each comparison is made after
# its operands are checked again (a later call of the submission's could have changed a class
# meanwhile). A value passes when no special method of its type (nor, for the built-in
# containers, of what they hold) is the submission's code: each is the interpreter's (C), or
# a function whose code object the harness compiled (the task's setup, the gold, the test) or
# a module of the standard library imported before any agent code ran defines — known by the
# code object itself, not by its file name, which `compile()` lets anyone choose. Otherwise
# the test fails, naming the type, for the gold as for the submission.

# What makes a value compare, test true or turn into another one a test compares.
_SPECIAL = ("__eq__", "__ne__", "__lt__", "__le__", "__gt__", "__ge__", "__bool__", "__len__",
            "__contains__", "__iter__", "__next__", "__getitem__", "__hash__", "__float__", "__int__",
            "__index__", "__complex__", "__round__", "__abs__", "__neg__", "__str__", "__repr__",
            "__format__", "__getattr__", "__getattribute__", "__class__", "__instancecheck__",
            "__subclasscheck__", "__reversed__", "__trunc__", "__floor__", "__ceil__")
_BUILTIN_KINDS = (types.BuiltinFunctionType, types.WrapperDescriptorType, types.MethodWrapperType,
                  types.MethodDescriptorType, types.ClassMethodDescriptorType, types.GetSetDescriptorType,
                  types.MemberDescriptorType)
_type_dict = type.__dict__["__dict__"].__get__
_type_mro = type.__dict__["__mro__"].__get__
_trusted_code = set()
_trusted_refs = []
_MAX_CHECKED = 1_000_000


def trust_code(code):
    """Marks `code` and every code object it holds (its functions', classes', lambdas') as the harness's."""
    stack = [code]
    while stack:
        c = stack.pop()
        if id(c) in _trusted_code:
            continue
        _trusted_code.add(id(c))
        _trusted_refs.append(c)
        stack.extend(k for k in c.co_consts if isinstance(k, types.CodeType))


def harness_code(text):
    """The harness's `text` (a task's setup, a gold) compiled and trusted; the text itself when it
    does not compile (running it then fails as it would have)."""
    try:
        code = compile(text, "<string>", "exec")
    except (SyntaxError, ValueError):
        return text
    trust_code(code)
    return code


def trust_standard_library():
    """Imports common standard modules and trusts the special methods of their classes (before any agent code runs)."""
    for name in ("collections", "fractions", "decimal", "datetime", "enum", "heapq", "itertools", "functools",
                 "operator", "re", "math", "string", "array", "statistics", "copy", "bisect", "random", "typing",
                 "dataclasses", "ipaddress", "pathlib", "numbers"):
        try:
            __import__(name)
        except ImportError:
            pass
    for module in list(sys.modules.values()):
        for value in list(getattr(module, "__dict__", {}).values()):
            if isinstance(value, type):
                for attr in _type_dict(value, type).values():
                    for f in (attr, getattr(attr, "__func__", None), getattr(attr, "fget", None)):
                        if isinstance(f, types.FunctionType):
                            trust_code(f.__code__)


class UncheckedValue(Exception):
    """A value the test reads is compared by the submission's own code."""


def own_special(klass):
    """The first special method of `klass` (its own dict) that is not the interpreter's or trusted code, as "name", or None."""
    for name, attr in _type_dict(klass, type).items():
        if name not in _SPECIAL or attr is None or isinstance(attr, _BUILTIN_KINDS):
            continue
        function = attr.__func__ if isinstance(attr, (staticmethod, classmethod)) else attr
        if isinstance(function, types.FunctionType) and id(function.__code__) in _trusted_code:
            continue
        return name
    return None


def check_value(value):
    """Returns `value` when nothing in it compares by the submission's code (see above); raises UncheckedValue otherwise."""
    # No agent code runs while a value is walked: a type found clean stays clean for this walk
    # (kept by id: a metaclass's __hash__ would be the agent's code).
    seen, clean, stack = set(), set(), [value]
    while stack:
        v = stack.pop()
        if id(v) in seen:
            continue
        seen.add(id(v))
        if len(seen) > _MAX_CHECKED:
            raise UncheckedValue(f"the test reads a value of more than {_MAX_CHECKED} objects: too many to check")
        mro = _type_mro(type(v), type)
        if id(type(v)) not in clean:
            for klass in mro:
                name = own_special(klass)
                if name is not None:
                    raise UncheckedValue(f"the test's value of type {type(v).__qualname__} is compared by the submission's own code ({klass.__qualname__}.{name})")
            clean.add(id(type(v)))
        if list in mro:
            stack.extend(list.__iter__(v))
        elif tuple in mro:
            stack.extend(tuple.__iter__(v))
        elif dict in mro:
            stack.extend(dict.keys(v))
            stack.extend(dict.values(v))
        elif set in mro:
            stack.extend(set.__iter__(v))
        elif frozenset in mro:
            stack.extend(frozenset.__iter__(v))
    return value


_COMPARE = {ast.Eq: lambda a, b: a == b, ast.NotEq: lambda a, b: a != b, ast.Lt: lambda a, b: a < b,
            ast.LtE: lambda a, b: a <= b, ast.Gt: lambda a, b: a > b, ast.GtE: lambda a, b: a >= b,
            ast.Is: lambda a, b: a is b, ast.IsNot: lambda a, b: a is not b,
            ast.In: lambda a, b: a in b, ast.NotIn: lambda a, b: a not in b}


def compare_checked(ops, *operands):
    """A chained comparison, each operand checked again first (a call after it could have changed its class)."""
    for operand in operands:
        check_value(operand)
    for i, op in enumerate(ops):
        if not _COMPARE[op](operands[i], operands[i + 1]):
            return False
    return True


class _Checked(ast.NodeTransformer):
    """Wraps what a test reads in `check(value)`, and each comparison in `compare(chain, *operands)`
    (`chain`: an index into `chains`, the comparison's operators)."""

    def __init__(self, check, compare):
        self.check, self.compare, self.chains = check, compare, []

    def wrap(self, node):
        return ast.copy_location(ast.Call(func=ast.Name(id=self.check, ctx=ast.Load()), args=[node], keywords=[]), node)

    def visit_Name(self, node):
        return self.wrap(node) if isinstance(node.ctx, ast.Load) else node

    def visit_Attribute(self, node):
        self.generic_visit(node)
        return self.wrap(node) if isinstance(node.ctx, ast.Load) else node

    def visit_Subscript(self, node):
        self.generic_visit(node)
        return self.wrap(node) if isinstance(node.ctx, ast.Load) else node

    def visit_Call(self, node):
        self.generic_visit(node)
        return self.wrap(node)

    def visit_Compare(self, node):
        self.generic_visit(node)
        self.chains.append(tuple(type(op) for op in node.ops))
        chain = ast.Constant(value=len(self.chains) - 1)
        call = ast.Call(func=ast.Name(id=self.compare, ctx=ast.Load()), args=[chain, node.left, *node.comparators], keywords=[])
        return ast.copy_location(call, node)


def prepare_test(text):
    """The test `text` rewritten with its reads and comparisons checked (see above) and compiled:
    (code, the checker's name, the comparer's name, the comparisons' operators); None when it
    does not parse (it then runs as it is, and fails as it would). Call it where no agent code
    has run: it uses ast, compile and the rewriter as that process has them, and an action that
    replaced one of them (`ast.parse = ...`) would otherwise choose the test that runs."""
    try:
        tree = ast.parse(text, "<test>", "exec")
    except SyntaxError:
        return None
    suffix = os.urandom(6).hex()
    transformer = _Checked(f"__ic_check_{suffix}", f"__ic_compare_{suffix}")
    tree = ast.fix_missing_locations(transformer.visit(tree))
    code = compile(tree, "<test>", "exec")
    trust_code(code)
    return code, transformer.check, transformer.compare, transformer.chains


def bind_test(prepared, namespace):
    """The code of a test `prepare_test` made, its checkers bound in `namespace`."""
    code, check, compare, chains = prepared
    namespace[check] = check_value
    namespace[compare] = lambda chain, *operands: compare_checked(chains[chain], *operands)
    return code


def checked_test(text, namespace):
    """`prepare_test` and `bind_test` at once; None when `text` does not parse."""
    prepared = prepare_test(text)
    return None if prepared is None else bind_test(prepared, namespace)

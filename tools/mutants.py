"""Mutation testing of the exercise self-checks: does each checker reject small wrong rewrites of its answer?

Each reference answer (a function in companion/checks/answers/) is rewritten in one small way at a time: an
operator swapped, a comparison loosened, an integer constant moved by one (a `dim`, an index, a size), a reduction
replaced (sum/mean, max/min), a call such as `clone()` unwrapped or a statement such as `zero_grad()` dropped, and
the side effects checkers used to miss: the global generator reseeded, autograd left off, the caller's first tensor
written into. A mutant counts only if it behaves differently from the reference (its result, the caller's arguments
afterwards, the global generator, grad mode) on the inputs the checker itself hands over and on random inputs of the
same shapes and dtypes; the checker should reject every such mutant. Survivors are listed.

    python tools/mutants.py                 # every checker, at most 60 mutants each
    python tools/mutants.py --only check_multi_hot --limit 20
"""

import argparse
import ast
import contextlib
import copy
import inspect
import io
import sys
import textwrap
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from companion.exercises import GLOBAL_STATE, WrongAnswer  # noqa: E402

SWAPS = {ast.Add: ast.Sub, ast.Sub: ast.Add, ast.Mult: ast.Div, ast.Div: ast.Mult, ast.Pow: ast.Mult}
COMPARE_SWAPS = {ast.Lt: ast.LtE, ast.LtE: ast.Lt, ast.Gt: ast.GtE, ast.GtE: ast.Gt, ast.Eq: ast.NotEq}
REDUCTIONS = {"sum": "mean", "mean": "sum", "max": "min", "min": "max", "amax": "amin", "amin": "amax"}
UNWRAPPED = {"clone", "detach", "contiguous", "float", "double"}  # x.clone() -> x
DROPPED = {"zero_grad", "eval", "train", "backward", "step", "zero_", "manual_seed"}  # the statement goes
# Statements run after the result is computed: side effects on the caller that a checker of values alone lets through.
SIDE_EFFECTS = {
    "reseed the global generator": "torch.manual_seed(0)",
    "leave autograd off": "torch.set_grad_enabled(False)",
    "write into the caller's first tensor": (
        "import torch as _t\n"
        "for _a in [{first}] if isinstance({first}, _t.Tensor) and {first}.is_floating_point() else []:\n"
        "    _a.data.add_(0.5)"
    ),
}


def mutation_sites(tree: ast.AST) -> list[tuple[ast.AST, str]]:
    """Every place one mutation can go, with what it does there (in walk order, so indices are stable)."""
    sites = []
    for node in ast.walk(tree):
        if isinstance(node, ast.BinOp) and type(node.op) in SWAPS:
            sites.append((node, f"{type(node.op).__name__} -> {SWAPS[type(node.op)].__name__}"))
        elif isinstance(node, ast.Compare) and type(node.ops[0]) in COMPARE_SWAPS:
            sites.append((node, f"{type(node.ops[0]).__name__} -> {COMPARE_SWAPS[type(node.ops[0])].__name__}"))
        elif isinstance(node, ast.Constant) and type(node.value) is int:
            sites += [(node, f"{node.value} -> {node.value + 1}"), (node, f"{node.value} -> {node.value - 1}")]
        elif isinstance(node, ast.Attribute) and node.attr in REDUCTIONS:
            sites.append((node, f".{node.attr} -> .{REDUCTIONS[node.attr]}"))
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in UNWRAPPED:
            sites.append((node, f"drop .{node.func.attr}()"))
        elif isinstance(node, ast.Expr) and isinstance(node.value, ast.Call):
            name = getattr(node.value.func, "attr", getattr(node.value.func, "id", ""))
            if name in DROPPED:
                sites.append((node, f"drop the {name}() statement"))
    return sites


class Mutate(ast.NodeTransformer):
    """Apply the mutation `what` at the `index`-th site of a fresh parse."""

    def __init__(self, target: ast.AST, what: str):
        self.target, self.what = target, what

    def generic_visit(self, node: ast.AST) -> ast.AST | None:
        if node is not self.target:
            return super().generic_visit(node)
        if isinstance(node, ast.BinOp):
            node.op = SWAPS[type(node.op)]()
        elif isinstance(node, ast.Compare):
            node.ops = [COMPARE_SWAPS[type(node.ops[0])](), *node.ops[1:]]
        elif isinstance(node, ast.Constant):
            node.value = int(self.what.split(" -> ")[1])
        elif isinstance(node, ast.Attribute):
            node.attr = REDUCTIONS[node.attr]
        elif isinstance(node, ast.Call):
            return node.func.value
        elif isinstance(node, ast.Expr):
            return ast.Pass()
        return node


def compiled(tree: ast.AST, fn: Callable) -> Callable | None:
    """The function `tree` defines, in `fn`'s module namespace, or None if it does not compile."""
    namespace = dict(fn.__globals__)
    try:
        exec(compile(ast.fix_missing_locations(tree), f"<mutant of {fn.__name__}>", "exec"), namespace)  # noqa: S102
    except Exception:  # noqa: BLE001 - a mutant that does not even compile is not a test of the checker
        return None
    return namespace[fn.__name__]


def mutants(fn: Callable) -> Iterator[tuple[str, Callable]]:
    """(what changed, mutant function) for every mutation site of `fn`'s source, then every side effect."""
    source = textwrap.dedent(inspect.getsource(fn))
    count = len(mutation_sites(ast.parse(source)))
    for index in range(count):
        tree = ast.parse(source)
        target, what = mutation_sites(tree)[index]
        mutant = compiled(Mutate(target, what).visit(tree), fn)
        if mutant is not None:
            yield f"line {getattr(target, 'lineno', '?')}: {what}", mutant
    parameters = list(inspect.signature(fn).parameters)
    for what, statement in SIDE_EFFECTS.items():
        if "{first}" in statement and not parameters:
            continue
        tree = ast.parse(source)
        body = tree.body[0].body
        effect = ast.parse(statement.format(first=parameters[0] if parameters else "")).body
        if isinstance(body[-1], ast.Return) and body[-1].value is not None:  # after the result is computed
            keep = ast.parse("_mutant_result = None").body[0]
            keep.value = body[-1].value
            body[-1:] = [keep, *effect, ast.parse("return _mutant_result").body[0]]
        else:
            body.extend(effect)
        if (mutant := compiled(tree, fn)) is not None:
            yield what, mutant


def recorded_calls(check: Callable, reference: Callable) -> list[tuple]:
    """The argument tuples the checker hands to the reference answer (copies, taken before the call)."""
    calls = []

    def recording(*args):
        calls.append(copy.deepcopy(args))
        return reference(*args)

    with contextlib.redirect_stdout(io.StringIO()):
        check(recording)
    return calls


def randomised(args: tuple, generator: torch.Generator) -> tuple:
    """The same arguments with every floating tensor redrawn (same shape and dtype); integers are kept."""

    def redraw(value):
        if isinstance(value, torch.Tensor) and value.is_floating_point():
            fresh = torch.randn(value.shape, generator=generator, dtype=torch.float64).to(value.dtype)
            return fresh.requires_grad_(value.requires_grad) if value.is_leaf else fresh
        return copy.deepcopy(value)

    return tuple(redraw(a) for a in args)


def outcome(fn: Callable, args: tuple) -> object:
    """What calling `fn` on a copy of `args` leads to: its result (or the exception type it raises), the arguments
    afterwards, whether it left the global generator where it was, and grad mode."""
    args = copy.deepcopy(args)
    grad = torch.is_grad_enabled()
    with contextlib.redirect_stdout(io.StringIO()), torch.random.fork_rng():
        torch.manual_seed(12345)  # not 0: a mutant that reseeds with 0 must move the state
        before = torch.random.get_rng_state()
        try:
            result = fn(*args)
        except Exception as error:  # noqa: BLE001 - a mutant may fail in any way
            result = type(error)
        rng_moved = not torch.equal(torch.random.get_rng_state(), before)
    grad_after = torch.is_grad_enabled()
    torch.set_grad_enabled(grad)
    return result, args, rng_moved, grad_after


def same(a: object, b: object) -> bool:
    """Equal results: tensors close (nan equal to nan), containers element by element, the rest by ==."""
    if isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor):
        if a.shape != b.shape or a.dtype != b.dtype:
            return False
        if a.is_floating_point():
            return bool(torch.allclose(a.detach(), b.detach(), rtol=1e-5, atol=1e-6, equal_nan=True))
        return torch.equal(a, b)
    if isinstance(a, torch.nn.Module) and isinstance(b, torch.nn.Module):  # copies: compare what they hold
        grads = [[p.grad for p in m.parameters()] for m in (a, b)]
        modes = [[m.training for m in module.modules()] for module in (a, b)]
        return same(a.state_dict(), b.state_dict()) and same(*grads) and modes[0] == modes[1]
    if isinstance(a, list | tuple) and isinstance(b, list | tuple):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if isinstance(a, float) and isinstance(b, float):
        return abs(a - b) <= 1e-6 * max(1.0, abs(b)) or (a != a and b != b)
    try:
        return bool(a == b)
    except Exception:  # noqa: BLE001 - values that cannot compare are different
        return False


@dataclass
class Report:
    checker: str
    kept: int = 0  # mutants that behave differently from the reference
    rejected: int = 0
    survivors: list[str] = field(default_factory=list)
    skipped: str = ""

    @property
    def score(self) -> float:
        return self.rejected / self.kept if self.kept else 1.0


def judge(exercise, limit: int, random_inputs: int = 3) -> Report:
    """Run every mutant of one exercise's reference answer through its checker."""
    report = Report(exercise.check.__name__)
    reference = exercise.reference
    if not inspect.isfunction(reference):
        report.skipped = "the answer is not one function (a protocol of several steps)"
        return report
    try:
        calls = recorded_calls(exercise.check, reference)
    except Exception as error:  # noqa: BLE001
        report.skipped = f"the checker could not run the reference through a recorder: {type(error).__name__}"
        return report
    generator = torch.Generator().manual_seed(0)
    inputs = calls + [randomised(args, generator) for args in calls[:random_inputs]]
    expected = [outcome(reference, args) for args in inputs]
    for count, (what, mutant) in enumerate(mutants(reference)):
        if count >= limit:
            break
        if all(same(outcome(mutant, args), want) for args, want in zip(inputs, expected, strict=True)):
            continue  # behaves like the reference: an equivalent mutant, not a test of the checker
        report.kept += 1
        state = {name: get() for name, (get, _, _, _) in GLOBAL_STATE.items()}  # a weak checker may not restore it
        try:  # from a global state no lesson seeds: a mutant that reseeds must move it
            with contextlib.redirect_stdout(io.StringIO()):
                torch.manual_seed(987_654_321)
                exercise.check(mutant)
        except (WrongAnswer, Exception):  # noqa: BLE001 - any refusal counts as rejected
            report.rejected += 1
        else:
            report.survivors.append(what)
        finally:
            for name, (_, put, _, _) in GLOBAL_STATE.items():
                put(state[name])
    return report


def all_exercises_by_name() -> dict:
    """Every exercise of the course's answers tables, by its checker's name."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from handout import check_tables

    return check_tables()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", help="one checker, by its function name")
    parser.add_argument("--limit", type=int, default=60, help="mutants per checker")
    args = parser.parse_args()
    torch.set_num_threads(1)
    print("| checker | mutants that differ | rejected | score | survivors |")
    print("| --- | ---: | ---: | ---: | --- |")
    for exercise in all_exercises_by_name().values():
        if args.only and exercise.check.__name__ != args.only:
            continue
        r = judge(exercise, args.limit)
        if r.skipped:
            print(f"| {r.checker} | - | - | - | skipped: {r.skipped} |")
        else:
            print(f"| {r.checker} | {r.kept} | {r.rejected} | {r.score:.0%} | {'; '.join(r.survivors) or '-'} |")

"""Mutation testing of the exercise self-checks: does each checker reject small wrong rewrites of its answer?

Each reference answer (a function in companion/checks/answers/) is rewritten in one small way at a time: an
operator swapped, a comparison loosened, an integer constant moved by one (a `dim`, an index, a size), a truth value
flipped, a reduction replaced (sum/mean, max/min), a call such as `clone()` unwrapped, a statement such as
`zero_grad()` or `eval()` dropped, a `with torch.no_grad():` block run without its context, and the side effects
checkers used to miss: the global generator reseeded, autograd left off, the caller's first tensor written into. A
mutant counts only if it behaves differently from the reference (its result, the caller's arguments afterwards, the
global generator's state, grad mode) on the inputs the checker itself hands over and on random inputs of the same
shapes and dtypes (floating tensors and a model's parameters redrawn, at two scales); the checker should reject
every such mutant. Survivors are listed.

An answer of several functions (capture and restore) is mutated one function at a time, the other kept; an answer
that is data (a dict of predictions) is mutated one entry at a time (a truth value flipped). Survivors judged
equivalent (they differ from the reference only where the exercise does not ask anything) are named in EQUIVALENT
with the reason, reported as such and left out of the score; docs/mutants.md holds the last full report.

    python -m tools.mutants --full          # every checker, every mutant; exit 1 if one scores under 95% (make mutants)
    python -m tools.mutants                 # every checker, at most 60 mutants each
    python -m tools.mutants --only check_multi_hot --limit 20
"""

import argparse
import ast
import contextlib
import copy
import functools
import inspect
import io
import sys
import textwrap
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

import numpy as np
import torch
from torch.utils.data import DataLoader

from companion.exercises import GLOBAL_STATE, WrongAnswer
from tools.course import exercise_tables

TARGET = 0.95  # the share of differing mutants every checker must reject
SWAPS = {ast.Add: ast.Sub, ast.Sub: ast.Add, ast.Mult: ast.Div, ast.Div: ast.Mult, ast.Pow: ast.Mult}
COMPARE_SWAPS = {ast.Lt: ast.LtE, ast.LtE: ast.Lt, ast.Gt: ast.GtE, ast.GtE: ast.Gt, ast.Eq: ast.NotEq}
REDUCTIONS = {"sum": "mean", "mean": "sum", "max": "min", "min": "max", "amax": "amin", "amin": "amax"}
UNWRAPPED = {"clone", "detach", "contiguous", "float", "double", "cpu", "to"}  # x.clone() -> x
UNWRAPPED_CONTEXTS = {"no_grad", "inference_mode", "enable_grad", "fork_rng"}  # with torch.no_grad(): body -> body
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
# Survivors that differ from the reference only outside what the exercise asks for: (checker, mutant) -> why.
EQUIVALENT: dict[tuple[str, str], str] = {
    ("check_repeatable_draws", "reseed the global generator"): "the exercise is to reseed the global generator: the "
    "reference leaves it after seed 0 and one draw, a forked answer leaves it as found, and the checker rightly "
    "accepts any state afterwards; seeding once more at the end changes nothing the exercise asks for",
}


def _context_name(item: ast.withitem) -> str:
    call = item.context_expr
    func = call.func if isinstance(call, ast.Call) else call
    return getattr(func, "attr", getattr(func, "id", ""))


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
        elif isinstance(node, ast.Constant) and type(node.value) is bool:
            sites.append((node, f"{node.value} -> {not node.value}"))
        elif isinstance(node, ast.Constant) and type(node.value) is float:
            sites.append((node, f"{node.value!r} -> {node.value * 2!r}"))
        elif isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not | ast.USub):
            sites.append((node, f"drop the {'not' if isinstance(node.op, ast.Not) else 'minus sign'}"))
        elif isinstance(node, ast.Attribute) and node.attr in REDUCTIONS:
            sites.append((node, f".{node.attr} -> .{REDUCTIONS[node.attr]}"))
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in UNWRAPPED:
            sites.append((node, f"drop .{node.func.attr}()"))
        elif isinstance(node, ast.Expr) and isinstance(node.value, ast.Call):
            name = getattr(node.value.func, "attr", getattr(node.value.func, "id", ""))
            sites.append((node, f"drop the {name}() statement"))
        if isinstance(node, ast.Call):  # also: each keyword argument left out (keepdim=True, lr=..., generator=g)
            name = getattr(node.func, "attr", getattr(node.func, "id", ""))
            sites += [(node, f"drop {k.arg}= from {name}()") for k in node.keywords if k.arg is not None]
        elif isinstance(node, ast.If) and not node.orelse:
            sites.append((node, "drop the if block"))
        elif isinstance(node, ast.With) and any(_context_name(i) in UNWRAPPED_CONTEXTS for i in node.items):
            sites.append((node, f"drop the with {_context_name(node.items[0])}() context"))
    return sites


class Mutate(ast.NodeTransformer):
    """Apply the mutation `what` at one site of a fresh parse."""

    def __init__(self, target: ast.AST, what: str):
        self.target, self.what = target, what

    def generic_visit(self, node: ast.AST) -> ast.AST | list | None:
        if node is not self.target:
            return super().generic_visit(node)
        if isinstance(node, ast.BinOp):
            node.op = SWAPS[type(node.op)]()
        elif isinstance(node, ast.Compare):
            node.ops = [COMPARE_SWAPS[type(node.ops[0])](), *node.ops[1:]]
        elif isinstance(node, ast.Call) and self.what.startswith("drop ") and "= from " in self.what:
            name = self.what.removeprefix("drop ").split("=")[0]
            node.keywords = [k for k in node.keywords if k.arg != name]
        elif isinstance(node, ast.Constant):
            if type(node.value) is bool:
                node.value = not node.value
            elif type(node.value) is float:
                node.value = node.value * 2
            else:
                node.value = int(self.what.split(" -> ")[1])
        elif isinstance(node, ast.UnaryOp):
            return node.operand
        elif isinstance(node, ast.Attribute):
            node.attr = REDUCTIONS[node.attr]
        elif isinstance(node, ast.Call):
            return node.func.value
        elif isinstance(node, ast.Expr | ast.If):
            return ast.Pass()
        elif isinstance(node, ast.With):
            return node.body
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
        if target is tree.body[0]:
            continue
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


def snapshot(value: object) -> object:
    """A copy of an argument that later calls cannot change: a deep copy (gradients included), or, where a tensor
    refuses one (a result of autograd: only leaves can be deep-copied), a fresh tensor with the same values and
    subclass that is again a result of autograd."""
    memo: dict = {}
    try:
        copied = copy.deepcopy(value, memo)
    except Exception:  # noqa: BLE001 - rebuilt piece by piece below
        pass
    else:  # a deep copy of an nn.Parameter leaves its .grad behind: a stale gradient is part of the input
        for original in memo.get(id(memo), []):
            if isinstance(original, torch.Tensor) and original.grad is not None and id(original) in memo:
                memo[id(original)].grad = original.grad.detach().clone()
        return copied
    if isinstance(value, torch.Tensor):
        leaf = value.detach().clone().requires_grad_(value.requires_grad)
        return leaf * 1 if value.requires_grad else leaf  # not a leaf again, as the caller's was
    if isinstance(value, dict):
        return {key: snapshot(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return type(value)(snapshot(item) for item in value)
    return value


@dataclass
class Answer:
    """One function of an exercise's answer: its name, the function and how to put a mutant back into the answer."""

    name: str
    function: Callable
    rebuild: Callable[[Callable], object]


def answer_functions(reference: object) -> list[Answer]:
    """The functions to mutate: the answer itself, or each function of a tuple of them (the others kept)."""
    if inspect.isfunction(reference):
        return [Answer(reference.__name__, reference, lambda mutant: mutant)]
    if isinstance(reference, tuple) and reference and all(inspect.isfunction(f) for f in reference):
        return [
            Answer(f.__name__, f, lambda mutant, i=i: tuple(mutant if j == i else g for j, g in enumerate(reference)))
            for i, f in enumerate(reference)
        ]
    return []


Call = tuple[tuple, dict]  # positional and keyword arguments


def recorded_calls(check: Callable, reference: object) -> list[list[Call]]:
    """For each function of the answer, the arguments the checker hands to it (copies, taken before each call)."""
    functions = answer_functions(reference)
    calls: list[list[Call]] = [[] for _ in functions]

    def recording(index: int, fn: Callable) -> Callable:
        @functools.wraps(fn)  # a checker that reads the signature sees the answer's
        def record(*args, **kwargs):
            calls[index].append(snapshot((args, kwargs)))
            return fn(*args, **kwargs)

        return record

    recorders = [recording(i, answer.function) for i, answer in enumerate(functions)]
    answer = recorders[0] if len(recorders) == 1 and inspect.isfunction(reference) else tuple(recorders)
    with contextlib.redirect_stdout(io.StringIO()):
        check(answer)
    return calls


def randomised(call: Call, generator: torch.Generator, scale: float = 1.0) -> Call:
    """A copy of the arguments with every floating tensor redrawn in place (same shape, dtype and sharing: an
    optimizer still holds the model's parameters) and every model's parameters redrawn with a stale .grad left on
    them, normal values times `scale`; integers, labels and the rest are kept."""
    args, kwargs = snapshot(call)

    def draw(shape: torch.Size) -> torch.Tensor:
        return torch.randn(shape, generator=generator, dtype=torch.float64) * scale

    def redraw(value):
        if isinstance(value, torch.Tensor) and value.is_floating_point() and value.device.type != "meta":
            if value.is_leaf:
                with torch.no_grad():
                    value.copy_(draw(value.shape).to(value.dtype))
                return value
            return draw(value.shape).to(value.dtype).as_subclass(type(value)).requires_grad_() * 1
        if isinstance(value, torch.nn.Module):
            with torch.no_grad():
                for parameter in value.parameters():
                    parameter.copy_(draw(parameter.shape) * 0.5)
                    if parameter.requires_grad:
                        parameter.grad = draw(parameter.shape).to(parameter.dtype)  # left by an earlier step
            return value
        if isinstance(value, list):
            return [redraw(v) for v in value]
        if type(value) is tuple:
            return tuple(redraw(v) for v in value)
        if type(value) is dict:
            return {k: redraw(v) for k, v in value.items()}
        return value

    return tuple(redraw(a) for a in args), kwargs


def outcome(fn: Callable, call: Call) -> object:
    """What calling `fn` on a copy of `args` leads to: its result (or the exception type it raises), the arguments
    afterwards, the global generator's state afterwards, and grad mode."""
    args, kwargs = snapshot(call)
    grad = torch.is_grad_enabled()
    with contextlib.redirect_stdout(io.StringIO()), torch.random.fork_rng(devices=[]):
        torch.manual_seed(12345)  # not 0: a mutant that reseeds with 0 must move the state
        try:
            result = fn(*args, **kwargs)
        except Exception as error:  # noqa: BLE001 - a mutant may fail in any way
            result = type(error)
        rng = torch.random.get_rng_state()
    grad_after = torch.is_grad_enabled()
    torch.set_grad_enabled(grad)
    return result, args, rng, grad_after


def same(a: object, b: object) -> bool:
    """Equal results: tensors close (nan equal to nan), arrays, models, optimizers, loaders and generators by their
    state, containers element by element, the rest by ==."""
    if isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor):
        if a.shape != b.shape or a.dtype != b.dtype or a.device != b.device:
            return False
        if a.device.type == "meta":
            return True  # a meta tensor has no values
        a, b = a.detach().as_subclass(torch.Tensor), b.detach().as_subclass(torch.Tensor)
        if a.is_floating_point() or a.is_complex():
            return bool(torch.allclose(a, b, rtol=1e-5, atol=1e-6, equal_nan=True))
        return torch.equal(a, b)
    if isinstance(a, np.ndarray) and isinstance(b, np.ndarray):
        return a.dtype == b.dtype and a.shape == b.shape and np.array_equal(a, b, equal_nan=a.dtype.kind in "fc")
    if isinstance(a, torch.nn.Module) and isinstance(b, torch.nn.Module):  # copies: compare what they hold
        grads = [[p.grad for p in m.parameters()] for m in (a, b)]
        flags = [
            [(m.training, [p.requires_grad for p in m.parameters(recurse=False)]) for m in x.modules()] for x in (a, b)
        ]
        return same(a.state_dict(), b.state_dict()) and same(*grads) and flags[0] == flags[1]
    if isinstance(a, torch.Generator) and isinstance(b, torch.Generator):
        return torch.equal(a.get_state(), b.get_state())
    if isinstance(a, DataLoader) and isinstance(b, DataLoader):
        return (a.generator is None) == (b.generator is None) and (
            a.generator is None or same(a.generator, b.generator)
        )
    if type(a) is type(b) and callable(getattr(a, "state_dict", None)) and not isinstance(a, torch.Tensor):
        return same(a.state_dict(), b.state_dict())  # an optimizer, a scheduler
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
    generated: int = 0  # mutants that compile
    kept: int = 0  # mutants that behave differently from the reference
    rejected: int = 0
    survivors: list[str] = field(default_factory=list)
    killed: list[str] = field(default_factory=list)
    same_as_reference: list[str] = field(default_factory=list)  # mutants that behave like the reference: not judged
    equivalent: list[str] = field(default_factory=list)  # survivors named in EQUIVALENT: left out of the score
    skipped: str = ""
    seconds: float = 0.0

    @property
    def score(self) -> float:
        judged = self.kept - len(self.equivalent)
        return self.rejected / judged if judged else 1.0


def rejects(check: Callable, answer: object) -> bool:
    """Whether `check` refuses `answer` (any exception counts), from a global state no lesson seeds, which is put
    back afterwards (a weak checker may not restore it)."""
    state = {name: get() for name, (get, _, _, _) in GLOBAL_STATE.items()}
    try:
        with contextlib.redirect_stdout(io.StringIO()):
            torch.manual_seed(987_654_321)  # a mutant that reseeds must move it
            check(answer)
    except (WrongAnswer, Exception):  # noqa: BLE001 - any refusal counts as rejected
        return True
    finally:
        for name, (_, put, _, _) in GLOBAL_STATE.items():
            put(state[name])
    return False


def data_mutants(reference: object) -> Iterator[tuple[str, object]]:
    """An answer that is data: each truth value flipped in turn (each one a different answer)."""
    if isinstance(reference, dict):
        for key, value in reference.items():
            if isinstance(value, bool):
                yield f"{key!r}: {value} -> {not value}", {**reference, key: not value}


def judge(exercise, limit: int | None = None, random_inputs: int | None = None) -> Report:
    """Run every mutant of one exercise's reference answer through its checker (at most `limit`, and random inputs
    for the first `random_inputs` recorded calls of each function only, both for a quick sample)."""
    start = time.monotonic()
    report = Report(exercise.check.__name__)
    reference = exercise.reference
    functions = answer_functions(reference)
    if not functions:
        for what, mutant in data_mutants(reference):
            if limit is not None and report.generated >= limit:
                break
            report.generated += 1
            report.kept += 1  # another prediction is another answer: it always differs
            if rejects(exercise.check, mutant):
                report.rejected += 1
                report.killed.append(what)
            else:
                report.survivors.append(what)
        if not report.generated:
            report.skipped = f"the answer is a {type(reference).__name__} with nothing to flip"
        return _finish(report, start)
    try:
        all_calls = recorded_calls(exercise.check, reference)
    except Exception as error:  # noqa: BLE001
        report.skipped = f"the checker could not run the reference through a recorder: {type(error).__name__}"
        return _finish(report, start)
    generator = torch.Generator().manual_seed(0)
    for answer, calls in zip(functions, all_calls, strict=True):
        prefix = f"{answer.name}: " if len(functions) > 1 else ""
        randoms = calls if random_inputs is None else calls[:random_inputs]
        inputs = calls + [randomised(call, generator, scale) for scale in (1.0, 10.0) for call in randoms]
        expected = [outcome(answer.function, args) for args in inputs]
        # inputs on which the reference itself fails are outside the exercise: they judge nothing
        valid = [not isinstance(want[0], type) for want in expected]
        inputs = [call for call, ok in zip(inputs, valid, strict=True) if ok]
        expected = [want for want, ok in zip(expected, valid, strict=True) if ok]
        for what, mutant in mutants(answer.function):
            if limit is not None and report.generated >= limit:
                break
            report.generated += 1
            if all(same(outcome(mutant, call), want) for call, want in zip(inputs, expected, strict=True)):
                report.same_as_reference.append(prefix + what)
                continue  # behaves like the reference: an equivalent mutant, not a test of the checker
            report.kept += 1
            if rejects(exercise.check, answer.rebuild(mutant)):
                report.rejected += 1
                report.killed.append(prefix + what)
            else:
                report.survivors.append(prefix + what)
                if (report.checker, prefix + what) in EQUIVALENT:
                    report.equivalent.append(prefix + what)
    return _finish(report, start)


def _finish(report: Report, start: float) -> Report:
    report.seconds = time.monotonic() - start
    return report


def table_row(r: Report) -> str:
    """One line of the markdown report."""
    if r.skipped:
        return f"| {r.checker} | - | - | - | - | skipped: {r.skipped} |"
    survivors = [s + (" (equivalent)" if s in r.equivalent else "") for s in r.survivors]
    return (
        f"| {r.checker} | {r.generated} | {r.kept} | {r.rejected} | {r.score:.0%} | "
        f"{'; '.join(survivors).replace('|', '∣') or '-'} |"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", action="append", help="one checker, by its function name (repeatable)")
    parser.add_argument("--limit", type=int, default=60, help="mutants per checker (ignored with --full)")
    parser.add_argument("--full", action="store_true", help="every mutant of every checker; exit 1 under 95%%")
    parser.add_argument("--verbose", action="store_true", help="list every mutant: killed, survived, not differing")
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    print("| checker | mutants | differ | rejected | score | survivors |")
    print("| --- | ---: | ---: | ---: | ---: | --- |")
    failing = []
    for exercise in exercise_tables().values():
        if args.only and exercise.check.__name__ not in args.only:
            continue
        report = judge(exercise, None if args.full else args.limit)
        print(table_row(report), flush=True)
        if args.verbose:
            for title, names in (("killed", report.killed), ("same as the reference", report.same_as_reference)):
                print(f"|   {title}: {'; '.join(names).replace('|', '∣') or '-'} | | | | | |")
        if report.skipped or report.score < TARGET:
            failing.append(report.checker)
    if failing:
        print(f"\nUnder {TARGET:.0%} (or not run): {', '.join(failing)}", file=sys.stderr)
    return 1 if args.full and failing else 0


if __name__ == "__main__":
    sys.exit(main())

"""tools/mutants.py on a sample: a checker that judges only returned values lets side-effect mutants survive, the
same checker through the harness rejects them, and one course checker rejects every mutant that differs."""

import mutants
import torch

from companion.exercises import Exercise, Mistake, call_learner, passed, require


def scaled(x: torch.Tensor) -> torch.Tensor:
    """The toy exercise's answer: twice x, plus one."""
    return x * 2 + 1


def _values_only(answer) -> None:
    x = torch.tensor([1.0, -2.0, 3.0])
    require(torch.equal(answer(x.clone()), x * 2 + 1), "compute x * 2 + 1", "计算 x * 2 + 1")
    passed("twice x plus one", "x 的两倍加一")


def _through_the_harness(answer) -> None:
    x = torch.tensor([1.0, -2.0, 3.0])
    require(torch.equal(call_learner(answer, x), x * 2 + 1), "compute x * 2 + 1", "计算 x * 2 + 1")
    passed("twice x plus one", "x 的两倍加一")


def _exercise(check) -> Exercise:
    mistakes = tuple(Mistake(f"m{i}", lambda x, i=i: x * i, "compute") for i in range(3))
    return Exercise(check=check, reference=scaled, mistakes=mistakes)


def test_a_checker_of_values_alone_lets_side_effects_survive():
    report = mutants.judge(_exercise(_values_only), limit=100)
    assert report.kept > 0 and report.score < 1.0
    assert {"reseed the global generator", "leave autograd off", "write into the caller's first tensor"} <= set(
        report.survivors
    )


def test_the_same_checker_through_the_harness_rejects_every_mutant():
    report = mutants.judge(_exercise(_through_the_harness), limit=100)
    assert report.kept >= 6 and report.score == 1.0, report.survivors


def test_a_course_checker_rejects_every_mutant_that_differs():
    exercise = mutants.all_exercises_by_name()["check_multi_hot"]
    report = mutants.judge(exercise, limit=40)
    assert report.kept >= 2 and report.score == 1.0, report.survivors

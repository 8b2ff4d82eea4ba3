"""tools/mutants.py on a sample (the full run is `python -m tools.mutants --full`): a checker that judges only returned
values lets side-effect mutants survive, the same checker through the harness rejects them, answers of several
functions and answers that are data are mutated too, every exercise of the course yields mutants, course checkers
reject every mutant that differs, and a course checker weakened by one case scores under the 95% target."""

import pytest
import torch

from companion.checks.tensors import OPERATIONS, check_shares_memory, true_sharing
from companion.exercises import Exercise, Mistake, call_learner, passed, require
from tools import mutants
from tools.course import exercise_tables


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


def _exercise(check, reference=scaled) -> Exercise:
    mistakes = tuple(Mistake(f"m{i}", lambda x, i=i: x * i, "compute") for i in range(3))
    return Exercise(check=check, reference=reference, mistakes=mistakes)


@pytest.fixture(scope="module")
def exercises() -> dict:
    return exercise_tables()


def test_a_checker_of_values_alone_lets_side_effects_survive():
    report = mutants.judge(_exercise(_values_only))
    assert report.kept > 0 and report.score < mutants.TARGET
    assert {"reseed the global generator", "leave autograd off", "write into the caller's first tensor"} <= set(
        report.survivors
    )


def test_the_same_checker_through_the_harness_rejects_every_mutant():
    report = mutants.judge(_exercise(_through_the_harness))
    assert report.kept >= 6 and report.score == 1.0, report.survivors


def _encode(x: torch.Tensor) -> dict:
    return {"values": x * 3}


def _decode(saved: dict) -> torch.Tensor:
    return saved["values"] / 3


def _round_trip(pair) -> None:
    encode, decode = pair
    for x in (torch.tensor([1.0, -2.0]), torch.tensor([[0.5, 4.0]])):
        saved = call_learner(encode, x)
        require(isinstance(saved, dict) and "values" in saved, "return a dict", "返回一个字典")
        require(torch.allclose(call_learner(decode, saved), x), "decode what encode gave", "解码 encode 的结果")
    passed("round trip", "往返一致")


def test_an_answer_of_two_functions_is_mutated_one_function_at_a_time():
    report = mutants.judge(_exercise(_round_trip, reference=(_encode, _decode)))
    judged = report.killed + report.survivors
    assert any(name.startswith("_encode: ") for name in judged) and any(name.startswith("_decode: ") for name in judged)
    # Scaling by 3 then dividing by 3 is invisible to a round trip: the checker may not see a change of one half alone.
    assert report.kept >= 4 and not report.skipped


def test_every_exercise_of_the_course_yields_mutants(exercises):
    for name, exercise in exercises.items():
        functions = mutants.answer_functions(exercise.reference)
        count = sum(1 for answer in functions for _ in mutants.mutants(answer.function))
        count += sum(1 for _ in mutants.data_mutants(exercise.reference))
        assert count >= 3, f"{name}: its answer ({type(exercise.reference).__name__}) gives no mutants"


@pytest.mark.parametrize("name", ["check_to_numpy", "check_to_device", "check_shares_memory"])
def test_a_course_checker_rejects_every_mutant_that_differs(exercises, name):
    report = mutants.judge(exercises[name])
    assert not report.skipped and report.kept >= 5 and report.score == 1.0, (report.skipped, report.survivors)


def test_a_course_checker_weakened_by_one_case_scores_under_the_target(exercises):
    dropped = next(iter(OPERATIONS))

    def weakened(predictions) -> None:  # the real checker, except that it no longer asks about one operation
        check_shares_memory(
            {**predictions, dropped: true_sharing()[dropped]} if isinstance(predictions, dict) else predictions
        )

    exercise = exercises["check_shares_memory"]
    whole = mutants.judge(exercise)
    weak = mutants.judge(Exercise(check=weakened, reference=exercise.reference, mistakes=exercise.mistakes))
    assert whole.score == 1.0 and weak.kept == whole.kept
    assert weak.score < mutants.TARGET and weak.survivors == [
        f"{dropped!r}: {exercise.reference[dropped]} -> {not exercise.reference[dropped]}"
    ]

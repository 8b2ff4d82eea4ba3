"""Every absolute sentence of lesson prose (never, always, only ...; 从不、总是、只有 ...) names the code cell that
proves it, and tools/claims.py notices a new unproven one and a proof that no longer fits its sentence."""

import copy
import json

import pytest

from tools import claims
from tools.course import lesson_files

NOTEBOOKS = lesson_files()
LESSONS = {path.stem: json.loads(path.read_text(encoding="utf-8")) for path in NOTEBOOKS}
PROVERS = claims.code_cell_ids(LESSONS)


@pytest.mark.parametrize("stem", LESSONS)
def test_every_absolute_claim_is_proven_by_a_cell(stem):
    found, problems = claims.lesson_claims(stem, LESSONS[stem], PROVERS)
    unproven = [f"{c.cell}: {c.sentence}" for c in found if not c.proof]
    assert problems == []
    assert unproven == [], "reword these or record the cell that proves them (python -m tools.claims --open NN)"


def planted(sentence: str, lang: str = "lang-en", metadata_claims: dict | None = None) -> dict:
    """Lesson 03 with one more markdown cell."""
    nb = copy.deepcopy(LESSONS["03-scatter"])
    cell = {"cell_type": "markdown", "id": "planted", "source": sentence, "metadata": {"tags": [lang]}}
    if metadata_claims is not None:
        cell["metadata"]["claims"] = metadata_claims
    nb["cells"].append(cell)
    return nb


@pytest.mark.parametrize(
    ("sentence", "lang"),
    [("An in-place op can never change a shape.", "lang-en"), ("原地操作从不改变形状。", "lang-zh")],
)
def test_a_new_absolute_sentence_is_open_until_a_cell_proves_it(sentence, lang):
    found, _ = claims.lesson_claims("03-scatter", planted(sentence, lang), PROVERS)
    assert [(c.sentence, c.proof) for c in found if c.cell == "planted"] == [(sentence, None)]
    proof = sorted(PROVERS)[0]
    found, problems = claims.lesson_claims("03-scatter", planted(sentence, lang, {sentence[:6]: proof}), PROVERS)
    assert [c.proof for c in found if c.cell == "planted"] == [proof]
    assert not any("planted" in problem for problem in problems)


def test_hedged_sentences_are_not_absolute():
    found, _ = claims.lesson_claims("03-scatter", planted("You almost always reduce first; not only sums."), PROVERS)
    assert not any(c.cell == "planted" for c in found)


def test_a_stale_fragment_and_a_proof_that_is_not_a_code_cell_are_problems():
    nb = planted("Every index is in range.", metadata_claims={"Each index": "no-such-cell"})
    _, problems = claims.lesson_claims("03-scatter", nb, PROVERS)
    problems = [problem for problem in problems if "planted" in problem]
    assert len(problems) == 2
    assert "is in no absolute sentence" in problems[0] and "not the id of a code cell" in problems[1]

"""The language companion speaks in: pass lines, hints, errors the lessons show, plot labels.

A lesson's text comes in three editions (English, Chinese, both); the kernel learns which one it runs from the
variable COURSE_LANG, which `make lab` sets to the workspace's language and `make execute` sets per edition.
Three ways to say a thing: `say` joins both languages in the bilingual edition (plot labels, hints);
`in_language` keeps the English text there (errors and printed lines whose stored bilingual outputs must not
change); `by_language` gives each edition a text of its own (a pass line, a label with a Chinese gloss).
"""

import os
from collections.abc import Iterator
from contextlib import contextmanager

LANGUAGES = ("en", "zh", "both")


def language() -> str:
    """ "en", "zh" or "both": COURSE_LANG when it names one of them, else "both" (nothing is left unsaid)."""
    chosen = os.environ.get("COURSE_LANG", "").strip().lower()
    return chosen if chosen in LANGUAGES else "both"


def say(en: str, zh: str, sep: str = " / ") -> str:
    """`en` or `zh` in a one-language edition; both, joined by `sep`, in the bilingual one."""
    chosen = language()
    return en if chosen == "en" else zh if chosen == "zh" else f"{en}{sep}{zh}"


def in_language(en: str, zh: str) -> str:
    """`zh` in the Chinese edition, `en` in the English and the bilingual ones (an error or a printed line)."""
    return zh if language() == "zh" else en


def by_language(en: str, zh: str, both: str) -> str:
    """The text of this edition, where the bilingual one is not simply `en` and `zh` joined."""
    return {"en": en, "zh": zh}.get(language(), both)


@contextmanager
def speaking(chosen: str) -> Iterator[None]:
    """Inside the block, companion speaks `chosen` whatever COURSE_LANG says (the answer key needs both languages)."""
    if chosen not in LANGUAGES:
        raise ValueError(f"language must be one of {', '.join(LANGUAGES)}, not {chosen!r}")
    before = os.environ.get("COURSE_LANG")
    os.environ["COURSE_LANG"] = chosen
    try:
        yield
    finally:
        if before is None:
            os.environ.pop("COURSE_LANG", None)
        else:
            os.environ["COURSE_LANG"] = before

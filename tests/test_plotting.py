"""The bundled font: licensed, found by matplotlib, and covering every Chinese character the course plots."""

import re
import warnings

import matplotlib.pyplot as plt
from fontTools.ttLib import TTFont
from matplotlib.font_manager import FontProperties, findfont

from companion.plotting import FONT_FAMILY, FONT_PATH, use_course_style
from tools.course import ROOT


def test_font_ships_with_its_licence():
    licence = (FONT_PATH.parent / "OFL.txt").read_text(encoding="utf-8")
    assert "SIL OPEN FONT LICENSE" in licence and "Adobe" in licence
    assert FONT_PATH.stat().st_size < 2_500_000


def test_matplotlib_finds_the_bundled_font():
    use_course_style()
    assert findfont(FontProperties(family=FONT_FAMILY), fallback_to_default=False) == str(FONT_PATH)


def test_chinese_labels_render_without_warnings():
    use_course_style()
    fig, ax = plt.subplots()
    ax.set_title("张量 tensor −1.5 / 梯度：步幅（stride）")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        fig.canvas.draw()
    plt.close(fig)


def test_without_the_course_style_chinese_glyphs_are_missing():
    import matplotlib as mpl

    mpl.rcdefaults()
    fig, ax = plt.subplots()
    ax.set_title("张量")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        fig.canvas.draw()
    plt.close(fig)
    assert any("missing from font" in str(w.message) for w in caught)


def test_font_covers_every_chinese_character_in_the_package_and_notebook_code():
    cmap = TTFont(FONT_PATH)["cmap"].getBestCmap()
    sources = list((ROOT / "companion").glob("*.py")) + list((ROOT / "notebooks").glob("*.ipynb"))
    used = {ch for path in sources for ch in re.findall(r"[\u3000-\u9fff\uff00-\uffef]", path.read_text("utf-8"))}
    assert len(used) > 100
    assert sorted(ch for ch in used if ord(ch) not in cmap) == []

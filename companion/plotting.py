"""Plot style shared by every lesson: the bundled CJK font, so Chinese labels look the same on every machine."""

from pathlib import Path

import matplotlib as mpl
from matplotlib import font_manager

FONT_FAMILY = "Course Sans SC"
FONT_PATH = Path(__file__).parent / "fonts" / "CourseSansSC-Regular.otf"
# Inches at figure.dpi 100: 700 px, which fits the notebook column of the Lab and the handout page unscaled, so a
# 10-point label stays as large as the prose. No figure is wider.
COLUMN_WIDTH = 7.0


def use_course_style() -> None:
    """Reset matplotlib to its defaults, then add the bundled font as the fallback for Chinese glyphs."""
    mpl.rcdefaults()
    if FONT_FAMILY not in {f.name for f in font_manager.fontManager.ttflist}:
        font_manager.fontManager.addfont(str(FONT_PATH))
    # DejaVu Sans first keeps Latin text and the true minus sign; matplotlib falls back per glyph to the CJK font.
    mpl.rcParams["font.family"] = ["DejaVu Sans", FONT_FAMILY]
    mpl.rcParams["figure.figsize"] = (6.4, 4.0)
    mpl.rcParams["figure.constrained_layout.use"] = True
    mpl.rcParams["font.size"] = 10
    mpl.rcParams["figure.dpi"] = 100
    mpl.rcParams["axes.spines.top"] = False
    mpl.rcParams["axes.spines.right"] = False
    # A fixed hash salt keeps SVG/PDF exports byte-identical between runs.
    mpl.rcParams["svg.hashsalt"] = "tensor-by-tensor"

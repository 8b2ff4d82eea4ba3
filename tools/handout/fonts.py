"""The handout's fonts, the same on every build machine and embedded in its PDFs as TrueType (CID) fonts.

Latin text and code: DejaVu Sans and DejaVu Sans Mono, copied from matplotlib's own data (a course dependency, so
nothing is downloaded). Chinese: the course's CJK font (companion/fonts). Maths: MathJax's STIX-Web web fonts.
The last two are CFF (PostScript) outlines, which Chromium's PDF writer embeds as Type 3 fonts, bitmap-like
glyph programs that some print shops reject and that copy badly; so the build converts their outlines to
TrueType's quadratic curves (fontTools' cu2qu, within a thousandth of an em) and Chromium embeds CID TrueType.
"""

from pathlib import Path

import matplotlib
from fontTools.pens.cu2quPen import Cu2QuPen
from fontTools.pens.ttGlyphPen import TTGlyphPen
from fontTools.ttLib import TTFont, newTable

from companion.plotting import FONT_PATH

MATPLOTLIB_FONTS = Path(matplotlib.get_data_path()) / "fonts" / "ttf"
LATIN = [f"DejaVuSans{style}.ttf" for style in ("", "-Bold", "-Oblique", "-BoldOblique")] + [
    f"DejaVuSansMono{style}.ttf" for style in ("", "-Bold", "-Oblique", "-BoldOblique")
]
CJK_FONT = FONT_PATH.with_suffix(".ttf").name  # CourseSansSC-Regular.ttf, made from the .otf
MAX_ERROR_EM = 0.001  # how far a quadratic curve may stray from the cubic it replaces, in em


def truetype_outlines(font: TTFont) -> None:
    """Replace a CFF font's cubic outlines with TrueType quadratic ones, in place (fontTools' otf2ttf recipe)."""
    order, glyphs = font.getGlyphOrder(), font.getGlyphSet()
    max_error = MAX_ERROR_EM * font["head"].unitsPerEm
    outlines = {}
    for name in order:
        pen = TTGlyphPen(glyphs)
        glyphs[name].draw(Cu2QuPen(pen, max_error, reverse_direction=True))
        outlines[name] = pen.glyph()
    font["loca"] = newTable("loca")
    font["glyf"] = glyf = newTable("glyf")
    glyf.glyphOrder, glyf.glyphs = order, outlines
    for table in ("CFF ", "VORG"):
        if table in font:
            del font[table]
    font["maxp"] = maxp = newTable("maxp")
    maxp.tableVersion, maxp.numGlyphs = 0x00010000, len(order)
    for field in (
        "maxZones maxTwilightPoints maxStorage maxFunctionDefs maxInstructionDefs maxStackElements "
        "maxSizeOfInstructions maxComponentElements maxPoints maxContours maxCompositePoints maxCompositeContours "
        "maxComponentDepth"
    ).split():
        setattr(maxp, field, 1 if field == "maxZones" else 0)  # the real maxima are recalculated on save
    font["head"].glyphDataFormat = 0
    font["post"].formatType = 3.0  # no glyph names: a PDF needs none
    font.sfntVersion = "\x00\x01\x00\x00"


def as_truetype(source: Path, target: Path) -> None:
    """Write `source` (an OpenType CFF font, or a web font of one) to `target` with TrueType outlines, keeping
    its web font wrapper (WOFF) if it had one."""
    font = TTFont(source)
    if "CFF " in font:
        truetype_outlines(font)
    target.parent.mkdir(parents=True, exist_ok=True)
    font.save(target)


def install_fonts(out_dir: Path) -> None:
    """The handout's fonts/ (Latin, code, Chinese, with their licences), and MathJax's STIX-Web fonts, already
    copied into out_dir/mathjax, made TrueType in place."""
    fonts = out_dir / "fonts"
    fonts.mkdir(parents=True, exist_ok=True)
    for name in [*LATIN, "LICENSE_DEJAVU"]:
        (fonts / name).write_bytes((MATPLOTLIB_FONTS / name).read_bytes())
    (fonts / "OFL.txt").write_bytes((FONT_PATH.parent / "OFL.txt").read_bytes())
    as_truetype(FONT_PATH, fonts / CJK_FONT)
    for web_font in sorted((out_dir / "mathjax" / "fonts" / "HTML-CSS").rglob("*.woff")):
        as_truetype(web_font, web_font)

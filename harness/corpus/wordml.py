"""WordprocessingML for `harness.corpus.word`: element and attribute names in either of
its namespaces, and Word's list numbering (`word/numbering.xml`) as Word shows it.

A numbered paragraph names a list (`w:numId`) and a level (`w:ilvl`); the list names an
abstract definition, which gives each level its number format (decimal, letters, roman
numerals, bullets, none), its start and its text (`%1.%2.` shows the counts of levels
one and two: "3.2."). Lists of one abstract definition count together unless a list
restarts a level (`w:startOverride`), as Word counts them; a deeper level restarts
after a shallower item unless its `w:lvlRestart` says otherwise; a legal level
(`w:isLgl`) shows every count in digits; a definition may stand for a list style
(`w:numStyleLink`), whose own list gives the levels. Counts past what letters and roman
numerals write briefly are digits.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from xml.etree import ElementTree

from harness.corpus.ooxml import MATH, MC, number

W = (
    "http://schemas.openxmlformats.org/wordprocessingml/2006/main",
    "http://purl.oclc.org/ooxml/wordprocessingml/main",  # "Strict Open XML", a Save As choice
)
MAX_START = 32767
"""The largest start Word lets a list level take."""
_PLACE = re.compile(r"%([1-9])")


def name(el: ElementTree.Element) -> str:
    """`el`'s local name when it is WordprocessingML's ("p", "t", ...); "mc:" or "m:" and
    its local name for markup compatibility's and Office Math's; "" for any other
    vocabulary's (drawings, VML, Office's extensions), whose content is walked through
    for the text boxes it holds."""
    tag = el.tag
    if not isinstance(tag, str) or not tag.startswith("{"):
        return ""
    ns, _, local = tag[1:].partition("}")
    if ns in W:
        return local
    if ns == MC:
        return "mc:" + local
    return "m:" + local if ns in MATH else ""


def attr(el: ElementTree.Element | None, local: str) -> str | None:
    """The value of `el`'s WordprocessingML attribute `local` (`w:val`), or None."""
    if el is None:
        return None
    for ns in W:
        value = el.get(f"{{{ns}}}{local}")
        if value is not None:
            return value
    return None


def child(el: ElementTree.Element | None, local: str) -> ElementTree.Element | None:
    """`el`'s first WordprocessingML child named `local`, or None."""
    if el is None:
        return None
    return next((c for c in el if name(c) == local), None)


def on(el: ElementTree.Element | None) -> bool:
    """Whether an on/off property (`<w:vanish/>`, `<w:b w:val="false"/>`) is on."""
    return el is not None and attr(el, "val") not in ("0", "false", "off")


@dataclass(frozen=True)
class Level:
    """One level of a list: its number format, start and text (`%1.`); after which
    shallower level it restarts (`w:lvlRestart`: None after any, 0 never, N after an
    item of level N, one-based); whether it shows every count in digits (`w:isLgl`, a
    legal list's "1.01" under roman chapters)."""

    fmt: str = "decimal"
    start: int = 1
    text: str = "%1."
    restart: int | None = None
    legal: bool = False


def _level(lvl: ElementTree.Element, index: int, start: int | None = None) -> Level:
    """A `w:lvl`, at level `index` (its text `%<index + 1>.` when it names none);
    `start` overrides its own (a list's `w:startOverride`)."""
    own = number(attr(child(lvl, "start"), "val"), 1) or 0
    text = attr(child(lvl, "lvlText"), "val")
    return Level(
        fmt=attr(child(lvl, "numFmt"), "val") or "decimal",
        start=min(own if start is None else start, MAX_START),
        text=f"%{index + 1}." if text is None else text,
        restart=number(attr(child(lvl, "lvlRestart"), "val"), None),
        legal=on(child(lvl, "isLgl")),
    )


def _levels(el: ElementTree.Element) -> dict[int, Level]:
    levels: dict[int, Level] = {}
    for lvl in el:
        index = number(attr(lvl, "ilvl"), 0)
        if name(lvl) == "lvl" and index is not None and index < 9:
            levels[index] = _level(lvl, index)
    return levels


def _letters(n: int) -> str:
    """Word's letter numbering: a ... z, aa ... zz, aaa ..."""
    return chr(ord("a") + (n - 1) % 26) * ((n - 1) // 26 + 1) if n > 0 else ""


def _roman(n: int) -> str:
    out = ""
    for value, digits in (
        (1000, "m"),
        (900, "cm"),
        (500, "d"),
        (400, "cd"),
        (100, "c"),
        (90, "xc"),
        (50, "l"),
        (40, "xl"),
        (10, "x"),
        (9, "ix"),
        (5, "v"),
        (4, "iv"),
        (1, "i"),
    ):
        while n >= value:
            out, n = out + digits, n - value
    return out


MAX_LETTERS = 26 * 30
"""Counts past this are written in digits where the format says letters (`zzz...`
grows a letter every 26 items), and past 3999 where it says roman numerals."""


def shown(n: int, fmt: str) -> str:
    """The count `n` written in the number format `fmt` (formats harness does not write
    out, such as words or East Asian numerals, as digits; "none" as nothing)."""
    if fmt == "none":
        return ""
    if fmt in ("lowerLetter", "upperLetter") and n <= MAX_LETTERS:
        letters = _letters(n)
        return letters.upper() if fmt == "upperLetter" else letters
    if fmt in ("lowerRoman", "upperRoman") and n < 4000:
        roman = _roman(n)
        return roman.upper() if fmt == "upperRoman" else roman
    if fmt == "decimalZero":
        return f"{n:02d}"
    return str(n)


@dataclass
class Lists:
    """The lists of a document and the counts shown so far (read with `read_lists`)."""

    abstracts: dict[str, dict[int, Level]] = field(default_factory=dict)
    links: dict[str, str] = field(default_factory=dict)  # abstract -> list style it stands for
    styled: dict[str, str] = field(default_factory=dict)  # list style -> abstract defining it
    nums: dict[str, str] = field(default_factory=dict)  # list -> abstract
    overrides: dict[str, dict[int, Level]] = field(default_factory=dict)
    counts: dict[str, list[int | None]] = field(default_factory=dict)
    restarted: set[tuple[str, int]] = field(default_factory=set)

    def _abstract(self, num_id: str) -> str | None:
        """The abstract definition that gives list `num_id` its levels, through a list
        style's link."""
        abstract = self.nums.get(num_id)
        if abstract is not None and abstract in self.links:
            abstract = self.styled.get(self.links[abstract], abstract)
        return abstract

    def level(self, num_id: str, level: int) -> Level:
        """The definition list `num_id` gives `level` (its override's, if any)."""
        override = self.overrides.get(num_id, {}).get(level)
        if override is not None:
            return override
        return self.abstracts.get(self._abstract(num_id) or "", {}).get(level, Level("bullet"))

    def marker(self, num_id: str, level: int) -> str:
        """The marker of the next item of list `num_id` at `level`, as Word shows it:
        its level's text with each `%N` the count of level N ("3.", "(c)", "2.1.", in
        digits throughout for a legal level), "-" for a bullet; a level without a number
        shows its text without it ("NOTE:", or ""). Counts go on across the lists of
        one abstract definition; a deeper level restarts after a shallower item (or as
        its `w:lvlRestart` says)."""
        abstract = self._abstract(num_id)
        if abstract is None:
            return "-"
        counts = self.counts.setdefault(abstract, [None] * 9)
        if level in self.overrides.get(num_id, {}) and (num_id, level) not in self.restarted:
            self.restarted.add((num_id, level))  # the list restarts this level, once
            counts[level] = None
        own = self.level(num_id, level)
        count = counts[level]
        counts[level] = own.start if count is None else count + 1
        for deeper in range(level + 1, 9):
            restart = self.level(num_id, deeper).restart
            if restart is None or (restart > 0 and level < restart):
                counts[deeper] = None
        if own.fmt == "bullet":
            return "-"

        def place(m: re.Match[str]) -> str:
            at = int(m.group(1)) - 1
            got = counts[at]
            spec = self.level(num_id, at)
            return shown(spec.start if got is None else got, "decimal" if own.legal else spec.fmt)

        return _PLACE.sub(place, own.text).strip()


def read_lists(root: ElementTree.Element | None, list_styles: dict[str, str]) -> Lists:
    """The lists of `word/numbering.xml` (None: a document without lists);
    `list_styles` maps each list style's id to the list (`w:numId`) it names."""
    lists = Lists()
    starts: dict[str, dict[int, int]] = {}  # a list's start overrides of levels it keeps
    for el in root if root is not None else ():
        if name(el) == "abstractNum":
            abstract = attr(el, "abstractNumId") or ""
            lists.abstracts[abstract] = _levels(el)
            link = attr(child(el, "numStyleLink"), "val")
            if link is not None:
                lists.links[abstract] = link
            style = attr(child(el, "styleLink"), "val")
            if style is not None:
                lists.styled[style] = abstract
        elif name(el) == "num":
            num_id = attr(el, "numId") or ""
            lists.nums[num_id] = attr(child(el, "abstractNumId"), "val") or ""
            own = lists.overrides[num_id] = {}
            starts[num_id] = {}
            for item in el:
                level = number(attr(item, "ilvl"), None)
                if name(item) != "lvlOverride" or level is None or level > 8:
                    continue
                start = number(attr(child(item, "startOverride"), "val"), None)
                lvl = child(item, "lvl")
                if lvl is not None:  # a level of its own; a start override still wins
                    own[level] = _level(lvl, level, start)
                elif start is not None:
                    starts[num_id][level] = start
    for style, style_num in list_styles.items():  # a list style's own list defines it
        defined = lists.nums.get(style_num)
        if defined is not None and defined not in lists.links:
            lists.styled.setdefault(style, defined)
    for num_id, levels in starts.items():  # with the links known, the levels they restart
        for level, start in levels.items():
            base = lists.level(num_id, level)
            lists.overrides[num_id][level] = replace(base, start=min(start, MAX_START))
    return lists

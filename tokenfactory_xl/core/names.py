"""One rule for the names people type: a site's, a cohort's, a GPU model's, a file's.

A site's name becomes a file name, a row of the portfolio, a line of the report and the key that
tells two sites apart. Two names that look the same must therefore be the same name, and a name
must look like what it is:

- **Unicode NFC.** ``Zürich`` typed on a Mac (``u`` + a combining diaeresis) and on Windows (one
  ``ü``) is one name: every name is read in its composed form (NFC), and names are compared
  composed and without regard to case (:func:`key`).
- **No hidden characters.** Control characters (a tab, a line break), the line and paragraph
  separators U+2028/U+2029, the bidirectional controls (a right-to-left override makes
  ``invoice`` + U+202E + ``xslx.exe`` show as another name) and the invisible characters (a
  zero-width space, a soft hyphen, a byte-order mark) are refused in a name, naming each one
  (:func:`hidden`), and shown escaped (``\\u200b``) wherever a name is echoed (:func:`shown`).
- **No look-alikes.** A Cyrillic ``а`` or a Greek ``Α`` looks like the Latin letter: two names
  that differ only in such letters (or in full-width letters) look the same and are two sites
  to the eye of no one, so they are compared by :func:`look`, and the letters are named
  (:func:`look_alikes`). A name written wholly in Cyrillic or Greek is a name like any other.
"""

from __future__ import annotations

import re
import unicodedata

#: Characters that reorder the text shown around them (Unicode bidirectional controls).
BIDI_CONTROLS = "\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069"
#: Characters that show as nothing: the soft hyphen, the combining grapheme joiner, the Hangul
#: and Khmer fillers, the Mongolian vowel separator, the zero-width space, non-joiner and
#: joiner, the word joiner and invisible operators, the byte-order mark, and the tag characters.
INVISIBLE = ("\u00ad\u034f\u115f\u1160\u17b4\u17b5\u180e\u200b-\u200d\u2060-\u2064\u3164"
             "\ufeff\uffa0\U000e0000-\U000e007f")
#: The line and paragraph separators: a line break that no ``\n`` test finds.
SEPARATORS = "\u2028\u2029"
#: Lone surrogates: no character at all, but how Python holds a byte that is not UTF-8 (a name
#: typed in a terminal set to another encoding reaches the command line so); no file can store
#: one, so a workbook could not be written with it.
SURROGATES = "\ud800-\udfff"
#: Every character a name may not hold: control characters, and the four kinds above.
HIDDEN = re.compile(rf"[\x00-\x1f\x7f-\x9f{BIDI_CONTROLS}{INVISIBLE}{SEPARATORS}{SURROGATES}]")
#: Every character a free text (an input's source note) may not hold: those of a name but the
#: line break and the tab, which a note written on several lines holds.
HIDDEN_IN_TEXT = re.compile(
    rf"[\x00-\x08\x0b-\x1f\x7f-\x9f{BIDI_CONTROLS}{INVISIBLE}{SEPARATORS}{SURROGATES}]")
_NOT_UTF8 = re.compile(f"[{SURROGATES}]")

_WHAT = {"\t": "a tab", "\n": "a line break", "\r": "a carriage return",
         "\u2028": "a line separator", "\u2029": "a paragraph separator",
         "\u00ad": "a soft hyphen", "\u200b": "a zero-width space",
         "\u200c": "a zero-width non-joiner", "\u200d": "a zero-width joiner",
         "\u2060": "a word joiner", "\ufeff": "a byte-order mark (zero-width no-break space)"}


def _what(char: str) -> str:
    if char in _WHAT:
        return _WHAT[char]
    if re.match(rf"[{BIDI_CONTROLS}]", char):
        return "a bidirectional control"
    if re.match(rf"[{INVISIBLE}]", char):
        return "an invisible character"
    if re.match(rf"[{SURROGATES}]", char):
        return "a byte that is not UTF-8"
    return "a control character"


def normal(text: str) -> str:
    """``text`` in Unicode's composed form (NFC)."""
    return unicodedata.normalize("NFC", text)


def key(text: object) -> str:
    """What tells two names apart: composed (NFC), without regard to case or surrounding
    spaces, any run of spaces (a no-break space too) as one, hidden characters left out
    (``"Zu\\u0308rich"`` and ``"ZÜRICH "`` are one name)."""
    folded = normal(HIDDEN.sub("", str(text)).strip()).casefold()
    return re.sub(r"\s+", " ", normal(folded))  # a no-break space shows as a space


def hidden(text: str, pattern: re.Pattern[str] = HIDDEN) -> str:
    """The hidden characters of ``text`` in words (``"U+200B (a zero-width space) at character
    6"``), at most three, or ``""`` when it has none (those ``pattern`` finds: a name's by
    default, :data:`HIDDEN_IN_TEXT` for a free text)."""
    found = []
    for match in pattern.finditer(text):
        char = match.group()
        if all(not item.startswith(f"U+{ord(char):04X} ") for item in found):
            found.append(f"U+{ord(char):04X} ({_what(char)}) at character {match.start() + 1}")
        if len(found) == 3:
            break
    return ", ".join(found)


def not_utf8(text: str) -> str:
    """Why a text holding bytes that are not UTF-8 (lone surrogates) is refused, or ``""``."""
    which = hidden(text, _NOT_UTF8)
    if not which:
        return ""
    return (f"cannot be stored: {which}; the terminal or file it came from is set to another "
            "encoding than UTF-8")


def problem(text: str) -> str:
    """Why a name holding hidden characters is refused, or ``""`` when it holds none."""
    which = not_utf8(text)
    if which:
        return which
    which = hidden(text)
    if not which:
        return ""
    return (f"contains control characters: {which}, which do not show or change how the "
            "text shows, so two names that look alike could be two sites")


def shown(text: object) -> str:
    """``text`` with its hidden characters written as escapes (``\\u200b``): a value echoed in
    a message or a report cannot rewrite a terminal line, show as another, or hide a
    difference."""
    return HIDDEN.sub(lambda m: f"\\u{ord(m.group()):04x}" if ord(m.group()) < 0x10000
                      else f"\\U{ord(m.group()):08x}", str(text))


#: Letters of other alphabets that look like a Latin letter (lower case, as :func:`key` folds
#: them; an upper-case look-alike maps through its lower-case form: ``В`` → ``в`` → ``b``).
LOOK_ALIKES = str.maketrans({
    # Cyrillic
    "а": "a", "в": "b", "е": "e", "і": "i", "ј": "j", "к": "k", "м": "m", "н": "h", "о": "o",
    "р": "p", "с": "c", "т": "t", "у": "y", "х": "x", "ѕ": "s", "һ": "h", "ԁ": "d", "ԛ": "q",
    "ԝ": "w", "ү": "y",
    # Greek
    "α": "a", "β": "b", "ε": "e", "ζ": "z", "η": "h", "ι": "i", "κ": "k", "μ": "m", "ν": "n",
    "ο": "o", "ρ": "p", "τ": "t", "υ": "y", "χ": "x", "ϲ": "c",
})


def look(text: object) -> str:
    """How a name looks: its :func:`key` with full-width and compatibility letters folded (NFKC)
    and the letters of :data:`LOOK_ALIKES` read as the Latin letters they look like. Two names
    of one look but different keys are two names a reader cannot tell apart."""
    return unicodedata.normalize("NFKC", key(text)).translate(LOOK_ALIKES)


def look_alikes(text: str) -> str:
    """The letters of ``text`` that look like another alphabet's, named (``"а (CYRILLIC SMALL
    LETTER A) at character 5"``), at most three; ``""`` when it has none."""
    found = []
    for at, char in enumerate(text, start=1):
        folded = unicodedata.normalize("NFKC", char).casefold()
        if folded != char.casefold() or folded.translate(LOOK_ALIKES) != folded:
            found.append(f"{char} ({unicodedata.name(char, f'U+{ord(char):04X}')}) at "
                         f"character {at}")
        if len(found) == 3:
            break
    return ", ".join(found)

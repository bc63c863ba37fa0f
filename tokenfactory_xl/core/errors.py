"""The errors tokenfactory_xl raises for what a user can fix: one tree, one base.

Every error a user should read as a message, not as a traceback, is a
:class:`TokenFactoryError`; the command line catches that one class and prints its text (exit
status 2), and a Python user can catch it the same way. Beneath it:

- :class:`InputError` — one or more input values are not allowed. A finance user who types a
  bad value wants to know four things: which input, what they typed, what is allowed, and how
  to fix it. :class:`Problem` carries exactly those; :class:`InputError` carries every problem
  found in one go, so a sheet with five mistakes is fixed in one pass, not five;
- :class:`UsageError` — a mistake that is not an input value: a missing file, an option that
  needs another, an output that exists;
- :class:`EngineMissing` — a spreadsheet engine the task needs (LibreOffice, Gnumeric) is not
  installed;
- refused and unreadable files, and each layer's own refusals, subclass the base where they are
  raised (``files.safe_xlsx.RefusedFile``, ``capacity.measurement.FileProblem`` …).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from .names import shown


@dataclass(frozen=True)
class Problem:
    """One bad input.

    Attributes
    ----------
    name : the input's name as the user wrote it (``gpus``, ``tef_target.Optimised``).
    value : what the user gave, unchanged.
    message : what is wrong and what is allowed, in plain words.
    fix : the likely fix, or ``""`` when the message already says it.
    where : where the value came from (``row 4``), or ``""``.
    """

    name: str
    value: object
    message: str
    fix: str = ""
    where: str = ""

    def __str__(self) -> str:
        head = f"{self.where}: " if self.where else ""
        text = f"{head}{self.name}={_show(self.value)}: {self.message}"
        if self.fix:
            text += f"; {self.fix}"
        return text


class TokenFactoryError(Exception):
    """Base of every error the package raises for something its user can act on; its text is
    the whole message (what, the value, what is allowed, the fix)."""


class UsageError(TokenFactoryError):
    """A mistake of the user's that is not an input value (a missing file, a bad option)."""


class EngineMissing(TokenFactoryError, RuntimeError):
    """A spreadsheet engine the task needs (LibreOffice, Gnumeric) is not installed."""


class InputError(TokenFactoryError, ValueError):
    """One or more inputs are not allowed; ``problems`` lists each of them."""

    def __init__(self, problems: Iterable[Problem]):
        self.problems: tuple[Problem, ...] = tuple(problems)
        super().__init__(self._text())

    def _text(self) -> str:
        if len(self.problems) == 1:
            return str(self.problems[0])
        lines = [f"{len(self.problems)} inputs need fixing:"]
        lines += [f"  - {p}" for p in self.problems]
        return "\n".join(lines)


def _show(value: object) -> str:
    """How a user's value is echoed back: text in quotes, numbers as typed; a hidden character
    (a control character, an invisible one, a byte that is not UTF-8) as its escape
    (:func:`~.names.shown`, or ``repr`` in quotes), so the message shows where it is."""
    if isinstance(value, str):
        plain = value and value == value.strip() and not any(c in value for c in " '\"=")
        return shown(value) if plain else repr(value)  # repr escapes what does not print
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e15:
        return str(int(value))
    return str(value)

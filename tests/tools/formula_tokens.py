"""The tokens of a workbook's formulas, with each formula of the committed template tokenized
once per test run.

openpyxl's ``Tokenizer`` is pure Python: the ~57,000 formulas of a workbook take it about 2 s
of CPU, and several tests read every formula of the same workbook (the builder's, the committed
template, a batch workbook: one set of formula texts, the values aside). :func:`tokenized_template`
tokenizes each distinct formula of the committed template; a :class:`FormulaTokens` made from
it answers those from what was kept and tokenizes any other text when it is asked, so what a
test reads is always ``Tokenizer``'s answer for the text it gives.
"""

from __future__ import annotations

import sys
from pathlib import Path

from openpyxl.formula.tokenizer import Tokenizer

#: A token as ``Tokenizer`` gives it: (type, subtype, value), e.g. ("OPERAND", "NUMBER", "1").
Token = tuple[str, str, str]

ROOT = Path(__file__).resolve().parents[2]
TEMPLATE = ROOT / "templates" / "TFOM.xlsx"


def tokenize(formula: str) -> tuple[Token, ...]:
    """``Tokenizer(formula)``'s tokens."""
    return tuple((sys.intern(t.type), sys.intern(t.subtype), sys.intern(t.value))
                 for t in Tokenizer(formula).items)


def template_formulas(path: Path = TEMPLATE) -> set[str]:
    """Every formula text of the cells of the workbook at ``path`` (read-only: no styles)."""
    import openpyxl

    book = openpyxl.load_workbook(path, read_only=True)
    try:
        return {value for ws in book.worksheets for row in ws.iter_rows(values_only=True)
                for value in row if isinstance(value, str) and value.startswith("=")}
    finally:
        book.close()


def tokenized_template(folder: Path | None = None) -> dict[str, tuple[Token, ...]]:
    """Formula text → its tokens, for every formula of the committed template. (``folder``:
    :func:`tests.tools.once.build_once`'s, unused.)"""
    return {text: tokenize(text) for text in sorted(template_formulas())}


class FormulaTokens:
    """``tokens(formula)``: ``Tokenizer``'s tokens of ``formula``, read from those kept when
    they hold it, else tokenized now (and kept for the next time in this process)."""

    def __init__(self, known: dict[str, tuple[Token, ...]]) -> None:
        self._known = known

    def __call__(self, formula: str) -> tuple[Token, ...]:
        found = self._known.get(formula)
        if found is None:
            found = self._known[formula] = tokenize(formula)
        return found

    def __len__(self) -> int:
        return len(self._known)

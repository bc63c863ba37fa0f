"""The formula tokens kept once per run (tests/tools/formula_tokens.py) are openpyxl's
Tokenizer's for every text, kept or not."""

from __future__ import annotations

from openpyxl.formula.tokenizer import Tokenizer

from tests.tools.formula_tokens import FormulaTokens, template_formulas


def tokenizer(text: str) -> list[tuple[str, str, str]]:
    return [(t.type, t.subtype, t.value) for t in Tokenizer(text).items]


def test_kept_tokens_are_the_tokenizers(formula_tokens):
    texts = sorted(template_formulas())
    assert len(texts) > 50_000  # every month's formula of each Timeline row, and the rest
    for text in texts[::250]:  # a sample spread over every sheet's formulas
        assert list(formula_tokens(text)) == tokenizer(text), text


def test_a_text_not_kept_is_tokenized_when_asked():
    tokens = FormulaTokens({"=1": (("OPERAND", "NUMBER", "2"),)})  # kept: read back as kept
    assert tokens("=1") == (("OPERAND", "NUMBER", "2"),)
    text = '=IF(Timeline!$C$9=0,"n/m",SUM(A1:B2)*2.5)'
    assert list(tokens(text)) == tokenizer(text)
    assert ("FUNC", "OPEN", "SUM(") in tokens(text) and len(tokens) == 2

"""``tokenfactory-xl statements``: the income statement, cash-flow statement and balance sheet
of one site by calendar year (methodology §10.4), as text, JSON or CSV."""

from __future__ import annotations

import argparse
import csv
import json
import sys


def cmd_statements(args: argparse.Namespace) -> int:
    from ..tfom.evaluation import run
    from ..tfom.statements import statement_labels, statements
    from .common import inputs_from_args

    inputs = inputs_from_args(args)
    document = statements(run(inputs), args.scenario)  # --scenario: that one only
    labels = statement_labels()
    if args.json:
        print(json.dumps(document, indent=2, allow_nan=False))
        return 0
    if args.csv:
        writer = csv.writer(sys.stdout, lineterminator="\n")
        writer.writerow(["scenario", "year", "statement", "line", "value"])
        for name, years in document.items():
            for year, parts in years.items():
                for part, lines in parts.items():
                    for key, value in lines.items():
                        writer.writerow([name, year, part, key, repr(value)])
        return 0
    currency = str(inputs["currency"])
    titles = {"income": "Income statement", "cash_flow": "Cash-flow statement",
              "balance": "Balance sheet at the year's end"}
    print(f"{inputs['site_name']} — the three statements by calendar year (month 0 counts in "
          f"the first), money in {currency}")
    for name, years in document.items():
        columns = list(years)
        rows: list[tuple[str, list[str]]] = []
        for part, title in titles.items():
            rows.append((f"{title}", [""] * len(columns)))
            for key in years[columns[0]][part]:
                if part == "cash_flow" and key == "equity":
                    label = "Equity: contributions − distributions"
                else:
                    label = labels[(part, key)]
                rows.append((f"  {label}", [f"{round(years[y][part][key]):,}"
                                            for y in columns]))
        width = max(len(label) for label, _ in rows)
        right = [max([len(y)] + [len(texts[j]) for _, texts in rows])
                 for j, y in enumerate(columns)]
        print(f"\n{name} scenario")
        print(f"  {'':<{width}}  " + "  ".join(f"{y:>{r}}" for y, r in zip(columns, right,
                                                                          strict=True)))
        for label, texts in rows:
            print(f"  {label:<{width}}  " + "  ".join(f"{t:>{r}}" for t, r in zip(
                texts, right, strict=True)))
    return 0


def register(subparsers: argparse._SubParsersAction) -> None:
    from .common import add_input_options, add_print_output

    p = subparsers.add_parser(
        "statements",
        description="Compute the TFOM for one site (the defaults, changed with --set) and print "
                    "its income statement, cash-flow statement and balance sheet for each "
                    "scenario and calendar year. The cash-flow statement's four parts sum to 0 "
                    "(the company keeps no cash); the balance sheet balances in every year. "
                    "--scenario shows one scenario only.",
        epilog="examples:\n  tokenfactory-xl statements --scenario Base\n"
               "  tokenfactory-xl statements --set receivable_days=45 --json -o statements.json",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    add_input_options(p)
    form = p.add_mutually_exclusive_group()
    form.add_argument("--json", action="store_true",
                      help="one JSON object: {scenario: {year: {\"income\": {…}, "
                           "\"cash_flow\": {…}, \"balance\": {…}}}}")
    form.add_argument("--csv", action="store_true",
                      help="one row per figure: scenario, year, statement, line, value")
    add_print_output(p)
    p.set_defaults(func=cmd_statements)

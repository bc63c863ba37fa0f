"""The ``summary`` and ``inputs`` commands: one site's summary outputs, and the input catalogue.
"""

from __future__ import annotations

import argparse
import json
from typing import TYPE_CHECKING

from ..core.catalogue import (
    COHORT_REQUIRED,
    COHORT_SPECS,
    INPUTS,
    MAX_COHORTS,
    SCENARIO_NAMES,
)
from .common import (
    add_csv_option,
    add_input_options,
    add_print_output,
    format_number,
    format_value,
    inputs_from_args,
    plain_value,
    print_csv,
    say,
    table_format,
    terminal_width,
    unit_text,
)

if TYPE_CHECKING:
    pass



# -- summary -------------------------------------------------------------------------------------
def cmd_summary(args: argparse.Namespace) -> int:
    from ..tfom.evaluation import run
    from ..tfom.operating_model import BRIDGE_LINES, BRIDGE_NAMES, OUTPUTS

    form = table_format(args)
    inputs = inputs_from_args(args)
    result = run(inputs)
    live = result.scenarios[result.scenario]
    if form == "csv":
        names = list(result.scenarios)
        print_csv(["name", "label", "unit", *(n.lower() for n in names)],
                  [[o.name, o.label, o.unit, *(result.scenarios[n].summary[o.name]
                                               for n in names)] for o in OUTPUTS]
                  + [["uplift_npv", "NPV: Optimised − Base", "money",
                      *(result.uplift["npv"] if n == "Optimised" else None for n in names)]]
                  + [[line.meta["output"], line.label, "money",
                      *(result.uplift[line.meta["output"]] if n == "Optimised" else None
                        for n in names)] for line in BRIDGE_LINES])
        return 0
    if args.json:
        bridge = {"uplift_npv": result.uplift["npv"],
                  **{name: result.uplift[name] for name in BRIDGE_NAMES}}
        document = {**result.summary, "warning_rules": list(live.warnings),
                    "not_meaningful": _not_meaningful(result.summary),
                    "scenarios": {name: {**sc.summary, "warning_rules": list(sc.warnings),
                                         "not_meaningful": _not_meaningful(sc.summary)}
                                  for name, sc in result.scenarios.items()},
                    "optimised_minus_base": {k: v for k, v in result.uplift.items()
                                             if k not in BRIDGE_NAMES},
                    "bridge": bridge}
        print(json.dumps(document, indent=2, allow_nan=False))
        return 0
    currency = str(inputs["currency"])
    cohorts = len(inputs.cohorts)
    fleet = f", {cohorts + 1} cohorts" if cohorts else ""
    print(f"{inputs['site_name']} — {result.scenario} scenario (live), "
          f"{inputs['horizon_months']:.0f} months from {inputs['start_date']:%Y-%m-%d}{fleet}")
    names = list(result.scenarios)
    marked = [f"{n}*" if n == result.scenario else n for n in names]
    rows = [(o.label, o.kind, o.unit, [result.scenarios[n].summary[o.name] for n in names],
             o.name) for o in OUTPUTS]
    rows.append(("NPV: Optimised − Base", "money", "money", [None, result.uplift["npv"], None],
                 "uplift_npv"))
    for line in BRIDGE_LINES:  # the uplift taken apart (methodology §10.3)
        step = line.meta["output"]
        rows.append((f"  {line.label.removeprefix('NPV uplift: ')}", "money", "money",
                     [None, result.uplift[step], None], step))
    wide = _summary_wide(rows, marked, currency)
    width = terminal_width()
    lines = wide if width is None or max(map(len, wide)) <= width else \
        _summary_narrow(rows, marked, currency)
    for line in lines:
        print(line)
    print("  * the live scenario (--scenario); --json gives every scenario's figures")
    fired: dict[str, list[str]] = {}
    for name, sc in result.scenarios.items():
        for text in sc.warnings:
            fired.setdefault(text, []).append(name)
    if fired:
        print("Warnings (they do not make the figures wrong; read them before the figures):")
        for text, where in fired.items():
            say(f"  ! {text} ({', '.join(where)})", width, "    ")
    return 0


def _not_meaningful(summary: dict[str, float | None]) -> list[str]:
    """The outputs whose ``null`` in ``--json`` is a ratio without meaning ("n/m" in the table
    and the workbook), not a figure that does not exist ("none")."""
    from ..tfom.formula import NM
    from ..tfom.operating_model import OUTPUT_MISSING

    return [name for name, missing in OUTPUT_MISSING.items()
            if missing == NM and summary.get(name) is None]


#: The rows (the uplift and its bridge) whose empty cells are no figure at all (not "none").
_UPLIFT = "uplift_npv"


def _summary_wide(rows: list, marked: list[str], currency: str) -> list[str]:
    """One line per output: its label, each scenario's figure with its unit, its name."""
    from ..tfom.operating_model import OUTPUT_MISSING

    texts = [[("" if name.startswith(_UPLIFT) and v is None
               else format_value(v, kind, currency, unit, OUTPUT_MISSING.get(name, "none")))
              for v in values] for _, kind, unit, values, name in rows]
    width = max(len(label) for label, *_ in rows)
    right = [max(len(t[j]) for t in texts + [marked]) for j in range(len(marked))]
    out = [f"  {'':<{width}}  " + "  ".join(f"{n:>{r}}" for n, r in zip(marked, right,
                                                                        strict=True))]
    for (label, *_, name), cells in zip(rows, texts, strict=True):
        line = "  ".join(f"{t:>{r}}" for t, r in zip(cells, right, strict=True))
        out.append(f"  {label:<{width}}  {line}  {name}")
    return out


def _summary_narrow(rows: list, marked: list[str], currency: str) -> list[str]:
    """For a narrow terminal: each output's label, unit and name on one line, its figures
    (digits only) on the next, in the scenarios' columns."""
    from ..tfom.operating_model import OUTPUT_MISSING

    digits = [[("" if name.startswith(_UPLIFT) and v is None else
                OUTPUT_MISSING.get(name, "none") if v is None else format_number(v, kind))
               for v in values]
              for _, kind, _, values, name in rows]
    right = max(len(t) for t in [*(c for r in digits for c in r), *marked])
    out = ["    " + "  ".join(f"{n:>{right}}" for n in marked)]
    for (label, kind, unit, _, name), cells in zip(rows, digits, strict=True):
        unit_words = " ".join(t for t in unit_text(kind, currency, unit) if t)
        out.append(f"  {label}{f' [{unit_words}]' if unit_words else ''}  ({name})")
        out.append("    " + "  ".join(f"{t:>{right}}" for t in cells).rstrip())
    return out


def cmd_inputs(args: argparse.Namespace) -> int:
    if table_format(args) == "csv":
        def default(spec) -> object:
            return " / ".join(map(plain_value, spec.default)) if spec.per_scenario else spec.default

        print_csv(["name", "label", "unit", "group", "default", "per_scenario", "allowed",
                   "description"],
                  [[i.name, i.label, i.unit, i.group, default(i), i.per_scenario, i.allowed,
                    i.description] for i in INPUTS])
        return 0
    if args.json:
        rows = [{"name": i.name, "label": i.label, "unit": i.unit, "group": i.group,
                 "default": list(i.default) if i.per_scenario else i.default,
                 "per_scenario": i.per_scenario, "allowed": i.allowed,
                 "description": i.description} for i in INPUTS]
        cohorts = [{"name": c.name, "label": c.label, "unit": c.unit,
                    "required": c.name in COHORT_REQUIRED, "allowed": c.allowed,
                    "description": c.description} for c in COHORT_SPECS]
        print(json.dumps({"inputs": rows, "cohort_columns": cohorts} if args.cohorts else rows,
                         indent=2, default=str))
        return 0
    width = terminal_width()

    for spec in INPUTS:
        default = (" / ".join("blank" if d is None else str(d) for d in spec.default)
                   if spec.per_scenario else str(spec.default))
        scen = f"  (per scenario: {' / '.join(SCENARIO_NAMES)})" if spec.per_scenario else ""
        say(f"{spec.name}  [{spec.unit}]  default {default}{scen}", width, "    ")
        say(f"    {spec.label}: {spec.description} Allowed: {spec.allowed}.", width)
    print()
    say(f"Cohort columns: a cohorts table (--cohorts FILE, or a sheet named cohorts in a sites "
        f"workbook) has one row per cohort after the site's own GPUs (cohort 1), at most "
        f"{MAX_COHORTS - 1} per site; site_name says which site a row belongs to.", width)
    for spec in COHORT_SPECS:
        need = "required" if spec.name in COHORT_REQUIRED else "optional"
        print(f"{spec.name}  [{spec.unit}]  {need}")
        say(f"    {spec.label}: {spec.description} Allowed: {spec.allowed}.", width)
    return 0


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "summary",
        description="Compute the TFOM for one site (the defaults, changed with --set) and print "
                    "the summary outputs of the three scenarios side by side: TEF, TFI, "
                    "breakeven utilisation, NPV, IRR, payback …",
        epilog="examples:\n  tokenfactory-xl summary --set gpus=2048 --set tef_target=0.65 "
               "--json\n  tokenfactory-xl summary --scenario Optimised -o optimised.txt",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    add_input_options(p)
    p.add_argument("--json", action="store_true",
                   help="print one JSON object keyed by the output names (none → null): the live "
                        "scenario's figures, every scenario's under \"scenarios\" and Optimised "
                        "− Base under \"optimised_minus_base\"")
    add_csv_option(p, "one row per output (its name, label and unit, then each scenario's "
                      "figure)")
    add_print_output(p)
    p.set_defaults(func=cmd_summary)

    p = subparsers.add_parser(
        "inputs",
        description="List the input catalogue: the names --set and a sites file take.",
        epilog="example: tokenfactory-xl inputs --json -o inputs.json")
    p.add_argument("--json", action="store_true", help="as a JSON list")
    add_csv_option(p, "one row per input")
    p.add_argument("--cohorts", action="store_true",
                   help="with --json: an object of the inputs and the cohort columns (the text "
                        "listing always ends with the cohort columns)")
    add_print_output(p)
    p.set_defaults(func=cmd_inputs)

"""``tokenfactory-xl sensitivity`` and ``tokenfactory-xl risk``: the tornado and the Monte Carlo
of methodology §8 for one site, as text or JSON."""

from __future__ import annotations

import argparse
import json

from ..core.catalogue import BY_NAME


def _value(name: str, value: float) -> str:
    """A driver's value as ``summary`` and ``inputs`` show it: a fraction as a percentage with
    two decimals (``30.00%``), any other number as the catalogue writes it (``32,000``,
    ``0.064``)."""
    from .common import format_number

    return format_number(value, "fraction" if BY_NAME[name].kind == "fraction" else "")


def cmd_sensitivity(args: argparse.Namespace) -> int:
    from ..tfom.risk import tornado
    from .common import format_value, inputs_from_args, print_csv, say, table_format, terminal_width

    form = table_format(args)
    inputs = inputs_from_args(args)
    result = tornado(inputs)
    if form == "csv":
        print_csv(["name", "label", "low", "high", "npv_low", "npv_high", "swing"],
                  [[f.name, f.label, f.low, f.high, f.npv_low, f.npv_high, f.swing]
                   for f in result.drivers])
        return 0
    if args.json:
        print(json.dumps(result.as_json(), indent=2, allow_nan=False))
        return 0
    currency = str(inputs["currency"])

    def money(x: float) -> str:
        return format_value(x, "money", currency, "money")

    width = terminal_width()
    say(f"{inputs['site_name']} — project NPV of the {inputs.scenario} scenario (live) at a "
        f"low and a high value of each driver, by swing", width)
    print(f"  NPV as it is: {money(result.npv)}")
    rows = [(f.label, f"{_value(f.name, f.low)} … {_value(f.name, f.high)}", money(f.npv_low),
             money(f.npv_high), money(f.swing), f.name) for f in result.drivers]
    head = ("Driver", "Low … high", "NPV at low", "NPV at high", "Swing", "")
    widths = [max(len(r[i]) for r in [head, *rows]) for i in range(5)]
    lines = ["  " + "  ".join(h.ljust(widths[i]) if i < 2 else h.rjust(widths[i])
                              for i, h in enumerate(head[:5]))]
    for r in rows:
        lines.append("  " + "  ".join(c.ljust(widths[i]) if i < 2 else c.rjust(widths[i])
                                      for i, c in enumerate(r[:5])) + f"  {r[5]}")
    if width is not None and max(map(len, lines)) > width:
        # a narrow terminal: each driver's label, name and range on one line, its NPVs under
        lines = [f"  Driver (name): low … high; NPV at low, at high, swing [{currency}]"]
        for f, r in zip(result.drivers, rows, strict=True):
            lines.append(f"  {f.label} ({f.name}): {r[1]}")
            lines.append("    " + "  ".join(f"{x:>14,.0f}" for x in (f.npv_low, f.npv_high,
                                                                       f.swing)))
    for line in lines:
        print(line)
    say("  ±20 % of each value (price decline ± 5 points), fractions kept in their range; "
        "capex_per_gpu and life_years move every cohort alike", width, "    ")
    return 0


def cmd_risk(args: argparse.Namespace) -> int:
    from ..core.errors import UsageError
    from ..tfom.risk import RISK_DRIVERS, risk, triangle
    from .common import format_value, inputs_from_args, print_csv, table_format

    if args.draws < 1:
        raise UsageError(f"--draws {args.draws}: needs at least 1 draw")
    form = table_format(args)
    inputs = inputs_from_args(args)
    result = risk(inputs, args.draws)
    if form == "csv":
        print_csv(["name", "value"], list(result.as_json().items()))
        return 0
    if args.json:
        print(json.dumps(result.as_json(), indent=2, allow_nan=False))
        return 0
    currency = str(inputs["currency"])
    print(f"{inputs['site_name']} — risk of the {inputs.scenario} scenario (live): "
          f"{result.draws:,} draws, seed {result.seed}")
    figures = [("NPV P10", format_value(result.npv_p10, "money", currency, "money"), "npv_p10"),
               ("NPV P50", format_value(result.npv_p50, "money", currency, "money"), "npv_p50"),
               ("NPV P90", format_value(result.npv_p90, "money", currency, "money"), "npv_p90"),
               ("NPV mean", format_value(result.npv_mean, "money", currency, "money"),
                "npv_mean"),
               ("Probability NPV < 0", format_value(result.prob_npv_negative, "fraction"),
                "prob_npv_negative"),
               ("IRR P50", format_value(result.irr_p50, "fraction", currency, "fraction"),
                "irr_p50")]
    width = max(len(f[0]) for f in figures)
    right = max(len(f[1]) for f in figures)
    for label, text, name in figures:
        print(f"  {label:<{width}}  {text:>{right}}  {name}")
    print("  drawn, triangular (low · live value · high: the range_low_/range_high_ inputs):")
    for name in RISK_DRIVERS:
        low, mode, high = triangle(inputs, name)
        print(f"    {name}: {_value(name, low)} · {_value(name, mode)} · {_value(name, high)}")
    return 0


def register(subparsers: argparse._SubParsersAction) -> None:
    from ..tfom.risk import DEFAULT_DRAWS
    from .common import add_csv_option, add_input_options, add_print_output, positive_int

    p = subparsers.add_parser(
        "sensitivity",
        description="The tornado (methodology §10.6): the live scenario's project NPV at the low "
                    "and the high end of each driver's range (tef_target, sell_through_target, "
                    "price_factor, decline_per_quarter, market_growth_per_quarter, "
                    "capex_per_gpu, electricity_per_kwh, resale_decline_per_quarter, "
                    "market_mtok_month1, availability, discount_rate, life_years), sorted by "
                    "swing. A range is a factor of the live value, or an offset for the decline, "
                    "availability and discount rate: the inputs range_low_<driver> and "
                    "range_high_<driver>. Each NPV is what `summary --set DRIVER=VALUE` gives.",
        epilog="examples:\n  tokenfactory-xl sensitivity\n  tokenfactory-xl sensitivity "
               "--set gpus=2048 --scenario Optimised --json",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    add_input_options(p)
    p.add_argument("--json", action="store_true",
                   help='print {"npv": …, "drivers": [{"name", "low", "high", "npv_low", '
                        '"npv_high"}, …]}, sorted by swing')
    add_csv_option(p, "one row per driver, sorted by swing")
    add_print_output(p)
    p.set_defaults(func=cmd_sensitivity)

    p = subparsers.add_parser(
        "risk",
        description="Monte Carlo (methodology §10.6): draws of the first nine drivers of the "
                    "tornado, each triangular from the low end of its range through the live "
                    "value to the high end (the inputs range_low_<driver>, range_high_<driver>); "
                    "the NPV's P10/P50/P90 and mean, the probability of a negative NPV and the "
                    "median IRR. A fixed seed: the same inputs give the same figures.",
        epilog="examples:\n  tokenfactory-xl risk\n  tokenfactory-xl risk --draws 50000 "
               "--set gpus=2048 --json",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    add_input_options(p)
    p.add_argument("--draws", type=positive_int, default=DEFAULT_DRAWS, metavar="N",
                   help=f"number of draws (default {DEFAULT_DRAWS:,})")
    p.add_argument("--json", action="store_true",
                   help='print {"draws", "seed", "npv_p10", "npv_p50", "npv_p90", "npv_mean", '
                        '"prob_npv_negative", "irr_p50"} (none → null)')
    add_csv_option(p, "one row per figure (name, value)")
    add_print_output(p)
    p.set_defaults(func=cmd_risk)

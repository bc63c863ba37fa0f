"""``tokenfactory-xl solve``: what must be true for an output to meet a target (one site)."""

from __future__ import annotations

import argparse
import json

from ..core.catalogue import BY_NAME

#: Exit status when no value of the input's range meets the target (as ``grep`` finding none).
EXIT_NOT_REACHED = 1


def _input_value(name: str, value: float | None) -> str:
    """An input's value as ``--set`` takes it: every digit a put-back needs."""
    if value is None:
        return "none"
    if BY_NAME[name].kind == "integer":
        return f"{int(value)}"
    return f"{value:.15g}"


def _shown(name: str, value: float | None) -> str:
    """An input's value for reading: a fraction also as a percentage."""
    text = _input_value(name, value)
    if value is not None and BY_NAME[name].kind == "fraction":
        text += f" ({value:.4%})"
    return text


def cmd_solve(args: argparse.Namespace) -> int:
    from ..tfom.operating_model import OUTPUTS
    from ..tfom.solve import parse_target, solvable, solve
    from .common import format_value, inputs_from_args, print_records_csv, table_format

    shape = table_format(args)
    inputs = inputs_from_args(args)
    target = parse_target(args.target)
    solvable(args.for_input, inputs)  # an unknown input is reported before any work
    found = solve(inputs, args.for_input, target)
    if shape == "json":
        print(json.dumps(found.as_json(), indent=2, allow_nan=False))
        return 0 if found.reached else EXIT_NOT_REACHED
    if shape == "csv":
        print_records_csv([found.as_json()])
        return 0 if found.reached else EXIT_NOT_REACHED
    output = next(o for o in OUTPUTS if o.name == found.output)
    currency = str(inputs["currency"])

    def figure(x: float | None) -> str:
        if x is not None and output.unit.startswith("money"):
            x = round(x, 2) or 0.0  # within a cent of 0 shows as 0, not -0
        return format_value(x, output.kind, currency, output.unit)

    name = found.input.partition(".")[0]
    goal = f"{found.output} = {figure(found.target)}"
    print(f"{found.site} — what must be true for {goal} ({found.scenario} scenario)")
    if found.reached and found.output_beyond is not None:
        print(f"  {found.input} = {_shown(name, found.value)} (a whole number; the nearest to "
              f"the target) gives {found.output} {figure(found.output_at_value)}")
    elif found.reached:
        print(f"  {found.input} = {_shown(name, found.value)}  gives {found.output} "
              f"{figure(found.output_at_value)}")
        others = [r for r in found.roots[1:]]
        if others:
            print("  also met at " + ", ".join(_shown(name, r) for r in others))
    elif found.jump:
        print(f"  no value meets it exactly: {found.output} jumps across the target at "
              f"{found.input} = {_shown(name, found.value)} (from "
              f"{figure(found.output_at_value)} to {figure(found.output_beyond)})")
    elif found.value is None:
        print(f"  no value of {found.input} from {_shown(name, found.low)} to "
              f"{_shown(name, found.high)} meets it: {found.output} is none throughout")
    else:
        print(f"  no value of {found.input} from {_shown(name, found.low)} to "
              f"{_shown(name, found.high)} meets it; the {found.closest} end comes closest: "
              f"{found.input} = {_shown(name, found.value)} gives {found.output} "
              f"{figure(found.output_at_value)}")
    print(f"  now: {found.input} = {_shown(name, found.current)} gives {found.output} "
          f"{figure(found.output_now)}")
    print(f"  searched {_shown(name, found.low)} … {_shown(name, found.high)}: "
          f"{found.output} {figure(found.output_low)} … {figure(found.output_high)}")
    for note in found.notes:
        print(f"  note: {note}")
    if found.reached:
        print(f"  check: tokenfactory-xl summary --set {found.key}="
              f"{_input_value(name, found.value)}" + "".join(f" --set {s}" for s in args.sets)
              + (f" --scenario {args.scenario}" if args.scenario else ""))
    return 0 if found.reached else EXIT_NOT_REACHED


def register(subparsers: argparse._SubParsersAction) -> None:
    from .common import add_csv_option, add_input_options, add_print_output

    p = subparsers.add_parser(
        "solve",
        description="What must be true: the value of one input at which a summary output meets "
                    "a target (NPV = 0, IRR = a hurdle rate, payback within 36 months, a DSCR "
                    "covenant), found by scanning the input's allowed range through the model "
                    "and refining the bracket. A per-scenario input is the live scenario's "
                    "(tef_target) or a named scenario's (tef_target.Optimised), whose output "
                    "is then read. Exit status 1 when no value of the range meets the target "
                    "(the end that comes closest is printed).",
        epilog="examples:\n  tokenfactory-xl solve --for tef_target --target npv=0\n"
               "  tokenfactory-xl solve --for price_factor --target irr=15% --json\n"
               "  tokenfactory-xl solve --for capex_per_gpu --target dscr=1.2 "
               "--set debt_share=0.5",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--for", dest="for_input", required=True, metavar="INPUT",
                   help="the numeric input to solve for (`tokenfactory-xl inputs` lists them); "
                        "NAME.Scenario for one scenario's value of a per-scenario input")
    p.add_argument("--target", required=True, metavar="OUTPUT=VALUE",
                   help="the output and the value it must take: npv=0, irr=0.15 (or 15%%), "
                        "payback_months=36, dscr=1.2 (min_dscr), or any output `summary` "
                        "lists")
    add_input_options(p)
    p.add_argument("--json", action="store_true",
                   help='print {"input", "scenario", "output", "target", "reached", "value", '
                        '"output_at_value", "current", "output_now", "low", "high", '
                        '"output_low", "output_high", "closest", "jump", "roots", "notes"}')
    add_csv_option(p, "one row: the answer and its bracket")
    add_print_output(p)
    p.set_defaults(func=cmd_solve)

"""The ``tokenfactory-xl completion`` command: shell completion for bash, zsh and fish.

``tokenfactory-xl completion bash`` prints a script that completes the commands, each command's
options, the values of options that take a fixed set (``--scenario Base|Optimised|Downside``),
file names elsewhere, and after ``--set`` the input names of the catalogue (``gpus=``,
``tef_target.Optimised=`` …): about eighty names nobody should have to remember. The script is
written from the command line's own parsers and the catalogue, so a new option or input is
completed without touching this module. zsh runs the bash script through ``bashcompinit``;
fish gets its own ``complete`` lines.
"""

from __future__ import annotations

import argparse
import shlex

from ..core.catalogue import INPUTS, SCENARIO_NAMES

PROGRAM = "tokenfactory-xl"
SHELLS = ("bash", "zsh", "fish")


def set_names() -> list[str]:
    """What ``--set`` completes: every input as ``name=``, and each per-scenario input as
    ``name.Scenario=`` too."""
    names = []
    for spec in INPUTS:
        names.append(f"{spec.name}=")
        if spec.per_scenario:
            names.extend(f"{spec.name}.{scenario}=" for scenario in SCENARIO_NAMES)
    return names


def commands() -> dict[str, argparse.ArgumentParser]:
    """Every sub-command's parser, by name, in the order ``--help`` lists them."""
    from .main import build_parser

    parser = build_parser()
    (action,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    return dict(action.choices)


def _options(parser: argparse.ArgumentParser) -> list[str]:
    return [o for a in parser._actions for o in a.option_strings]


def _choices(parser: argparse.ArgumentParser) -> dict[str, list[str]]:
    """Option → the values it takes, for options with a fixed set of them."""
    found = {}
    for action in parser._actions:
        if action.choices and action.option_strings:
            for option in action.option_strings:
                found[option] = [str(c) for c in action.choices]
    return found


def bash_script() -> str:
    """The bash completion script (zsh loads it through bashcompinit)."""
    parsers = commands()
    cases = []
    value_cases: dict[str, list[str]] = {}
    for name, parser in parsers.items():
        cases.append(f"        {name}) opts={shlex.quote(' '.join(_options(parser)))} ;;")
        for option, values in _choices(parser).items():
            value_cases.setdefault(option, values)
    values = "\n".join(f"        {option}) COMPREPLY=($(compgen -W {shlex.quote(' '.join(v))} "
                       f"-- \"$cur\")); return ;;" for option, v in value_cases.items())
    return f'''# bash completion for {PROGRAM}: commands, options, and the input names --set takes.
# Load it in this shell:  source <({PROGRAM} completion bash)
# or for every new shell: {PROGRAM} completion bash \\
#     > ~/.local/share/bash-completion/completions/{PROGRAM}
_tokenfactory_xl() {{
    local cur prev cmd word opts
    cur="${{COMP_WORDS[COMP_CWORD]}}"
    prev="${{COMP_WORDS[COMP_CWORD-1]}}"
    local commands={shlex.quote(' '.join(parsers))}
    local set_names={shlex.quote(' '.join(set_names()))}
    cmd=""
    for word in "${{COMP_WORDS[@]:1:COMP_CWORD-1}}"; do
        case "$word" in
            -*) ;;
            *) cmd="$word"; break ;;
        esac
    done
    if [ -z "$cmd" ]; then
        COMPREPLY=($(compgen -W "$commands --help --version" -- "$cur"))
        return
    fi
    case "$prev" in
        --set)
            compopt -o nospace 2>/dev/null
            COMPREPLY=($(compgen -W "$set_names" -- "$cur"))
            return ;;
{values}
    esac
    opts=""
    case "$cmd" in
{chr(10).join(cases)}
    esac
    if [[ "$cur" == -* ]]; then
        COMPREPLY=($(compgen -W "$opts" -- "$cur"))
    else
        COMPREPLY=($(compgen -f -- "$cur"))
    fi
}}
complete -o default -F _tokenfactory_xl {PROGRAM}
'''


def zsh_script() -> str:
    """The zsh completion script: the bash one, through zsh's bashcompinit."""
    return (f"# zsh completion for {PROGRAM}: load it with  source <({PROGRAM} completion zsh)\n"
            "autoload -U +X compinit && compinit\n"
            "autoload -U +X bashcompinit && bashcompinit\n" + bash_script())


def _fish_text(text: str) -> str:
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


def fish_script() -> str:
    """The fish completion script: one ``complete`` line per command, option and value set."""
    from .main import COMMANDS

    help_of = {name: text for name, _, text in COMMANDS}
    lines = [f"# fish completion for {PROGRAM}: load it with  {PROGRAM} completion fish | source",
             f"# or keep it:  {PROGRAM} completion fish > "
             f"~/.config/fish/completions/{PROGRAM}.fish",
             f"complete -c {PROGRAM} -f"]
    parsers = commands()
    for name in parsers:
        lines.append(f"complete -c {PROGRAM} -n __fish_use_subcommand -a {name} "
                     f"-d {_fish_text(help_of.get(name, name))}")
    for name, parser in parsers.items():
        when = f"-n '__fish_seen_subcommand_from {name}'"
        for action in parser._actions:
            if not action.option_strings:
                continue
            flags = []
            for option in action.option_strings:
                if option.startswith("--"):
                    flags.append(f"-l {option[2:]}")
                elif len(option) == 2:
                    flags.append(f"-s {option[1]}")
            takes = action.nargs != 0
            values = ""
            if option_is_set(action):
                values = " -a " + _fish_text(" ".join(set_names()))
            elif action.choices:
                values = " -a " + _fish_text(" ".join(str(c) for c in action.choices))
            elif takes:
                values = " -F"
            help_text = (action.help or "").replace("%%", "%").split(";")[0][:80]
            lines.append(f"complete -c {PROGRAM} {when} {' '.join(flags)}"
                         f"{' -r' if takes else ''}{values} -d {_fish_text(help_text)}")
        lines.append(f"complete -c {PROGRAM} {when} -F")
    return "\n".join(lines) + "\n"


def option_is_set(action: argparse.Action) -> bool:
    return "--set" in action.option_strings


SCRIPTS = {"bash": bash_script, "zsh": zsh_script, "fish": fish_script}


def cmd_completion(args: argparse.Namespace) -> int:
    print(SCRIPTS[args.shell](), end="")
    return 0


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add ``tokenfactory-xl completion``."""
    from .common import add_print_output

    p = subparsers.add_parser(
        "completion",
        description="Print a shell completion script: it completes the commands, their options, "
                    "the scenarios and, after --set, the name of every input of the catalogue.",
        epilog="examples:\n"
               f"  {PROGRAM} completion bash -o {PROGRAM}.bash\n"
               f"  {PROGRAM} completion zsh\n"
               f"  {PROGRAM} completion fish\n"
               f"then load it: source <({PROGRAM} completion bash) in bash or zsh, "
               f"{PROGRAM} completion fish | source in fish",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("shell", choices=SHELLS, help="the shell to complete in")
    add_print_output(p)
    p.set_defaults(func=cmd_completion)

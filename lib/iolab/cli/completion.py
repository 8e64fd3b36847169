"""``iolab completion bash``: tab completion for the ``iolab`` command in bash (zsh reads it
through ``bashcompinit``), written from the parser itself so it never lists a command or an
option the command line does not have.

    eval "$(iolab completion bash)"                        # this shell
    iolab completion bash > /etc/bash_completion.d/iolab   # every new shell (as root)

Completes the commands, each command's options, an option's choices (``--format json``)
and, elsewhere, file names.
"""

from __future__ import annotations

import argparse
import shlex

SCRIPT = """# iolab's tab completion for bash, written by `iolab completion bash` (iolab {version})
_iolab() {{
    local cur=${{COMP_WORDS[COMP_CWORD]}} prev=${{COMP_WORDS[COMP_CWORD-1]}} cmd=${{COMP_WORDS[1]}} opts=""
    if [ "$COMP_CWORD" -eq 1 ]; then
        COMPREPLY=($(compgen -W {commands} -- "$cur")); return
    fi
    case "$cmd:$prev" in
{choices}
    esac
    case "$cmd" in
{options}
    esac
    if [[ $cur == -* ]]; then COMPREPLY=($(compgen -W "$opts" -- "$cur")); else COMPREPLY=($(compgen -f -- "$cur")); fi
}}
complete -o filenames -F _iolab iolab
"""


def _commands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return dict(sub.choices)


def bash(parser: argparse.ArgumentParser, version: str) -> str:
    """The bash completion script of ``parser`` (``iolab.cli.build_parser()``)."""
    commands = _commands(parser)
    top = [o for a in parser._actions for o in a.option_strings if o != "--debug"]
    choices, options = [], []
    for name, sub in commands.items():
        flags = [o for a in sub._actions for o in a.option_strings if a.help != argparse.SUPPRESS]
        options.append(f"        {name}) opts={shlex.quote(' '.join(flags))} ;;")
        for action in sub._actions:
            if action.choices and action.option_strings:
                words = shlex.quote(" ".join(map(str, action.choices)))
                for flag in action.option_strings:
                    choices.append(f'        {name}:{flag}) COMPREPLY=($(compgen -W {words} -- "$cur")); return ;;')
    return SCRIPT.format(
        version=version,
        commands=shlex.quote(" ".join([*commands, *top])),
        choices="\n".join(choices) or "        *) ;;",
        options="\n".join(options),
    )


def cmd_completion(args, _extra) -> int:
    from ..core.version import __version__

    print(bash(args.whole_parser(), __version__), end="")
    return 0


def add_commands(add, whole_parser) -> None:
    """``iolab completion``'s parser (``iolab.cli.build_parser``, which it gets as ``whole_parser``:
    the command line builds only the parser of the command it runs)."""
    p = add(
        "completion",
        help='tab completion for bash: eval "$(iolab completion bash)", or save it in /etc/bash_completion.d/iolab',
    )
    p.add_argument("shell", choices=("bash",), help="the shell (bash; zsh reads it after autoload bashcompinit)")
    p.set_defaults(func=cmd_completion, whole_parser=whole_parser)


__all__ = ["bash"]

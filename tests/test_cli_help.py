"""Issue 30, point 8: every option of every subcommand of the command line has help text.

The parser is walked as argparse builds it (the same parser ``mixedeval --help`` prints and the
docs' command-line reference renders), so an option added without ``help=`` fails here."""
from __future__ import annotations

import argparse

from mixedeval.cli import build_parser


def _walk(parser: argparse.ArgumentParser, prefix: tuple[str, ...]):
    """(command path, action) of every argument of ``parser`` and of its subcommands."""
    for action in parser._actions:  # noqa: SLF001 - argparse keeps them only here
        if isinstance(action, argparse._SubParsersAction):  # noqa: SLF001
            helps = {a.dest: a.help for a in action._choices_actions}  # noqa: SLF001
            for name, sub in action.choices.items():
                yield (*prefix, name), ("<subcommand>", helps.get(name))
                yield from _walk(sub, (*prefix, name))
        else:
            yield prefix, ("/".join(action.option_strings) or action.dest, action.help)


def test_every_option_of_every_subcommand_has_help():
    seen = list(_walk(build_parser(), ("mixedeval",)))
    commands = {p for p, _ in seen}
    assert len(commands) >= 12  # the program and its subcommands: the walk reached them all
    missing = [f"{' '.join(p)} {name}" for p, (name, text) in seen
               if text is None or text == argparse.SUPPRESS or not str(text).strip()]
    assert missing == [], "options without help text: " + ", ".join(missing)


def test_the_walk_sees_an_option_without_help():
    """The check above can fail: an option added without help= is reported."""
    p = build_parser()
    sub = next(a for a in p._actions if isinstance(a, argparse._SubParsersAction))  # noqa: SLF001
    sub.choices["fit"].add_argument("--no-help-here")
    assert any(name == "--no-help-here" and not text for _, (name, text) in _walk(p, ("mixedeval",)))


def test_the_log_commands_take_table_columns_and_system_fields():
    """--run / --epoch (a score table's columns) on compare-logs and summarize; --system-from on
    both and on power --from-logs (the warnings of read_eval_logs name it)."""
    p = build_parser()
    sub = next(a for a in p._actions if isinstance(a, argparse._SubParsersAction))  # noqa: SLF001

    def opts(cmd: str) -> set[str]:
        return {o for a in sub.choices[cmd]._actions for o in a.option_strings}  # noqa: SLF001

    for cmd in ("compare-logs", "summarize"):
        assert {"--run", "--epoch", "--system-from"} <= opts(cmd), cmd
    assert "--system-from" in opts("power")
    assert "--checks" in opts("compare-logs")

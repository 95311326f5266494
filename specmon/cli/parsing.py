"""How the command line is read before and beside argparse: short errors, a server's address
given where a command would be, an option given before the command it belongs to, and the note
for an API path dropped from a pasted address."""

from __future__ import annotations

import argparse
import sys
from typing import NoReturn

from specmon.errors import TargetError
from specmon.target import api_path, normalise_url

URL_ARGUMENTS = ("server", "url", "baseline_url", "metrics_url")
"""The arguments that hold a server's address (one, or a list where repeated)."""


class Parser(argparse.ArgumentParser):
    """argparse's parser, whose errors are two lines: a short usage (the positionals only, the
    options being in --help) and the error, not argparse's whole usage block of every option."""

    def short_usage(self) -> str:
        """`specmon bench [options] URL`: the prog, then what is not an option."""
        if self.usage is not None:
            return self.usage.replace("%(prog)s", self.prog)
        words = [self.prog]
        if any(action.option_strings for action in self._actions):
            words.append("[options]")
        words.extend(_positional(action) for action in self._get_positional_actions())
        return " ".join(words)

    def error(self, message: str) -> NoReturn:
        self.exit(
            2,
            f"usage: {self.short_usage()}  (see {self.prog} --help)\n"
            f"{self.prog}: error: {message}\n",
        )


def _positional(action: argparse.Action) -> str:
    name = action.metavar if isinstance(action.metavar, str) else action.dest
    if isinstance(action, argparse._SubParsersAction):
        return f"{name} ..." if action.required else f"[{name} ...]"
    return {
        "?": f"[{name}]",
        "*": f"[{name} ...]",
        "+": f"{name} [{name} ...]",
        argparse.REMAINDER: "...",
    }.get(action.nargs, name)  # type: ignore[arg-type]


def addresses_as_urls(parser: argparse.ArgumentParser, argv: list[str]) -> list[str]:
    """The command line with a server's address given where a command would be taken as
    `--url` (`specmon 127.0.0.1:8000` opens the dashboard on it, as `--url` would).

    An option of a command's given before the command (`specmon --budget 5 check URL`, which
    argparse would answer with "invalid choice: '5'") is refused, saying where it goes.
    """
    commands = _commands(parser)
    out: list[str] = []
    tokens = iter(argv)
    for token in tokens:
        if token == "--":
            out.append(token)
            break
        if token.startswith("-") and len(token) > 1:
            name = token.split("=", 1)[0]
            action = parser._option_string_actions.get(name)
            out.append(token)
            if action is None:
                _misplaced(parser, commands, name)
            elif "=" not in token and action.nargs != 0:
                value = next(tokens, None)  # its value, even one that looks like an address
                if value is not None:
                    out.append(value)
            continue
        if token in commands:
            out.append(token)
            break
        if _address(token):
            out += ["--url", token]
        else:
            out.append(token)
    out.extend(tokens)
    return out


def _address(token: str) -> bool:
    """Whether `token`, where a command would be, is a server's address rather than a
    mistyped command: a command's name has no ':', '/' or '.'."""
    return token == "localhost" or any(mark in token for mark in ":/.")


def _commands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def _misplaced(
    parser: argparse.ArgumentParser, commands: dict[str, argparse.ArgumentParser], option: str
) -> None:
    """Refuse `option`, unknown before the command: name the commands it belongs to."""
    owners = [name for name, sub in commands.items() if _takes(sub, option)]
    if not owners:
        parser.error(f"unrecognized option {option}")
    first = owners[0]
    parser.error(
        f"{option} is an option of {', '.join(f'`specmon {o}`' for o in owners)}: give it after "
        "the command "
        f"(specmon {first} … {option} …)"
    )


def _takes(parser: argparse.ArgumentParser, option: str) -> bool:
    if option in parser._option_string_actions:
        return True
    return any(_takes(sub, option) for sub in _commands(parser).values())


def note_api_paths(args: argparse.Namespace) -> None:
    """Say on stderr which API path was dropped from an address (`http://host:8000/v1` is
    watched as `http://host:8000`), so that the change is never silent."""
    for name in URL_ARGUMENTS:
        given = getattr(args, name, None)
        for raw in given if isinstance(given, list) else [given]:
            if not isinstance(raw, str) or api_path(raw) is None:
                continue
            try:
                url = normalise_url(raw)
            except TargetError:
                continue  # said when the command reads it
            print(
                f"specmon: note: {raw} is taken as {url}: the server's base address "
                f"({api_path(raw)} is one of its API paths)",
                file=sys.stderr,
            )

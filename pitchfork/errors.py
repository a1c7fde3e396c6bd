"""The errors a user of PITCHFORK can rely on, and the command line's exit code for each.

Every error PITCHFORK raises on purpose for bad input derives from `PitchforkError`; each class also
derives from the built-in exception a Python caller would expect (`ValueError`, `TypeError`,
`OSError`), so `except ValueError` keeps working. Errors in expression and rule text
(`fpir.text.FPIRSyntaxError`, `fpir.types.FPIRTypeError`, `pitchfork.trs.rules.RuleFileError`) live
with the parsers (fpir does not depend on pitchfork) and map to `EXIT_INPUT`.

The command line (pitchfork/cli.py) turns an error into one line on stderr and its class's exit code;
docs/ERRORS.md is the user-facing table. Invariant: the codes below never change meaning.
"""

from __future__ import annotations

import os
from typing import TextIO

#: Everything worked (and, for verify, every rule is VALID).
EXIT_OK = 0
#: The input was read but is wrong: an expression or rule with a syntax / type error, an INVALID rule,
#: a batch in which some line failed.
EXIT_INPUT = 1
#: Bad command-line usage (argparse uses 2 as well): unknown flag, bad flag value, missing argument.
EXIT_USAGE = 2
#: PITCHFORK cannot compile this (valid) program and no fallback was allowed (--no-fallback).
EXIT_UNSUPPORTED = 3
#: A file cannot be read or written: missing, a directory, not UTF-8, permission denied.
EXIT_FILE = 4
#: verify: no rule INVALID, but some rule could not be proven (UNKNOWN) and --allow-unknown was not given.
EXIT_UNKNOWN = 5
#: The Halide program itself is wrong: impossible schedule, a used Param not among the arguments,
#: a generator that does not load or build, a bad GeneratorParam.
EXIT_PIPELINE = 6
#: A bug in PITCHFORK (an exception nobody anticipated). The CLI still prints one line.
EXIT_INTERNAL = 70


class PitchforkError(Exception):
    """Base of every deliberate PITCHFORK error; `exit_code` is what the command line exits with."""

    exit_code: int = EXIT_INPUT


class UsageError(PitchforkError, ValueError, TypeError):
    """Bad arguments to a command or an API call (lane count out of range, an argument list that is
    not a list, an unknown isel). A ValueError and a TypeError, so either `except` catches it."""

    exit_code = EXIT_USAGE


class InputFileError(PitchforkError, OSError):
    """A file named by the user cannot be read or written; the message names the file."""

    exit_code = EXIT_FILE


class PipelineError(PitchforkError, ValueError):
    """The Halide pipeline or generator is wrong (missing Param, impossible schedule, bad generator)."""

    exit_code = EXIT_PIPELINE


class ParamValueError(PitchforkError, ValueError):
    """A scalar Param value that the Param's type cannot hold exactly (the message names the Param)."""

    exit_code = EXIT_INPUT


class ParamTypeError(PitchforkError, TypeError):
    """A scalar Param value of a kind that is not a number (str, None, array, ...)."""

    exit_code = EXIT_INPUT


def read_text(path: "str | os.PathLike[str]", what: str = "file") -> str:
    """The UTF-8 text of a user's file, or InputFileError with one line naming the file and the reason."""
    try:
        with open(path, encoding="utf-8") as f:
            return f.read()
    except UnicodeDecodeError as e:
        raise InputFileError(f"{path}: {what} is not UTF-8 text (byte {e.start})") from None
    except OSError as e:
        raise InputFileError(f"{path}: cannot read {what}: {_os_reason(e)}") from None


def _os_reason(e: OSError) -> str:
    return e.strerror or type(e).__name__


def open_output(path: "str | os.PathLike[str]", what: str = "output file") -> "TextIO":
    """Open a user's output file for writing, or InputFileError naming it."""
    try:
        return open(path, "w", encoding="utf-8")
    except OSError as e:
        raise InputFileError(f"{path}: cannot write {what}: {_os_reason(e)}") from None


def open_input(path: "str | os.PathLike[str]", what: str = "input file") -> "TextIO":
    """Open a user's text file for reading line by line (undecodable bytes become U+FFFD, so one bad
    line is that line's error, not the whole file's), or InputFileError naming it."""
    try:
        f = open(path, encoding="utf-8", errors="replace")
        f.read(0)
        return f
    except OSError as e:
        raise InputFileError(f"{path}: cannot read {what}: {_os_reason(e)}") from None

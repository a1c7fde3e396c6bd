"""`pitchfork verify [RULEFILE...]`: prove rewrite rules with Z3 (synth.verify) at every type instance.

Default files: rules/lift/*.rules, rules/synthesized/*.rules and rules/lower/*.rules (target
instruction tables are imported first so lowering rules can name their instructions). One line per
rule, `VALID|INVALID|UNKNOWN name  (details; counterexample values)`, then a summary.

Exit status (docs/ERRORS.md): 0 if every rule is VALID; 1 if any rule is INVALID (a rule no type
instance can fire is INVALID) or a rule file is malformed (reported as `file:line:col: message`: an
unknown predicate function or a type variable the left side does not bind is malformed); 5 if some
rule is UNKNOWN and none INVALID, unless --allow-unknown (then 0); 4 for a rule file that cannot be
read; 2 for bad usage (e.g. --rule naming no rule).
"""

from __future__ import annotations

import argparse
import importlib
import time
from collections.abc import Sequence
from concurrent.futures import Future, ProcessPoolExecutor
from pathlib import Path

NAME = "verify"
HELP = "Verify rewrite rules with Z3 at every type instance (VALID / INVALID with counterexample / UNKNOWN)"

RULES_DIR = Path(__file__).resolve().parent.parent.parent / "rules"
STYLE = {"VALID": "green", "INVALID": "bold red", "UNKNOWN": "yellow"}


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("files", nargs="*", metavar="RULEFILE",
                   help="rule files (default: rules/lift, rules/synthesized and rules/lower)")
    p.add_argument("--jobs", "-j", type=int, default=2, help="parallel verifier processes (default 2)")
    p.add_argument("--rlimit", type=int, default=60_000_000, metavar="N",
                   help="Z3 resource limit per query (deterministic steps, about 2-3 million per second; "
                        "verdicts do not depend on machine load)")
    p.add_argument("--rule", action="append", default=[], metavar="NAME",
                   help="only verify this rule (repeatable)")
    p.add_argument("--allow-unknown", action="store_true",
                   help="exit 0 when some rule is UNKNOWN (and none INVALID); by default that exits 5")
    p.add_argument("--strict", action="store_true", help=argparse.SUPPRESS)  # the default now; kept for scripts
    p.add_argument("--no-progress", action="store_true", help="no progress bar")


def default_files() -> list[Path]:
    files: list[Path] = []
    for sub in ("lift", "synthesized", "lower"):
        files += sorted((RULES_DIR / sub).glob("*.rules"))
    return files


def register_target_ops() -> None:
    """Import the target instruction tables so lowering rules can refer to target ops."""
    try:
        targets = importlib.import_module("pitchfork.targets")
    except ImportError:
        return
    for module, _stem in getattr(targets, "ISAS", {}).values():
        try:
            importlib.import_module(module)
        except ImportError:
            pass


def load(files: Sequence[Path]) -> list:
    """Parse every file (RuleFileError propagates with file:line:col)."""
    from pitchfork.trs.rules import load_rule_file

    rules = []
    for f in files:
        rules.extend(load_rule_file(f))
    return rules


def _verify_one(args: tuple[str, str, int, int]) -> object:
    register_target_ops()
    from pitchfork.trs.rules import parse_rule
    from synth.verify import verify_rule

    text, source, line, rlimit = args
    rule = parse_rule(text, source, line)
    try:
        return verify_rule(rule, rlimit)
    except Exception as e:  # noqa: BLE001 - one broken rule must not stop the run
        from fpir.z3enc import Verdict
        from synth.verify import InstanceResult, RuleResult

        return RuleResult(rule, (InstanceResult("?", Verdict("UNKNOWN", reason=f"verifier error: {e!r}")),))


def describe(result: object) -> str:
    """`(details; counterexample values)` for a RuleResult."""
    r = result  # synth.verify.RuleResult
    if r.error:  # type: ignore[attr-defined]
        return f"({r.error})"  # type: ignore[attr-defined]
    bad = [i for i in r.instances if i.verdict.status != "VALID"]  # type: ignore[attr-defined]
    n = len(r.instances)  # type: ignore[attr-defined]
    if not bad:
        return f"({n} type instance{'s' if n != 1 else ''})" if n else "(no type instance can match)"
    inst = next((i for i in bad if i.verdict.status == "INVALID"), bad[0])
    v = inst.verdict
    if v.status == "INVALID" and v.counterexample:
        cex = ", ".join(f"{k} = {val}" for k, val in sorted(v.counterexample.items()))
        return f"(at {inst.types}: {cex}; before = {v.lhs_value}, after = {v.rhs_value})"
    return f"(at {inst.types}: {v.reason or v.status})"


def run(args: argparse.Namespace) -> int:
    from rich.console import Console
    from rich.markup import escape

    from pitchfork.errors import EXIT_FILE, EXIT_INPUT, EXIT_OK, EXIT_UNKNOWN, EXIT_USAGE, InputFileError
    from pitchfork.trs.rules import RuleFileError

    out = Console(highlight=False, soft_wrap=True)
    err = Console(stderr=True, highlight=False, soft_wrap=True)
    files = [Path(f) for f in args.files] if args.files else default_files()
    register_target_ops()
    try:
        rules = load(files)
    except RuleFileError as e:
        err.print(escape(str(e)))
        return EXIT_INPUT
    except InputFileError as e:
        err.print(escape(str(e)))
        return EXIT_FILE
    if args.rule:
        known = {r.name for r in rules}
        missing = [n for n in args.rule if n not in known]
        if missing:
            err.print(f"no rule named {escape(', '.join(missing))}")
            return EXIT_USAGE
        rules = [r for r in rules if r.name in set(args.rule)]
    t0 = time.perf_counter()
    results = _run_all(rules, args.jobs, args.rlimit, not args.no_progress and len(rules) > 1, out)
    counts = {"VALID": 0, "INVALID": 0, "UNKNOWN": 0}
    for rule, res in zip(rules, results):
        status = res.status  # type: ignore[attr-defined]
        counts[status] += 1
    seconds = time.perf_counter() - t0
    summary = ", ".join(f"[{STYLE[k]}]{v} {k}[/]" for k, v in counts.items())
    out.print(f"{len(rules)} rule(s) from {len(files)} file(s): {summary} in {seconds:.1f} s")
    if counts["INVALID"]:
        return EXIT_INPUT
    if counts["UNKNOWN"] and not args.allow_unknown:
        return EXIT_UNKNOWN
    return EXIT_OK


def _line(out: object, rule: object, res: object) -> None:
    from rich.markup import escape

    status = res.status  # type: ignore[attr-defined]
    out.print(f"[{STYLE[status]}]{status:<7}[/] {escape(rule.name)}  {escape(describe(res))}")  # type: ignore


def _run_all(rules: list, jobs: int, rlimit: int, progress: bool, out: object) -> list:
    """Verify in parallel; print each rule's line (in file order) as soon as it and its predecessors end."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    tasks = [(r.text(), r.source, r.line, rlimit) for r in rules]
    results: list[object | None] = [None] * len(rules)
    printed = 0
    bar = Progress(TextColumn("verifying"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                   console=out, transient=True, disable=not progress)  # type: ignore[arg-type]

    def flush() -> None:
        nonlocal printed
        while printed < len(rules) and results[printed] is not None:
            _line(bar.console, rules[printed], results[printed])
            printed += 1

    with bar:
        task = bar.add_task("verify", total=len(rules))
        if jobs <= 1:
            for i, t in enumerate(tasks):
                results[i] = _verify_one(t)
                bar.advance(task)
                flush()
        else:
            with ProcessPoolExecutor(max_workers=jobs) as ex:
                futures: dict[Future, int] = {ex.submit(_verify_one, t): i for i, t in enumerate(tasks)}
                from concurrent.futures import as_completed

                for fut in as_completed(futures):
                    results[futures[fut]] = fut.result()
                    bar.advance(task)
                    flush()
    return results

"""Selecting and writing synthesized rules (rules/synthesized/*.rules).

From the task results of one stage (lifting, or lowering for one ISA), candidates are considered
most general first (polymorphic, then signedness-fixed, then monomorphic; symbolic constants before
ranged before pinned), then most frequent in the corpus. A candidate is dropped when

* its text (name aside) is already a rule, or
* it is subsumed: the rules kept so far (hand-written, previously synthesized, and this run's)
  already rewrite its example left side to something at most as cheap as its right side, or
* (lifting) instantiating its example's variables with small constants makes it produce a form the
  search itself never builds (`constant_regression`), or
* it does not verify again (`synth.verify.verify_rule`, every type instance) just before writing.

Rules are written one per line, ordered by the cost of their example right side, named
`synth_<stage>_<hash of text>` (stable across runs), with provenance as a trailing comment:
`# from: sobel3x3,add; count: 9; cost: (48, 4) -> (32, 2); verdict: VALID (3 type instances); z3 4.x`.
Rules already in the file are kept (a re-run adds to them).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Callable, Iterable, Optional, Sequence

import z3

from fpir.term import Term
from fpir.text import parse
from pitchfork.selection.synthesized import withdrawn
from pitchfork.trs.rules import Rule, RuleFileError, RuleSet, parse_rule, parse_rules
from synth.verify import verify_rule

LEVEL_ORDER = {"polymorphic": 0, "signed-fixed": 1, "width-capped": 2, "monomorphic": 3}
CONST_ORDER = {"symbolic": 0, "none": 0, "related": 1, "ranged": 1, "pinned": 2}
VERIFY_RLIMIT = 60_000_000  # Z3 resource units per query (synth.verify), not milliseconds


@dataclass(frozen=True)
class Candidate:
    text: str  # "lhs -> rhs [if pred]"
    example: str  # the monomorphic left side it was synthesized for
    rhs_cost: tuple
    sources: tuple[str, ...]
    count: int
    level: str
    constants: str
    verdict: str
    #: a bounds predicate the rule needs (`fits(v0_u16, u8)`: a narrowing that does not saturate), or ""
    bounded: str = ""


@dataclass(frozen=True)
class Decision:
    candidate: Candidate
    outcome: str  # "written" | "duplicate" | "subsumed" | "unverified" | "invalid-text"
    name: str = ""
    detail: str = ""


def rule_name(stage: str, text: str) -> str:
    return f"synth_{stage}_{hashlib.sha1(text.encode()).hexdigest()[:10]}"


def _body(rule: Rule) -> str:
    return rule.text().split(":", 1)[1].strip()


def constant_regression(rule: Rule, example: Term, existing: Sequence[Rule]) -> Optional[str]:
    """Why the lifting rule must not be kept, or None.

    A term wildcard of a rule also matches a constant. The search never builds `extending_*` with a
    constant operand nor a multiply by a power of two (the shift is the canonical form), but a rule
    synthesized for `i16(x_u8) * y_i16` would fire on `i16(x_u8) * 4` and produce one. So each
    variable of the example is replaced by small constants and the rule must not bring such a form
    into the lifted result (the regression the paper saw on gaussian7x7 came from such a rule)."""
    from fpir.ops import make
    from fpir.opspec import spec
    from fpir.term import const
    from pitchfork.trs.rewriter import Rewriter

    def substitute(t: Term, m: dict[Term, Term]) -> Term:  # folding constants, as Halide's frontend does
        if t in m:
            return m[t]
        if not t.args:
            return t
        args = [substitute(a, m) for a in t.args]
        return make(t.op, *args, type=t.type if spec(t.op).explicit_type else None)

    before, after = RuleSet(list(existing)), RuleSet(list(existing) + [rule])
    for v in example.variables():
        for value in (2, 3, 4):
            if not v.type.contains(value):
                continue
            try:
                t = substitute(example, {v: const(value, v.type)})
            except (ValueError, TypeError):
                continue
            new = Rewriter(after).rewrite(t)
            if _forbidden(new) and not _forbidden(Rewriter(before).rewrite(t)):
                return f"with {v.name} = {value} it lifts to {new}"
    return None


def _guard_constants(
    rule: Rule, c: Candidate, example: Term, kept: Sequence[Rule], stage: str
) -> tuple[Rule, Candidate, Optional[str]]:
    """The rule, or the rule with `is_variable(x)` for each variable x whose constant instances
    regress (the rule then leaves constants to the rules that canonicalize them), or why neither
    works. The guarded rule is a new candidate text (verified again before it is written)."""
    import re

    for _ in range(len(example.variables())):
        why = constant_regression(rule, example, kept)
        if why is None:
            return rule, c, None
        m = re.match(r"with (\w+) = ", why)
        lhs_text = c.text.split("->", 1)[0]
        w = re.search(rf"\b{m.group(1)}_\w+", lhs_text) if m else None
        if w is None or f"is_variable({w.group(0)})" in c.text:
            return rule, c, why
        guard = f"is_variable({w.group(0)})"
        text = c.text + (f" && {guard}" if " if " in c.text else f" if {guard}")
        try:
            guarded = parse_rule(f"{rule_name(stage, text)}: {text}", "<synthesized>", 1)
        except RuleFileError as e:
            return rule, c, f"{why}; guarded text does not parse: {e.message}"
        rule, c = guarded, replace(c, text=text)
    why = constant_regression(rule, example, kept)
    return rule, c, why


def _forbidden(t: Term) -> bool:
    for u in t.walk():
        if u.op.startswith("extending_") and any(a.is_const for a in u.args):
            return True
        if u.op in ("mul", "widening_mul", "extending_mul") and any(
            a.is_const and a.value > 0 and a.value & (a.value - 1) == 0 for a in u.args
        ):
            return True
    return False


def _uniform_last(text: str) -> int:
    """0 for a rule guarded by `is_uniform` (a broadcast-count form, x86 vpsraw), else 1: such rules
    are decided and written first. The rewriter takes the first of equally cheap right sides, and the
    cost model charges a per-lane shift through wider lanes (`psrav_widened`) one instruction like
    the broadcast-count one, so only order makes the rule for the uniform case win there (as
    rules/lower/x86_avx2.rules orders its psra_uniform before psrav_widened)."""
    return 0 if "is_uniform(" in text.split("#", 1)[0] else 1


def select(
    candidates: Sequence[Candidate],
    stage: str,
    existing: Sequence[Rule],
    rewrite_cost: Callable[[RuleSet, Term], tuple],
) -> list[Decision]:
    """Decide every candidate (see module doc); `rewrite_cost(rules, term)` is the cost of what the
    stage's rewriter (with those rules) makes of a term."""
    order = sorted(
        candidates,
        key=lambda c: (
            _uniform_last(c.text),
            LEVEL_ORDER.get(c.level, 3),
            CONST_ORDER.get(c.constants, 3),
            -c.count,
            c.rhs_cost,
            c.text,
        ),
    )
    kept: list[Rule] = list(existing)
    bodies = {_body(r) for r in existing}
    names = {r.name for r in existing}
    out: list[Decision] = []
    for c in order:
        name = rule_name(stage, c.text)
        try:
            rule = parse_rule(f"{name}: {c.text}", "<synthesized>", 1)
        except RuleFileError as e:
            out.append(Decision(c, "invalid-text", detail=e.message))
            continue
        if _body(rule) in bodies or name in names:
            out.append(Decision(c, "duplicate"))
            continue
        example = parse(c.example)
        if c.bounded:
            why = _bounded_gain(rule, c, kept, rewrite_cost)
            if why:
                out.append(Decision(c, "subsumed", detail=why))
                continue
        have = rewrite_cost(RuleSet(list(kept)), example) if not c.bounded else (0,)
        if not c.bounded and have <= c.rhs_cost:
            out.append(Decision(c, "subsumed", detail=f"existing rules reach cost {have}"))
            continue
        if stage == "lift":
            rule, c, why = _guard_constants(rule, c, example, kept, stage)
            if why is not None:
                out.append(Decision(c, "constant-regression", detail=why))
                continue
            name = rule.name
            if _body(rule) in bodies or name in names:
                out.append(Decision(c, "duplicate"))
                continue
        res = verify_rule(rule, VERIFY_RLIMIT)
        if res.status != "VALID":
            out.append(Decision(c, "unverified", detail=res.summary()))
            continue
        with_it = rewrite_cost(RuleSet(kept + [rule]), example) if not c.bounded else (0,)
        if not c.bounded and with_it > c.rhs_cost:
            out.append(Decision(c, "subsumed", detail=f"does not fire on its example (cost {with_it})"))
            continue
        kept.append(rule)
        bodies.add(_body(rule))
        names.add(name)
        out.append(Decision(c, "written", name, res.summary()))
    return out


def bounded_example(c: Candidate) -> Optional[Term]:
    """The candidate's example with its bounded variables clamped (min/max) into the ranges its
    predicates state, so the rewriter's bounds prove them: `fits(x_T, N)` (x in N's range),
    `lower_bounded(x_T, lo)`, `upper_bounded(x_T, hi)`, and with the variables `is_uniform(x_T)`
    states as uniform leaves (`is_variable` holds for any variable), joined by `&&`; None if one is not
    understood."""
    import re

    from fpir.ops import make
    from fpir.term import const, var
    from fpir.types import parse_type

    limits: dict[tuple[str, str], list[int]] = {}
    uniform: set[tuple[str, str]] = set()
    for clause in c.bounded.split(" && "):
        m = re.fullmatch(r"fits\((\w+)_([ui]\d+), ([ui]\d+)\)", clause.strip())
        b = re.fullmatch(r"(lower|upper)_bounded\((\w+)_([ui]\d+), (-?\d+)\)", clause.strip())
        u = re.fullmatch(r"is_(variable|uniform)\((\w+)_([ui]\d+)\)", clause.strip())
        if u is not None:  # a variable the rule requires uniform: a uniform leaf in the example
            if u.group(1) == "uniform":
                uniform.add((u.group(2), u.group(3)))
        elif m is not None:
            t, n = parse_type(m.group(2)), parse_type(m.group(3))
            lim = limits.setdefault((m.group(1), m.group(2)), [t.min, t.max])
            lim[0], lim[1] = max(lim[0], n.min), min(lim[1], n.max)
        elif b is not None:
            t = parse_type(b.group(3))
            lim = limits.setdefault((b.group(2), b.group(3)), [t.min, t.max])
            if b.group(1) == "lower":
                lim[0] = max(lim[0], int(b.group(4)))
            else:
                lim[1] = min(lim[1], int(b.group(4)))
        else:
            return None
    clamped_of: dict[tuple[str, str], Term] = {}
    for name, tname in uniform - set(limits):
        clamped_of[(name, tname)] = var(name, parse_type(tname), uniform=True)
    for (name, tname), (lo, hi) in limits.items():
        t = parse_type(tname)
        x: Term = var(name, t, uniform=(name, tname) in uniform)
        if hi < t.max:
            x = make("min", x, const(hi, t), fold=False)
        if lo > t.min:
            x = make("max", x, const(lo, t), fold=False)
        clamped_of[(name, tname)] = x
    example = parse(c.example)
    memo: dict[int, Term] = {}
    from synth.corpus import rebuild

    for u in example.walk():
        if u.is_var and (u.name, u.type.name) in clamped_of:
            memo[id(u)] = clamped_of[(u.name, u.type.name)]
        elif u.args:
            memo[id(u)] = rebuild(u, [memo[id(a)] for a in u.args])
        else:
            memo[id(u)] = u
    return memo[id(example)]


def _bounded_gain(
    rule: Rule, c: Candidate, kept: Sequence[Rule], rewrite_cost: Callable[[RuleSet, Term], tuple]
) -> str:
    """Why a bounded candidate is not kept ("" if it is): on its example with the variable clamped
    (bounds prove the narrowing does not saturate) it must make the rewriter's result cheaper."""
    ex = bounded_example(c)
    if ex is None:
        return f"bounds predicate not understood: {c.bounded}"
    have = rewrite_cost(RuleSet(list(kept)), ex)
    with_it = rewrite_cost(RuleSet(list(kept) + [rule]), ex)
    return "" if with_it < have else f"no gain where the bounds hold (cost {have} -> {with_it})"


def provenance_comment(c: Candidate, verdict: str) -> str:
    return (
        f"# from: {','.join(c.sources)}; count: {c.count}; cost: {c.rhs_cost}; "
        f"level: {c.level}/{c.constants}; "
        + (f"bounded: {c.bounded}; " if c.bounded else "")
        + f"verdict: {verdict}; z3 {z3.get_version_string()}; example: {c.example}"
    )


def write_rules(path: Path, decisions: Iterable[Decision], header: str, drop: Iterable[str] = ()) -> int:
    """Append the written decisions to the file (keeping its rules, less the names in `drop`: rules
    the new ones subsume), ordered by cost; returns the number of rules in the file."""
    old_lines: list[str] = []
    # withdrawn here or in the rules the run works with (rules/synthesized/ merged, synth/rulesnap.py)
    gone = set(drop) | set(withdrawn(path.parent)) | set(withdrawn())
    if path.exists():
        old_lines = [
            ln for ln in path.read_text().splitlines()
            if ln.strip() and not ln.startswith("#") and ln.split(":", 1)[0].strip() not in gone
        ]
    new = sorted(
        (d for d in decisions if d.outcome == "written" and d.name not in gone),
        key=lambda d: (d.candidate.rhs_cost, d.name)
    )
    lines = sorted(old_lines + [
        f"{d.name}: {d.candidate.text}  {provenance_comment(d.candidate, d.detail)}" for d in new
    ], key=_uniform_last)  # stable: the file's order otherwise
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(header.rstrip() + "\n\n" + "\n".join(lines) + ("\n" if lines else ""))
    parse_rules(path.read_text(), str(path))  # the file stays loadable
    return len(lines)


_EXAMPLE = __import__("re").compile(r"cost: (\([^)]*\)).*; example: (.+)$")


def subsumed_file_rules(
    path: Path, kept: Sequence[Rule], rewrite_cost: Callable[[RuleSet, Term], tuple]
) -> list[tuple[str, str]]:
    """(name, why) of the rules already in the output file that the other rules now subsume: on the
    example recorded in its provenance, the rules without it reach its right side's cost. (Rules
    written before examples were recorded are kept.)"""
    if not path.exists():
        return []
    out = []
    for line in path.read_text().splitlines():
        m = _EXAMPLE.search(line)
        if line.startswith("#") or m is None:
            continue
        name = line.split(":", 1)[0].strip()
        try:
            example = parse(m.group(2).strip())
            rhs_cost = tuple(int(x) for x in m.group(1).strip("()").split(",") if x.strip())
        except Exception:  # noqa: BLE001 - a comment we cannot read: keep the rule
            continue
        others = RuleSet([r for r in kept if r.name != name])
        have = rewrite_cost(others, example)
        if have <= rhs_cost:
            out.append((name, f"the other rules reach cost {have} on {m.group(2).strip()}"))
    return out


def existing_rules(path: Path) -> list[Rule]:
    return parse_rules(path.read_text(), str(path)) if path.exists() else []


def parse_cost(v: Any) -> tuple:
    return tuple(v) if isinstance(v, (list, tuple)) else (v,)


def candidate_from(result: dict[str, Any], sources: Sequence[str], count: int) -> Optional[Candidate]:
    if result.get("status") != "synthesized" or "rule" not in result:
        return None
    return Candidate(
        result["rule"],
        result["seen"],
        parse_cost(result["rhs_cost"]),
        tuple(sorted(sources)),
        count,
        result.get("level", "monomorphic"),
        result.get("constants", "none"),
        result.get("verdict", ""),
        result.get("bounded", ""),
    )

"""ISA bring-up from instruction semantics: lowering synthesized with the hand-written lowering hidden,
and how much of the hand-written lowering it rediscovers.

`pitchfork-synth --bring-up ISA` runs the lowering stage for that ISA alone with every rule of
rules/lower/<isa>.rules left out of the baseline (`Task.hide`), so the current TRS is the generic
expansion only and the search sees the instruction table's semantics and nothing else; the rules
it finds go to the output folder as usual.

Rediscovery (`rediscovery`): every hand-written lowering rule that fires when the ISA's whole
expressions (the run's corpus, lifted as the compiler lifts them) are lowered with the hand-written
rules is judged at each node where it fired: the node as the hand-written TRS saw it (its children
already lowered) is lowered once by the hand-written TRS and once by the synthesized rules alone
(hand rules hidden); the site is rediscovered when the synthesized result costs at most as much
(`synth/cost.py`) and Z3 proves it equal to the node (`synth/stepwise.py`: the whole query, or
one per rewriting step when the whole one runs out of its rlimit). A rule is
rediscovered when all of its sites are. Hand rules that never fire on the corpus cannot be judged
from it and are counted apart (`not_exercised`). This is the *strict* judge (`judge="strict"`): the
left side it hands the synthesized rules holds the hand rules' own instructions (a child the hand TRS
lowered to `x86.wmul_pmaddwd` is one the synthesized rules never produce, having lowered it otherwise).

The *compiler* judge (`judge="compiler"`) judges the same rules on the left sides as the compiler
sees them under each lowering: a site is the lifted sub-term (children not yet lowered) at whose root
a hand rule fired while the hand TRS lowered it bottom-up (the rules fired at the root, including on
the root's rewritten forms). Each rule set lowers the sub-term whole, its children lowered its own way
(generically expanded after); what a site is judged by is the root's share, the instructions of the
whole less those of its children lowered alone by the same rule set (children summed, each on its own).
The site is rediscovered when the synthesized share is at most the hand share and Z3 proves the
synthesized code equal to the lifted sub-term. So a child the hand rules lower to an instruction the
synthesized rules never produce (x86 `wmul_pmaddwd` under `pmaddwd_pairs`) no longer decides the root,
and a child lowered worse is not charged to the root either. The *subtree* judge (`judge="subtree"`)
compares the whole sub-terms instead (a child lowered worse makes every site above it a miss): an
end-to-end view, much stricter than the other two. All judges cap the sites per rule (`max_sites`,
the first ones met) and count a rule rediscovered only when all its judged sites are.

Selection cost (`selection_costs`): per benchmark, the instructions of its selected expressions
(the corpus: every vector expression the compiler selects for, lifted, lowered, generically
expanded; `synth/cost.py`) with the hand-written lowering and with the synthesized rules alone. It is
a proxy for the harness's static estimate, not that estimate: no loop trip counts, no scheduling.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional, Sequence

from fpir.term import Term
from fpir.text import parse
from pitchfork.trs.rules import Rule


def bring_up_hidden(isa: str) -> tuple[str, ...]:
    """What a bring-up leaves out of the baseline: the hand-written lowering rules of the ISA and the
    synthesized ones committed in rules/synthesized/ (learned with the hand-written rules present)."""
    from pitchfork.selection.synthesized import SYNTH_DIR, load_rules
    from synth.stages import ISA_STEMS

    hand = hand_lowering_names(isa)  # loads the ISA's instruction table first
    committed = load_rules(SYNTH_DIR / f"lower_{ISA_STEMS[isa]}.rules")
    return hand + tuple(r.name for r in committed)


def hand_lowering_names(isa: str) -> tuple[str, ...]:
    """The names of the hand-written lowering rules of the ISA (rules/lower/<isa stem>.rules)."""
    from pitchfork.targets import load_target

    return tuple(r.name for r in load_target(isa, include_synthesized=False).rules.rules)


#: the rediscovery judges (module doc)
JUDGES = ("strict", "compiler", "subtree")


@dataclass
class Rediscovery:
    isa: str
    hand_rules: int  # rules in rules/lower/<isa>.rules
    exercised: dict[str, int] = field(default_factory=dict)  # hand rule -> firing sites on the corpus
    rediscovered: dict[str, int] = field(default_factory=dict)  # hand rule -> sites matched
    examples: dict[str, str] = field(default_factory=dict)  # hand rule -> a site not matched (why)

    @property
    def share(self) -> float:
        """Rediscovered hand rules / hand rules that fire on the corpus."""
        if not self.exercised:
            return 0.0
        full = sum(1 for n, k in self.exercised.items() if self.rediscovered.get(n, 0) == k)
        return full / len(self.exercised)

    @property
    def site_share(self) -> float:
        total = sum(self.exercised.values())
        return sum(self.rediscovered.values()) / total if total else 0.0

    def summary(self) -> str:
        full = sum(1 for n, k in self.exercised.items() if self.rediscovered.get(n, 0) == k)
        return (
            f"{self.isa}: {full} of {len(self.exercised)} hand lowering rules that fire on the corpus "
            f"rediscovered ({100 * self.share:.1f}%; sites {sum(self.rediscovered.values())} of "
            f"{sum(self.exercised.values())}, {100 * self.site_share:.1f}%); "
            f"{self.hand_rules - len(self.exercised)} of {self.hand_rules} hand rules do not fire on it"
        )


def _sites(isa: str, exprs: list[Term], hand_rules: object, cost: object) -> list[tuple[str, Term]]:
    from pitchfork.selection.lift import lifter, normalize_shift_constants
    from pitchfork.trs.rewriter import Rewriter

    from fpir.term import var
    from synth.corpus import substitute

    lw = lifter()
    rw = Rewriter(hand_rules, cost=cost, trace=True)  # type: ignore[arg-type]
    for t in exprs:
        rw.rewrite(lw.rewrite(normalize_shift_constants(t)))
    # the trace holds text, which cannot state that a leaf is a broadcast: the expressions' uniform
    # leaves are marked again after parsing (else x86 `psra_uniform` sites are judged without their
    # broadcast count, where neither rule set may use vpsraw, and the site is not the one that fired)
    uniform = {(v.name, v.type) for t in exprs for v in t.variables() if v.is_uniform_leaf}
    out: list[tuple[str, Term]] = []
    seen: set[tuple[str, str]] = set()
    for name, before, _after in rw.stats.trace:
        if (name, before) in seen:
            continue
        seen.add((name, before))
        try:
            site = parse(before)
        except Exception:  # noqa: BLE001 - a form the printer writes but the parser does not take: skipped
            continue
        marks = {v: var(v.name, v.type, uniform=True) for v in site.variables() if (v.name, v.type) in uniform}
        out.append((name, substitute(site, marks) if marks else site))
    return out


def _compiler_sites(exprs: list[Term], hand_rules: object, cost: object, names: set[str]) -> list[tuple[str, Term]]:
    """(hand rule, lifted sub-term at whose root it fired) for the compiler judge (module doc): the
    lifted expressions' distinct sub-terms lowered in post-order by one memoizing hand TRS, so each
    call does only its root's work and the rules it records fired there."""
    from pitchfork.selection.lift import lifter, normalize_shift_constants
    from pitchfork.trs.rewriter import Rewriter

    lw = lifter()
    rw = Rewriter(hand_rules, cost=cost, trace="names")  # type: ignore[arg-type]
    out: list[tuple[str, Term]] = []
    seen: set[tuple[str, Term]] = set()
    for t in exprs:
        for u in lw.rewrite(normalize_shift_constants(t)).walk():
            if not u.args:
                continue
            n0 = len(rw.stats.trace)
            rw.rewrite(u)
            for name, _b, _a in rw.stats.trace[n0:]:
                if name in names and (name, u) not in seen:
                    seen.add((name, u))
                    out.append((name, u))
    return out


def rediscovery(
    isa: str, exprs: list[Term], synthesized: Sequence[Rule], rlimit: int = 20_000_000, max_sites: int = 12,
    judge: str = "strict",
) -> Rediscovery:
    """See the module doc. `exprs`: the ISA's whole expressions; `synthesized`: the bring-up's rules
    (the output folder's lower_<isa>.rules). At most `max_sites` distinct sites per hand rule are
    judged (the first ones met). `judge`: "strict" (the node with its children as the hand rules
    lowered them), "compiler" (the root's share of the lifted sub-term lowered by each rule set) or
    "subtree" (the whole lifted sub-term); see the module doc."""
    if judge not in JUDGES:
        raise ValueError(f"judge must be one of {', '.join(JUDGES)}, not {judge!r}")
    from pitchfork.selection.lower import TARGET_MAX_BITS, expand_fpir
    from pitchfork.targets import load_target
    from pitchfork.trs.rewriter import Rewriter
    from pitchfork.trs.rules import RuleSet
    from synth.cost import cost_unit, lowering_cost
    from synth.stepwise import prove_lowered

    names = set(hand_lowering_names(isa))
    proofs: dict[tuple[Term, Term], bool] = {}
    full = load_target(isa, include_synthesized=False)
    hand = full.rules  # rules/lower/<isa>.rules alone
    synth = RuleSet(list(synthesized))
    bits = TARGET_MAX_BITS.get(isa, 64)
    rep = Rediscovery(isa, len(names))
    per_rule: dict[str, int] = {}
    hand_rw, synth_rw = Rewriter(hand, cost=full.cost), Rewriter(synth, cost=full.cost)
    sites = (_sites(isa, exprs, hand, full.cost) if judge == "strict"
             else _compiler_sites(exprs, hand, full.cost, names))
    for name, before in sites:
        if name not in names or per_rule.get(name, 0) >= max_sites:
            continue
        per_rule[name] = per_rule.get(name, 0) + 1
        rep.exercised[name] = rep.exercised.get(name, 0) + 1
        h = expand_fpir(hand_rw.rewrite(before), bits)
        s = expand_fpir(synth_rw.rewrite(before), bits)
        ch, cs = lowering_cost(h, isa)[0], lowering_cost(s, isa)[0]
        what = cost_unit(isa)  # arm64: issue cycles first (synth/cost.py)
        if judge == "compiler":  # the root's share: less the children, each lowered by the same rules
            ch -= sum(lowering_cost(expand_fpir(hand_rw.rewrite(a), bits), isa)[0] for a in before.args)
            cs -= sum(lowering_cost(expand_fpir(synth_rw.rewrite(a), bits), isa)[0] for a in before.args)
            what = f"{what} at the root"
        why: Optional[str] = None
        if cs > ch:
            why = f"{before}: synthesized {cs} {what} ({s}) > hand {ch} ({h})"
        elif not prove_lowered(before, s, lambda u: expand_fpir(synth_rw.rewrite(u), bits), rlimit, proofs):
            why = f"{before}: synthesized result not proven equal"
        if why is None:
            rep.rediscovered[name] = rep.rediscovered.get(name, 0) + 1
        else:
            rep.examples.setdefault(name, why)
    return rep


def selection_costs(
    isa: str, inputs: dict[str, list[Term]], synthesized: Sequence[Rule]
) -> dict[str, tuple[int, int]]:
    """Source (benchmark) -> (instructions with the hand-written lowering, with the synthesized rules
    alone) over its whole expressions; see the module doc."""
    from pitchfork.selection.lift import lifter, normalize_shift_constants
    from pitchfork.selection.lower import TARGET_MAX_BITS, expand_fpir
    from pitchfork.targets import load_target
    from pitchfork.trs.rewriter import Rewriter
    from pitchfork.trs.rules import RuleSet
    from synth.cost import lowering_cost

    full = load_target(isa, include_synthesized=False)
    bits = TARGET_MAX_BITS.get(isa, 64)
    lw = lifter()
    hand = Rewriter(full.rules, cost=full.cost)
    synth = Rewriter(RuleSet(list(synthesized)), cost=full.cost)
    out: dict[str, tuple[int, int]] = {}
    for source, exprs in sorted(inputs.items()):
        h = s = 0
        for t in exprs:
            lifted = lw.rewrite(normalize_shift_constants(t))
            h += lowering_cost(expand_fpir(hand.rewrite(lifted), bits), isa)[0]
            s += lowering_cost(expand_fpir(synth.rewrite(lifted), bits), isa)[0]
        out[source] = (h, s)
    return out


def judge_folder(out_dir: "str | Path", isa: str, judges: Sequence[str] = JUDGES,
                 max_sites: int = 12) -> dict[str, Rediscovery]:
    """Rediscovery of a finished bring-up's output folder (its lower_<isa>.rules less the rules its
    withdrawn.txt names, and the corpus its cache holds, .synth-cache/corpus-<bench>-<isa>-pitchfork-u.txt)
    by each judge, without searching. The rules are loaded as the compiler loads the folder
    (PITCHFORK_LOWERING_ONLY, `pitchfork.selection.synthesized.load_rules`), so a folder after the
    regression check (benchmarks/synth_bringup_static.py --withdraw) is judged as it compiles."""
    from pathlib import Path

    from pitchfork.selection.synthesized import load_rules
    from synth.stages import ISA_STEMS

    from pitchfork.targets import load_target

    d = Path(out_dir)
    load_target(isa)  # the instruction table the rules name
    rules = load_rules(d / f"lower_{ISA_STEMS[isa]}.rules")
    # the corpus files as the driver writes them (`-u`: each line's uniform leaves after a tab; synth/driver.py
    # Cache.corpus), or as older runs wrote them (no uniform leaves)
    files = sorted((d / ".synth-cache").glob(f"corpus-*-{isa}-pitchfork-u.txt")) or \
        sorted((d / ".synth-cache").glob(f"corpus-*-{isa}-pitchfork.txt"))
    if not files:
        raise ValueError(f"{d}: no corpus of {isa} in .synth-cache/ (run `pitchfork-synth --bring-up {isa} -o {d}`)")
    from synth.driver import _corpus_line

    exprs = [_corpus_line(ln) for f in files for ln in f.read_text().splitlines() if ln.strip()]
    return {j: rediscovery(isa, exprs, rules, max_sites=max_sites, judge=j) for j in judges}


def main(argv: Optional[Sequence[str]] = None) -> int:
    """`python -m synth.bringup DIR ISA [--judge strict|compiler|subtree]`: judge a bring-up folder again."""
    import argparse
    import json
    from pathlib import Path

    p = argparse.ArgumentParser(prog="python -m synth.bringup", description=main.__doc__)
    p.add_argument("out_dir", type=Path)
    p.add_argument("isa")
    p.add_argument("--judge", action="append", choices=list(JUDGES), default=[])
    p.add_argument("--json", type=Path, default=None, help="also write the verdicts here")
    args = p.parse_args(argv)
    try:
        reps = judge_folder(args.out_dir, args.isa, args.judge or JUDGES)
    except ValueError as e:
        p.error(str(e))
    for j, rep in reps.items():
        print(f"{j} judge: {rep.summary()}")
        missing = sorted(n for n, k in rep.exercised.items() if rep.rediscovered.get(n, 0) != k)
        print(f"  not rediscovered: {', '.join(missing)}")
    if args.json is not None:
        args.json.write_text(json.dumps({j: {"exercised": r.exercised, "rediscovered": r.rediscovered,
                                             "share": r.share, "site_share": r.site_share,
                                             "not_rediscovered_example": r.examples}
                                         for j, r in reps.items()}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    import sys

    sys.exit(main())

"""Declaring target instructions once: name, signatures, semantics, cost and how to emit them.

A target instruction is an op of kind "target" in the FPIR op table (`fpir.ops.OPS`), named
`<isa>.<mnemonic>` (e.g. `arm.uabd`). It is *lane-wise*: its meaning is a term over its operands,
written in FPIR text (`semantics`, over `x`, `y`, `z`; a lane-combining one declares each operand's
lanes per result lane and uses the `vector_reduce_*` ops), so the interpreter, Z3 (and so the
verification of lowering rules) and the bounds analysis treat it like any other op. Its `emit`
function produces LLVM IR for any lane count: it splits operands into native registers, calls the
intrinsic (or emits the exact generic IR pattern LLVM selects the instruction from) and restores
lane order, so lane-wise semantics hold however the hardware arranges lanes.

Invariant: every instruction used by a lowering rule is declared here with semantics; a lowering
rule is verified against these semantics, and the emitted code is tested against them by running.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Optional, Sequence

from llvmlite import ir

from fpir.ops import make
from fpir.opspec import OPS, OpSpec, register
from fpir.term import Term, var
from fpir.text import parse
from fpir.types import FPIRTypeError, ScalarType, parse_type

#: operand names in semantics text, in operand order (up to 9 operands: vrmpy by four taps, accumulating)
PARAMS = ("x", "y", "z", "w", "a", "b", "c", "d", "e")

Emitter = Callable[[Any, Sequence[Any], Term], Any]  # (ExprEmitter, operand values, term) -> ir.Value


@dataclass(frozen=True)
class Signature:
    args: tuple[ScalarType, ...]
    result: ScalarType


def sig(text: str) -> Signature:
    """'u8, u8 -> u8' -> Signature."""
    lhs, rhs = text.split("->")
    args = tuple(parse_type(a.strip()) for a in lhs.split(",") if a.strip())
    return Signature(args, parse_type(rhs.strip()))


def substitute(term: Term, mapping: dict[str, Term]) -> Term:
    memo: dict[int, Term] = {}
    for t in term.walk():
        if t.op == "var":
            memo[id(t)] = mapping.get(t.name, t)
        elif t.args:
            args = [memo[id(a)] for a in t.args]
            s = OPS[t.op]
            memo[id(t)] = make(t.op, *args, type=t.type if s.explicit_type else None)
        else:
            memo[id(t)] = t
    return memo[id(term)]


def target_op(name: str, signatures: Sequence[str], semantics: str | Callable[[Signature], str], emit: Emitter,
              cost: int = 1, doc: str = "", llvm: str = "", lanes: Sequence[int] = (),
              encodable: Optional[Callable[[Term], bool]] = None, lane0: Sequence[int] = (),
              layout: str = "") -> OpSpec:
    """Declare (and register) one target instruction.

    `signatures` lists the operand/result types it accepts ('u16, u8, u8 -> u16'); `semantics` is FPIR
    text over operands x, y, z (types given by the signature), or a function from the signature to
    that text when the meaning depends on the width (`sqdmulh` is `mul_shr(x, y, bits - 1)`); `cost`
    is its cost per native register in the target's cost model; `llvm` names the intrinsic or
    generic pattern (documentation). `lanes` declares a lane-combining instruction: argument i has
    lanes[i] lanes per result lane (udot: (1, 4, 4)), and its semantics use the matching
    `vector_reduce_*_x<f>` ops; the emitter then receives each operand at its own lane count.
    `encodable(term)` says whether a use of the instruction can be encoded as such (an immediate
    operand that is a constant in range); where it cannot, the emitter emits the declared meaning
    generically and the target cost counts it as such (`pitchfork.targets.target_cost`), so that no
    rule wins by naming the instruction with an operand it cannot encode. `lane0` lists operands the
    instruction reads at lane 0 only, for every result lane (x86 vpsraw's count register); the
    semantics stay lane-wise over the lanes so read (`OpSpec.lane0_args`). `layout` is the lane order
    the instruction's result is cheapest in, for an ISA whose emitters choose a form by it (HVX:
    "deint" for a widening instruction's de-interleaved pair, "lanewise" for a same-width lane-wise
    instruction that follows its operands; pitchfork/targets/hvx_lanes.py); empty elsewhere.
    """
    sigs = [sig(s) for s in signatures]
    sem_text = {s: semantics if isinstance(semantics, str) else semantics(s) for s in sigs}
    by_args = {s.args: s for s in sigs}
    sem_cache: dict[tuple[ScalarType, ...], Term] = {}

    # the signature list for the error message, formatted once (synthesis asks every type tuple of
    # every form: formatting it per refusal was a third of a search's time)
    accepted = "; ".join(f"({', '.join(map(str, s.args))})" for s in sigs)

    def type_rule(ts: Sequence[ScalarType], _t: Optional[ScalarType]) -> ScalarType:
        s = by_args.get(tuple(ts))
        if s is None:
            raise FPIRTypeError(f"{name}: no form takes ({', '.join(map(str, ts))}); accepted: {accepted}")
        return s.result

    def definition(args: Sequence[Term], rt: ScalarType) -> Term:
        key = tuple(a.type for a in args)
        body = sem_cache.get(key)
        if body is None:
            env = {PARAMS[i]: t for i, t in enumerate(key)}
            body = parse(sem_text[by_args[key]], env=env, source=f"semantics of {name}")
            if body.type != rt:
                raise FPIRTypeError(f"semantics of {name} has type {body.type}, expected {rt}")
            sem_cache[key] = body
        return substitute(body, {PARAMS[i]: a for i, a in enumerate(args)})

    def hint(i: int, known: Sequence[Optional[ScalarType]], expected: Optional[ScalarType]) -> Optional[ScalarType]:
        for want in ((expected,) if expected is not None else ()) + (None,):
            for s in sigs:
                if want is not None and s.result != want:
                    continue
                if all(k is None or k == a for k, a in zip(known, s.args)):
                    return s.args[i]
        return None

    sem_doc = semantics if isinstance(semantics, str) else "; ".join(
        f"{text}: {sem_text[s]}" for text, s in zip(signatures, sigs))
    spec_ = OpSpec(name, len(sigs[0].args), "target", type_rule, doc or sem_doc, definition=definition,
                   arg_hint=hint, arg_lanes=tuple(lanes), lane0_args=tuple(lane0), meta={"emit": emit, "cost": cost, "llvm": llvm, "semantics": sem_doc,
                                        "signatures": tuple(signatures), "encodable": encodable,
                                        "layout": layout})
    if name in OPS:
        return OPS[name]
    return register(spec_)


def encodable(t: Term) -> bool:
    """True unless `t`'s instruction declares operands it must have as immediates and `t` lacks them."""
    check = OPS[t.op].meta.get("encodable")
    return check is None or bool(check(t))


def immediate(index: int, lo: int, hi: Callable[[int], int]) -> Callable[[Term], bool]:
    """`encodable` for an instruction whose operand `index` is an immediate in [lo, hi(bits)], bits
    being the lane width of its first operand."""

    def check(t: Term) -> bool:
        a = t.args[index]
        return a.is_const and lo <= a.value <= hi(t.args[0].type.bits)

    return check


@dataclass(frozen=True, slots=True)
class Inst:
    """One row of an ISA's instruction table: the arguments of `target_op` for `<isa>.<mnemonic>`.
    An empty `llvm` takes the ISA's default text (`declare`); `layout` is `target_op`'s."""

    mnemonic: str
    signatures: Sequence[str]
    semantics: str | Callable[[Signature], str]
    emit: Emitter
    llvm: str = ""
    cost: int = 1
    lanes: tuple[int, ...] = ()
    encodable: Optional[Callable[[Term], bool]] = None
    lane0: tuple[int, ...] = ()
    layout: str = ""


def declare(isa: str, table: Sequence[Inst], default_llvm: Callable[[str], str] = lambda mnemonic: "") -> None:
    """Declare every row of an instruction table (`target_op`), in table order."""
    for row in table:
        target_op(f"{isa}.{row.mnemonic}", row.signatures, row.semantics, row.emit, cost=row.cost,
                  llvm=row.llvm or default_llvm(row.mnemonic), lanes=row.lanes, encodable=row.encodable, lane0=row.lane0,
                  layout=row.layout)


def register_by_register(intrinsic: Callable[[Term, int], str], register_lanes: Callable[[Any, Term], int],
                         call: Optional[Callable[[Any, str, Sequence[Any], Any], Any]] = None) -> Emitter:
    """The emitter shape every ISA shares for a same-type lane-wise instruction: the operands cut into
    native registers of `register_lanes(em, t)` lanes (the last padded), `intrinsic(t, lanes)` called
    on each register (`call(em, name, operands, <lanes x i<bits>>)`, default `em.call`; HVX's
    `em.hvx_call` takes its registers as <32 x i32>), the results concatenated in lane order. An ISA's
    table supplies the two functions (its register width, its intrinsic names by type); x86's vpadds /
    vpavg, Neon's uhadd / sqadd / ..., and HVX's lane-wise instructions in natural lane order use it."""
    def emit(em: Any, args: Sequence[Any], t: Term) -> Any:
        n = register_lanes(em, t)
        vt = ir.VectorType(ir.IntType(t.type.bits), n)
        name = intrinsic(t, n)
        if call is None:
            return em.map_chunks(args, n, lambda *xs: em.call(name, vt, list(xs)))
        return em.map_chunks(args, n, lambda *xs: call(em, name, xs, vt))

    return emit


def target_ops(isa: str) -> list[OpSpec]:
    return [s for n, s in OPS.items() if s.kind == "target" and n.startswith(isa + ".")]


def semantics_check(name: str) -> list[tuple[Signature, Term]]:
    """Each signature's semantics as a term over fresh variables (for docs and tests)."""
    s = OPS[name]
    out = []
    for text in s.meta["signatures"]:
        sg = sig(text)
        args = [var(PARAMS[i], t) for i, t in enumerate(sg.args)]
        out.append((sg, s.definition(args, sg.result)))  # type: ignore[misc]
    return out


def rule_combines_lanes(rule: Any) -> bool:
    """True if a rule's text names a lane-combining op (vector_reduce_*, udot, vrmpy, pmaddwd_pairs):
    such rules and instructions are exercised by tests/pitchfork/targets/test_horizontal.py, whose
    kernels feed each operand at its own lane count."""
    import re

    from fpir.opspec import known_op, spec

    names = set(re.findall(r"[A-Za-z_][A-Za-z0-9_.]*(?=\()", rule.text()))
    return any(known_op(n) and spec(n).combines_lanes for n in names)

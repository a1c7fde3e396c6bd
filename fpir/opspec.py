"""The op table's rows and registry: `OpSpec`, `OPS`, `spec(name)`.

The rows are filled in by fpir.ops (primitives and FPIR ops, with their semantics) and
pitchfork.targets (machine instructions); this module holds only the row type, the table and the
lookups every layer needs (the term printer, the parser, the interpreter, the emitters). It sits
below fpir.term, so it names `Term` in annotations only.

Lane-combining ops `vector_reduce_<op>_x<f>` exist for every factor f in 2..MAX_REDUCE_FACTOR: the
documented factors are registered by fpir.ops, any other on first lookup (`spec`).

Invariant: an op is registered once; `spec` returns the one row of a name or raises FPIRTypeError.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Optional, Sequence

from fpir import typerules as tr
from fpir.primitives import Interval
from fpir.typerules import ArgHint, TypeRule
from fpir.types import FPIRTypeError, ScalarType

if TYPE_CHECKING:
    from fpir.term import Term


@dataclass(frozen=True, slots=True)
class OpSpec:
    name: str
    arity: int
    kind: str  # "primitive" | "fpir" | "target"
    type_rule: TypeRule
    doc: str
    # Primitive semantics (exact): numpy, Z3 and interval rules, all (args, arg types, result type).
    np_impl: Optional[Callable[..., Any]] = None
    z3_impl: Optional[Callable[..., Any]] = None
    interval: Optional[Callable[[Sequence[Interval], Sequence[ScalarType], ScalarType], Interval]] = None
    # FPIR / target semantics: build the meaning from other ops, given the argument terms.
    definition: Optional[Callable[[Sequence[Term], ScalarType], Term]] = None
    # True if the op's result type is written in the syntax (cast<t>, u8(...), saturating_cast<t>).
    explicit_type: bool = False
    # Type a bare constant argument takes, given the other arguments' types (parser and printer).
    arg_hint: Optional[ArgHint] = None
    # Ops whose text is an infix/prefix operator.
    symbol: Optional[str] = None
    # Lane structure. `arg_lanes[i]` is how many lanes of argument i make one lane of the result (empty:
    # every argument is lane-wise, 1). A lane-combining primitive (`vector_reduce_<op>_x<f>`) carries
    # `reduce = (combine, f)`: result lane j is the left fold of the lane-wise op `combine` over argument
    # lanes j*f .. j*f+f-1. That pair is the op's whole meaning; interp, z3enc and bounds fold with it.
    arg_lanes: tuple[int, ...] = ()
    reduce: Optional[tuple[str, int]] = None
    # Arguments read at lane 0 only: every result lane j takes lane 0 of argument i (i in lane0_args)
    # and lane j of the others (x86 vpsraw reads one count, the low lane of an xmm register). The
    # op's definition is lane-wise over the lanes so read; interp, z3enc and the emitter honour this.
    lane0_args: tuple[int, ...] = ()
    # Flags a node of this op may carry (name -> FlagSpec): facts about its inputs, see FLAGS.
    flags: dict = field(default_factory=dict, compare=False, hash=False)
    # Extra metadata used by targets (LLVM intrinsic name etc.).
    meta: dict = field(default_factory=dict, compare=False, hash=False)

    def lane_factor(self, i: int) -> int:
        """Lanes of argument i per result lane (1 for lane-wise ops)."""
        return self.arg_lanes[i] if self.arg_lanes else 1

    @property
    def combines_lanes(self) -> bool:
        return any(f != 1 for f in self.arg_lanes)

    @property
    def reads_lane0(self) -> bool:
        return bool(self.lane0_args)


OPS: dict[str, OpSpec] = {}


def register(spec: OpSpec) -> OpSpec:
    if spec.name in OPS:
        raise ValueError(f"op {spec.name!r} registered twice")
    OPS[spec.name] = spec
    return spec


def spec(name: str) -> OpSpec:
    try:
        return OPS[name]
    except KeyError:
        m = _REDUCE_RE.match(name)
        if m and 2 <= int(m.group(2)) <= MAX_REDUCE_FACTOR:
            # Any factor of a reduction family exists; the documented ones are registered up front.
            return register_reduce(m.group(1), int(m.group(2)), documented=False)
        raise FPIRTypeError(f"unknown op {name!r}") from None


def known_op(name: str) -> bool:
    """True if `name` is an op (registering a reduction family member on first use)."""
    try:
        spec(name)
        return True
    except FPIRTypeError:
        return False


def has_lane_ops(term: "Term") -> bool:
    """True if some op of the term combines lanes (its result lane count differs
    from an operand's) or reads an operand at lane 0 only: the lane-by-lane encoding of fpir/z3enc.py.
    Here, beside the op table, so that callers deciding whether Z3 is needed do not import it."""
    return any(t.args and (spec(t.op).combines_lanes or spec(t.op).reads_lane0) for t in term.walk())


def split_flags(name: str) -> tuple[str, list[str]]:
    """`add.nsw` -> ('add', ['nsw']). Target ops have dots in their names (`arm.umlal`), so the op is
    the longest dotted prefix that names an op; an unknown name is returned whole, without flags."""
    if known_op(name) or "." not in name:
        return name, []
    parts = name.split(".")
    for k in range(len(parts) - 1, 0, -1):
        op = ".".join(parts[:k])
        if known_op(op):
            return op, parts[k:]
    return name, []


REDUCE_COMBINE = {"add": "add", "min": "min", "max": "max", "saturating_add": "saturating_add"}
DOCUMENTED_FACTORS = (2, 4)
MAX_REDUCE_FACTOR = 256
_REDUCE_RE = re.compile(r"^vector_reduce_(add|min|max|saturating_add)_x(\d+)$")


def reduce_op(kind: str, factor: int) -> str:
    """The op name reducing groups of `factor` adjacent lanes with `kind` (add, min, max, saturating_add)."""
    return spec(f"vector_reduce_{kind}_x{factor}").name


def register_reduce(kind: str, f: int, documented: bool = True) -> OpSpec:
    combine = REDUCE_COMBINE[kind]
    what = {"add": "wrapping sum", "min": "minimum", "max": "maximum",
            "saturating_add": "saturating sum (saturating_add folded left to right)"}[kind]
    return register(OpSpec(
        f"vector_reduce_{kind}_x{f}", 1, "primitive", tr.same_int(f"vector_reduce_{kind}_x{f}"),
        f"Lane j of the result is the {what} of operand lanes {f}j .. {f}j+{f - 1}: the operand has {f} times "
        f"the result's lanes (Halide's VectorReduce with factor {f}; any factor 2..{MAX_REDUCE_FACTOR} exists "
        f"as vector_reduce_{kind}_x<f>).",
        arg_lanes=(f,), reduce=(combine, f), meta={"documented": documented}))

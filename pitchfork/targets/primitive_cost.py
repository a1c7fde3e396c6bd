"""Instructions a target spends on a generic primitive it has no native instruction for.

The lowering cost (`pitchfork.targets.target_cost` and its tie-break variants, and synthesis's
`synth.cost.lowering_cost`, which share this table through `primitive_instructions`) charges a generic
primitive left for LLVM one instruction. Where the target has an instruction for it that is what LLVM
emits, but where it has none LLVM emulates it with several, and a cost of 1 hides that: on HVX the
seen form of depthwise_conv's product, `i32(x_u8) * i32(y_i16)`, cost 3 (two casts and a multiply),
the same as the hand rule's `hvx.vmpy(i16(x), y)`, so synthesis with the hand rules hidden called it
optimal and left LLVM's 32-bit multiply emulation (vunpacks and vmpyieo + vmpyie.acc per register) in
the code (depthwise_conv at 0.433x of the hand lowering in the hvx128 bring-up).

The counts below are what LLVM 22 emits for the primitive alone (hexagonv66 with +hvxv66,
+hvx-length128b, as the compiler configures it): instructions in a kernel's loop, loads and stores not
counted, at the lane count where the node's narrowest vector fills one register (the lane count the
instruction table's costs are declared at). An instruction writing a register pair counts one here,
where the table's PAIR counts two: a one-level cast (one vunpack) stays at the 1 every primitive was
charged, so only what LLVM adds beyond one instruction changes the cost.
tests/pitchfork/targets/test_primitive_cost.py compiles every primitive at 8-, 16- and 32-bit lanes and
checks its count against the loop LLVM produces. Only primitives where LLVM needs more than one
instruction are listed; every other primitive keeps 1. A primitive on 64-bit
lanes (no HVX lanes at all: LLVM scalarises it) or on u1 predicates is not modelled here.

HVX v66 (128-byte registers):
- `mul` of 8-bit lanes: the widening `vmpy` (a register pair) and `vshuffe` taking the low bytes: 2.
- `mul` of 32-bit lanes: `vmpyieo` and `vmpyie.acc`: 2 (16-bit lanes have `vmpyi`: 1).
- `min` / `max` of u32 (no `vminuw`): `vsub:sat` and a `vsub` / `vadd`: 2.
- `shl` / `shr` of 8-bit lanes (no byte shifts): `vzxt` / `vsxt` to a halfword pair, one shift per
  register of the pair, `vshuffe` back: 4; by a runtime amount the amount is widened too: 5 (the
  masking of out-of-range amounts around it is `pitchfork.targets.RUNTIME_SHIFT_COST`'s).
- `cast` between 8-, 16- and 32-bit lanes, k levels apart: one `vunpack` (widening) or `vpacke`
  (narrowing) per register at each level, the register count doubling per level: 2^k - 1 (u8 -> i32:
  one vunpack to halfwords, then one per halfword register: 3).
A cast between lanes of one width stays 1, as the compiler charges it everywhere (synthesis charges it
nothing: synth/cost.py).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Optional

from fpir.term import Term
from fpir.types import ScalarType

#: HVX: (primitive, lane bits, signedness or None for either) -> instructions per register
HVX_EMULATED: Mapping[tuple[str, int, Optional[bool]], int] = {
    ("mul", 8, None): 2,
    ("mul", 32, None): 2,
    ("min", 32, False): 2,
    ("max", 32, False): 2,
    ("shl", 8, None): 4,
    ("shr", 8, None): 4,
}
#: lane widths HVX registers hold
HVX_LANE_BITS = frozenset({8, 16, 32})


def hvx_cast_instructions(source_bits: int, result_bits: int) -> int:
    """Unpacks (widening) or packs (narrowing) of a cast `source_bits` -> `result_bits`, per register
    of the narrower side: k levels apart, 1 + 2 + ... + 2^(k-1) = 2^k - 1."""
    levels = abs(result_bits.bit_length() - source_bits.bit_length())
    return (1 << levels) - 1


def hvx_instructions(op: str, operand: ScalarType, result: ScalarType, runtime_amount: bool = False) -> int:
    """Instructions HVX spends on the generic primitive `op` (first operand of type `operand`, result
    `result`; `runtime_amount`: a shift by a non-constant amount), per register of its narrowest vector;
    1 where the primitive is one instruction or not modelled (module doc)."""
    bits = result.bits
    if op == "cast":
        if operand.bits != bits and operand.bits in HVX_LANE_BITS and bits in HVX_LANE_BITS:
            return hvx_cast_instructions(operand.bits, bits)
        return 1
    if bits not in HVX_LANE_BITS:
        return 1
    n = HVX_EMULATED.get((op, bits, result.signed), HVX_EMULATED.get((op, bits, None), 1))
    if n > 1 and runtime_amount and op in ("shl", "shr"):
        n += 1  # the amount is widened beside the value
    return n


#: target name -> instructions of a generic primitive there (op, first operand's type, result type,
#: whether a shift's amount is a runtime value); targets missing here: 1 for every primitive
EMULATED: Mapping[str, Callable[[str, ScalarType, ScalarType, bool], int]] = {"hvx128": hvx_instructions}


def instructions(isa: Optional[str], op: str, operand: ScalarType, result: ScalarType,
                 runtime_amount: bool = False) -> int:
    """Instructions target `isa` spends on the generic primitive `op(operand, ...) -> result` (1 where
    it has the instruction, where the target models none, or with no target)."""
    count = EMULATED.get(isa or "")
    return 1 if count is None else count(op, operand, result, runtime_amount)


def primitive_instructions(isa: Optional[str], t: Term) -> int:
    """`instructions` of the node `t` (a generic primitive with operands)."""
    runtime = t.op in ("shl", "shr") and not t.args[1].is_const
    return instructions(isa, t.op, t.args[0].type, t.type, runtime)

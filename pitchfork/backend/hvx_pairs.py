"""HVX register-pair (`.dv`) forms, kept only where the backend packs them into no more packets.

Some lane-wise HVX instructions have a register-pair form: `Vdd.h = vadd(Vuu.h, Vvv.h):sat` is one
instruction for the two registers of a pair. The selected emitters (pitchfork/targets/hvx_emit.py, `lanewise`)
write it for saturating adds/subtracts over whole register pairs, as Halide's Hexagon code generator
does. It is one instruction instead of two, but it takes the resources of both in *one* packet, so
it never frees a slot and it can cost one: in mul hvx128 it saves an instruction in the same 13
packets, in add hvx128 the hot loop grows from 8 to 9 packets (the form Halide 21 also uses there).
Which way it goes depends on the schedule of the whole loop, which only the backend knows.

So on hvx128, a module whose optimised IR calls such a pair form is emitted twice: as it is, and
with every such call split into its two single-register instructions (`split_pairs`). The pair
form is kept (`keep_pairs`) when no loop of the code takes more packets with it; otherwise the split
module is the one compiled (its IR text is then the module's text, so the assembly, the object code
and the JIT stay one code). Only the `SPLITTABLE` instructions are split: their register-pair form
computes, register by register, exactly what the single-register form computes, so either text has
the same value lane for lane.
"""

from __future__ import annotations

import re
from typing import Sequence

from pitchfork.backend.hvx_fixups import shuffle_mask

#: pair-form intrinsics (`llvm.hexagon.V6.<name>.dv.128B`) whose value is the single-register form's
#: on the low and the high register of each operand pair
SPLITTABLE = frozenset(f"v{op}{t}sat" for op in ("add", "sub") for t in ("ub", "b", "uh", "h", "uw", "w"))

_OPERAND = r"(?:%[\w.$-]+|zeroinitializer|poison|undef|splat \(i32 -?\d+\)|<[^<>]*>)"
_PAIR_CALL = re.compile(
    r"^(?P<ind>\s*)(?P<dst>%[\w.$-]+) = (?P<tail>(?:tail |notail |musttail )?)call <64 x i32> "
    r"@llvm\.hexagon\.V6\.(?P<name>\w+)\.dv\.128B\(<64 x i32> (?P<a>" + _OPERAND + r"), "
    r"<64 x i32> (?P<b>" + _OPERAND + r")\)(?P<attrs>[^\n]*)$",
    re.M,
)
_LO, _HI, _BOTH = shuffle_mask(range(32)), shuffle_mask(range(32, 64)), shuffle_mask(range(64))


def _splittable(m: re.Match[str]) -> bool:
    return m.group("name") in SPLITTABLE


def has_pair_forms(ir_text: str) -> bool:
    """Whether the module calls a pair form that `split_pairs` would split."""
    if ".dv.128B(" not in ir_text:  # what every match of _PAIR_CALL contains: no regex scan of every line
        return False
    return any(_splittable(m) for m in _PAIR_CALL.finditer(ir_text))


def split_pairs(ir_text: str) -> str:
    """Every call of a `SPLITTABLE` pair form replaced by its two single-register calls on the low
    and high registers of the operands, joined again into the pair (the value is unchanged)."""
    counter = iter(range(1 << 30))
    needed: set[str] = set()

    def split(m: re.Match[str]) -> str:
        if not _splittable(m):
            return m.group(0)
        ind, dst, tail, name, attrs = m.group("ind", "dst", "tail", "name", "attrs")
        needed.add(name)
        k = next(counter)
        p = f"%pf.dv{k}"
        lines = []
        for half, mask in (("lo", _LO), ("hi", _HI)):
            for arg in ("a", "b"):
                lines.append(f"{ind}{p}.{arg}.{half} = shufflevector <64 x i32> {m.group(arg)}, <64 x i32> poison, {mask}")
            lines.append(f"{ind}{p}.{half} = {tail}call <32 x i32> @llvm.hexagon.V6.{name}.128B("
                         f"<32 x i32> {p}.a.{half}, <32 x i32> {p}.b.{half}){attrs}")
        lines.append(f"{ind}{dst} = shufflevector <32 x i32> {p}.lo, <32 x i32> {p}.hi, {_BOTH}")
        return "\n".join(lines)

    out = _PAIR_CALL.sub(split, ir_text)
    decls = [f"declare <32 x i32> @llvm.hexagon.V6.{n}.128B(<32 x i32>, <32 x i32>)" for n in sorted(needed)
             if f"@llvm.hexagon.V6.{n}.128B(" not in ir_text]
    return out + ("\n" + "\n".join(decls) + "\n" if decls else "")


def keep_pairs(with_pairs: Sequence[int], split: Sequence[int]) -> bool:
    """Given the packet count of every loop (in the order of their headers) of the code emitted with
    the pair forms and of the split code: keep the pair forms when the loops correspond one to one
    and none takes more packets with them (outer loops count the packets of their inner loops, so
    the code around an inner loop is compared too). At equal packets the pair form wins: it is the
    same work in fewer instructions."""
    return len(with_pairs) == len(split) and all(a <= b for a, b in zip(with_pairs, split))

"""A dependency-aware cycle estimate for Hexagon packets (beside the packet count of static.py).

llvm-mca has no Hexagon model (`llvm-mca-22 -mtriple=hexagon -mcpu=hexagonv66`: "instruction
itineraries are currently unsupported"), so this is our own, documented model. It keeps what the
packet count already respects (LLVM's packetizer fills each packet within the slot and HVX resource
limits: 4 slots, 2 multiply, 1 shift/permute, 1 load, 1 store resource per packet) and adds what a
packet count ignores: a packet cannot issue before the registers it reads are ready.

* Packets issue in order, one per cycle at best: packet p issues at
  t_p = max(t_{p-1} + 1, max over its source registers s of ready[s]).
* A destination register written by packet p is ready at t_p + latency(instruction):
  - HVX multiplies (vmpy*, vrmpy, vdmpy, vtmpy, vmpa*, vmps*): 2
  - HVX shift / permute / pack / unpack / lookup (vasr, vasl, vlsr, vround, vsat, vpack, vunpack,
    vzxt, vsxt, vshuff*, vdeal*, valign, vlalign, vdelta, vrdelta, vlut*, vror, vextract): 2
  - HVX and scalar loads (vmem, vmemu, memb/h/w/d...): 2 (a `.cur` load is usable in its own packet)
  - scalar multiplies (mpy*, mpyi): 2
  - everything else (HVX and scalar ALU, moves, compares, splats, stores): 1
  These are the classes of the Hexagon V66 HVX programmer's reference (ALU results forward to the
  next packet; multiply and permute/shift results one packet later); exact per-instruction cycles
  (and memory stalls) are not modelled.
* Operands marked `.new` read a value of the same packet (no stall); a register pair `v1:0` is both
  registers.
* A single-path loop costs its steady-state cycles per iteration: the body is issued twice with the
  ready times carried across, and the second iteration's span counts (loop-carried dependences,
  e.g. an accumulator fed by a multiply, stall there). A block outside a loop starts from ready
  registers.

It is an estimate of the same kind as the packet count, with one more effect, not a simulator.
"""

from __future__ import annotations

import re
from typing import Sequence

_REG = re.compile(r"\b([rvqp])(\d+)(?::(\d+))?(\.new|\.cur|\.tmp)?")
_MPY = re.compile(r"^(vmpy|vrmpy|vdmpy|vtmpy|vmpa|vmps|vmpye|vmpyo|vmpyi)")
_PERM = re.compile(r"^(vasr|vasl|vlsr|vround|vsat|vpack|vunpack|vzxt|vsxt|vshuff|vdeal|valign|vlalign|vdelta|"
                   r"vrdelta|vlut|vror|vextract|vcl0|vnormamt|vpopcount)")
_LOAD = re.compile(r"\b(vmem|vmemu|memb|memub|memh|memuh|memw|memd)\s*\(")
_CALL = re.compile(r"([A-Za-z_][\w.]*)\s*\(")


def _regs(text: str) -> list[tuple[str, str]]:
    """(register, suffix) for every register named in `text`; pairs expand to both halves."""
    out = []
    for kind, hi, lo, suffix in _REG.findall(text):
        out.append((f"{kind}{hi}", suffix))
        if lo:
            out.append((f"{kind}{lo}", suffix))
    return out


def latency(inst: str) -> int:
    """Cycles from issue until the instruction's result can be read (see the module docstring)."""
    inst = re.sub(r"^if\s*\(!?[pP]\d+(\.new)?\)\s*", "", inst.strip())
    if "=" not in inst or re.match(r"^\s*(vmem|vmemu|mem[bhwd])\w*\s*\(", inst):
        return 1  # a store, jump or loop setup: nothing read back from it here
    lhs, rhs = inst.split("=", 1)
    if _LOAD.search(rhs):
        return 1 if ".cur" in lhs else 2
    m = _CALL.search(rhs)
    name = m.group(1) if m else ""
    if _MPY.match(name) or _PERM.match(name):
        return 2
    if name.startswith("mpy"):
        return 2
    return 1


def _split(inst: str) -> tuple[list[str], list[tuple[str, str]]]:
    """(registers written, registers read) of one instruction."""
    s = inst.strip()
    guard = re.match(r"^if\s*\((!?)([pP]\d+)(\.new)?\)\s*", s)
    reads: list[tuple[str, str]] = []
    if guard:
        reads.append((guard.group(2).lower(), guard.group(3) or ""))
        s = s[guard.end():]
    if "=" in s and not re.match(r"^[^=]*[<>!]=", s):
        lhs, rhs = s.split("=", 1)
        accumulate = lhs.rstrip().endswith(("+", "-", "|", "&", "^"))
        if re.match(r"^\s*(vmem|vmemu|mem[bhwd])\w*\s*\(", lhs):  # a store: address and value are read
            return [], reads + _regs(lhs) + _regs(rhs)
        writes = [r for r, _ in _regs(lhs)]
        reads += _regs(rhs)
        if accumulate:
            reads += [(r, "") for r in writes]
        # post-increment addressing (r0++#128) also writes its base register
        writes += [r for r in re.findall(r"\b(r\d+)\+\+", rhs)]
        return writes, reads
    return [], reads + _regs(s)


def _issue(packets: Sequence[Sequence[str]], ready: dict[str, int], t: int) -> int:
    """Issue `packets` after cycle `t`; updates `ready`; returns the last packet's issue cycle."""
    for pk in packets:
        parsed = [(_split(i), latency(i)) for i in pk]
        start = t + 1
        for (_, reads), _ in parsed:
            for r, suffix in reads:
                if suffix in (".new", ".cur", ".tmp"):
                    continue
                start = max(start, ready.get(r, 0))
        for (writes, _), lat in parsed:
            for w in writes:
                ready[w] = start + lat
        t = start
    return t


def block_cycles(packets: Sequence[Sequence[str]], loop: bool) -> float:
    """Cycles of one execution of `packets` (steady-state cycles per iteration when `loop`)."""
    if not packets:
        return 0.0
    ready: dict[str, int] = {}
    end1 = _issue(packets, ready, 0)
    if not loop:
        return float(end1)
    end2 = _issue(packets, ready, end1)
    return float(end2 - end1)

"""Basic blocks and loops of one function's assembly, and counter instrumentation of those blocks.

This is what makes the static estimate *weighted*: `instrument` inserts, at the start of every basic
block of a function, a few instructions that add 1 to that block's own 32-bit counter (`pf_cnt[i]`).
Running the instrumented program once (natively on x86, under qemu on AArch64 and Hexagon) gives the
exact number of times each block of the *uninstrumented* code runs, because instrumentation only adds
code at block starts and changes no branch. The cost model then sums `count(block) x cost(block)`
over every block that ran (see `static.py`); no loop is picked by a heuristic.

Syntaxes: x86 AT&T (`#` comments), AArch64 and Hexagon (`//` comments, `#imm`). Hexagon code is
grouped in `{ ... }` packets; a packet that branches (a `jump`, `jumpr`, `dealloc_return`, or an
`:endloopN` close) ends a block, and a hardware loop's `:endloopN` packet jumps back to the label
named by the nearest preceding `loopN(label, ...)` set-up.

Invariants: the counter snippets preserve every register and flag the original code can observe
(x86: in line, only `mov`/`lea` through a save slot, no flag writes; AArch64 and Hexagon: a branch to an
out-of-line stub that counts and branches back, so the code grows by one instruction per block and
short-range branches stay in range. AArch64 stubs push x0/x1 below `sp` (no red zone on AArch64 Linux)
and use `add` without `s`; Hexagon stubs go through r0 and a save slot, no predicate writes, and a jump
out of and back into a hardware-loop body leaves the loop registers alone); blocks are numbered in text
order.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

Syntax = Literal["x86-avx2", "arm64", "hvx128"]

_LABEL = re.compile(r"^\s*([A-Za-z_.$][\w.$]*|\"[^\"]+\"):(?=\s|$)")
_X86_BRANCH = re.compile(r"^(j[a-z]+|ret[a-z]*|ud2)\b")
_X86_UNCOND = re.compile(r"^(jmp[a-z]*|ret[a-z]*|ud2)\b")
_A64_BRANCH = re.compile(r"^(b|b\.[a-z]+|br|cbn?z|tbn?z|ret)(\s|$)")
_A64_UNCOND = re.compile(r"^(b|br|ret)(\s|$)")
_HEX_BRANCH = re.compile(r"\b(jump|jumpr|dealloc_return)\b")
_HEX_UNCOND = re.compile(r"^(jump|jumpr|dealloc_return)\b")
_HW_LOOP = re.compile(r"\b(?:sp\d)?loop([01])\(\s*#*([\w.$]+)\s*,")  # `##label`: constant-extended
_PACKET_ATTR = re.compile(r":(endloop\d+|[a-z_]+)\b")
_SYMBOL = re.compile(r"[A-Za-z_.$][\w.$]*")


@dataclass(frozen=True)
class Block:
    """A basic block: its label (if any), instructions, Hexagon packets, and control flow out."""

    index: int
    label: str | None
    instructions: tuple[str, ...]
    packets: tuple[tuple[str, ...], ...]  # Hexagon only
    targets: tuple[str, ...]  # labels it may branch to
    falls_through: bool
    insert_at: int  # line number (0-based, in the whole text) the counter snippet goes before


@dataclass(frozen=True)
class Loop:
    """Blocks `first..last` (inclusive, in text order) with a back edge from `last`'s range to `first`."""

    header: str
    first: int
    last: int
    innermost: bool


def _strip(line: str, syntax: Syntax) -> str:
    line = line.split("//", 1)[0]
    if syntax == "x86-avx2":
        line = line.split("#", 1)[0]
    return line.strip()


def function_span(lines: list[str], function: str) -> tuple[int, int]:
    """Line range [start, end) of `function`'s body: after its label, up to `.Lfunc_end`/`.size`."""
    head = re.compile(rf"^\s*(\"{re.escape(function)}\"|{re.escape(function)}):(\s|$)")
    start = next((i + 1 for i, ln in enumerate(lines) if head.match(ln)), None)
    if start is None:
        raise ValueError(f"function {function!r} not found in the assembly")
    end_pat = re.compile(rf"^\s*(\.Lfunc_end\d+:|\.size\s+\"?{re.escape(function)}\"?\s*,)")
    end = next((j for j in range(start, len(lines)) if end_pat.match(lines[j])), len(lines))
    return start, end


def _is_branch(inst: str, syntax: Syntax) -> bool:
    if syntax == "x86-avx2":
        return bool(_X86_BRANCH.match(inst))
    if syntax == "arm64":
        return bool(_A64_BRANCH.match(inst))
    return bool(_HEX_BRANCH.search(inst))


def _is_uncond(inst: str, syntax: Syntax) -> bool:
    pat = {"x86-avx2": _X86_UNCOND, "arm64": _A64_UNCOND, "hvx128": _HEX_UNCOND}[syntax]
    return bool(pat.match(inst))


class _Builder:
    def __init__(self, syntax: Syntax) -> None:
        self.syntax = syntax
        self.blocks: list[Block] = []
        self.label: str | None = None
        self.insts: list[str] = []
        self.packets: list[tuple[str, ...]] = []
        self.targets: list[str] = []
        self.falls = True
        self.insert_at: int | None = None
        self.open = False

    @property
    def empty(self) -> bool:
        return not self.insts

    def finish(self) -> None:
        if self.insert_at is None:
            return
        if self.insts or self.label is not None:
            self.blocks.append(Block(len(self.blocks), self.label, tuple(self.insts), tuple(self.packets),
                                     tuple(self.targets), self.falls, self.insert_at))
        self.label, self.insts, self.packets, self.targets = None, [], [], []
        self.falls, self.insert_at = True, None

    def start(self, line: int, label: str | None) -> None:
        self.finish()
        self.label, self.insert_at = label, line


def split_blocks(text: str, function: str, syntax: Syntax) -> list[Block]:
    """The basic blocks of `function` in `text`, in text order."""
    lines = text.splitlines()
    start, end = function_span(lines, function)
    b = _Builder(syntax)
    b.start(start, None)
    hw_labels: dict[str, str] = {}  # loop number -> label of the latest loopN set-up
    packet: list[str] = []
    in_packet = False
    for ln in range(start, end):
        s = _strip(lines[ln], syntax)
        while s:
            m = _LABEL.match(s)
            if m and not in_packet:
                name = m.group(1).strip('"')
                if b.empty and b.label is None:
                    b.label = name
                    b.insert_at = ln + 1
                elif b.empty:
                    b.insert_at = ln + 1  # consecutive labels: one block, counted after the last
                    # keep the first label as the block's name; the others alias it
                    b.targets.append(f"={name}")
                else:
                    b.start(ln + 1, name)
                s = s[m.end():].strip()
                continue
            if s.startswith("."):
                break
            if syntax == "hvx128":
                if s.startswith("{"):
                    if b.empty and b.insert_at is None:
                        b.start(ln, None)
                    in_packet, packet = True, []
                    s = s[1:].strip()
                    continue
                close = s.find("}")
                body = s if close < 0 else s[:close].strip()
                if body:
                    inst = re.sub(r"\s+", " ", body)
                    if in_packet:
                        packet.append(inst)
                    else:  # an instruction outside braces is a packet of its own
                        packet = [inst]
                        close, s = 0, "}"
                if close >= 0:
                    # The closing brace may carry packet attributes: `:endloopN` (a hardware-loop
                    # back edge) and others such as `:mem_noshuf`, which belong to this packet.
                    rest, endloops = s[close + 1:].strip(), ""
                    while (am := _PACKET_ATTR.match(rest)) is not None:
                        if am.group(1).startswith("endloop"):
                            endloops += am.group(1)[len("endloop"):]
                        rest = rest[am.end():].strip()
                    _end_packet(b, packet, endloops, hw_labels, ln)
                    in_packet, packet = False, []
                    s = rest
                    continue
                break
            inst = re.sub(r"\s+", " ", s)
            if b.insert_at is None:
                b.start(ln, None)
            b.insts.append(inst)
            if _is_branch(inst, syntax):
                b.targets += [t for t in _SYMBOL.findall(inst.split(None, 1)[1] if " " in inst else "")]
                b.falls = not _is_uncond(inst, syntax)
                b.finish()
            break
    b.finish()
    return _resolve_aliases(b.blocks)


def _end_packet(b: _Builder, packet: list[str], endloop: str, hw_labels: dict[str, str], ln: int) -> None:
    if b.insert_at is None:
        b.start(ln, None)
    b.insts += packet
    b.packets.append(tuple(packet))
    branches = False
    for inst in packet:
        hw = _HW_LOOP.search(inst)
        if hw:
            hw_labels[hw.group(1)] = hw.group(2)
        if _is_branch(inst, "hvx128"):
            branches = True
            tail = re.split(r"\bjump\S*|\bjumpr\S*", inst)[-1]
            b.targets += _SYMBOL.findall(tail)
            if _is_uncond(inst, "hvx128"):
                b.falls = False
    for n in endloop:
        branches = True
        if n in hw_labels:
            b.targets.append(hw_labels[n])
    if branches:
        b.finish()


def _resolve_aliases(blocks: list[Block]) -> list[Block]:
    """Targets naming a second label of a block (recorded as '=name') are mapped to its first label."""
    alias: dict[str, str] = {}
    for blk in blocks:
        for t in blk.targets:
            if t.startswith("=") and blk.label:
                alias[t[1:]] = blk.label
    out = []
    for blk in blocks:
        targets = tuple(alias.get(t, t) for t in blk.targets if not t.startswith("="))
        out.append(Block(blk.index, blk.label, blk.instructions, blk.packets, targets, blk.falls_through,
                         blk.insert_at))
    return out


def find_loops(blocks: list[Block]) -> list[Loop]:
    """Loops as contiguous block ranges: a branch in block j to the label of block i <= j closes the
    loop i..j (two back edges to one header give one loop, up to the later one). `innermost` is set
    when no other loop lies strictly inside the range."""
    where = {blk.label: blk.index for blk in blocks if blk.label is not None}
    spans: dict[int, int] = {}
    for blk in blocks:
        for t in blk.targets:
            i = where.get(t)
            if i is not None and i <= blk.index:
                spans[i] = max(spans.get(i, i), blk.index)
    ranges = sorted(spans.items())
    loops = []
    for first, last in ranges:
        inner = not any(f >= first and l <= last and (f, l) != (first, last) for f, l in ranges)
        label = blocks[first].label
        assert label is not None
        loops.append(Loop(label, first, last, inner))
    return loops


# ---- instrumentation ---------------------------------------------------------------------------

COUNTERS = "pf_cnt"
SAVE = "pf_save"


def _snippet(i: int, syntax: Syntax) -> list[str]:
    off = 4 * i
    if syntax == "x86-avx2":
        return [f"\tmovq %rax, {SAVE}(%rip)", f"\tmovl {COUNTERS}+{off}(%rip), %eax", "\tleal 1(%rax), %eax",
                f"\tmovl %eax, {COUNTERS}+{off}(%rip)", f"\tmovq {SAVE}(%rip), %rax"]
    if syntax == "arm64":  # in line: one branch to an out-of-line stub (see _stub)
        return [f"\tb .Lpf_stub{i}", f".Lpf_ret{i}:"]
    # Hexagon: one packet in line (a jump to an out-of-line stub and back). Growing the code more moves
    # short-range branches (new-value compare-jumps; AArch64's tbz/cbz) out of range, and the assembler
    # then fails (AArch64) or crashes (Hexagon, relaxing packets with no room for a constant extender).
    return [f"\t{{ jump .Lpf_stub{i} }}", f".Lpf_ret{i}:"]


def _stub(i: int, syntax: Syntax) -> list[str]:
    off = 4 * i
    if syntax == "arm64":
        return [f".Lpf_stub{i}:", "\tstp x0, x1, [sp, #-16]!", f"\tadrp x0, {COUNTERS}+{off}",
                f"\tadd x0, x0, :lo12:{COUNTERS}+{off}", "\tldr w1, [x0]", "\tadd w1, w1, #1", "\tstr w1, [x0]",
                "\tldp x0, x1, [sp], #16", f"\tb .Lpf_ret{i}"]
    return [f".Lpf_stub{i}:", f"\t{{ memw(##{SAVE}) = r0 }}", f"\t{{ r0 = memw(##{COUNTERS}+{off}) }}",
            "\t{ r0 = add(r0,#1) }", f"\t{{ memw(##{COUNTERS}+{off}) = r0 }}",
            f"\t{{ r0 = memw(##{SAVE})", f"\t  jump .Lpf_ret{i} }}"]


_A64_SHORT = re.compile(r"^\s*(tbz|tbnz|cbz|cbnz)\s+(.*),\s*([A-Za-z_.$][\w.$]*)\s*(//.*)?$")
_INVERT = {"tbz": "tbnz", "tbnz": "tbz", "cbz": "cbnz", "cbnz": "cbz"}


def _long_branch(line: str, ln: int) -> list[str]:
    """AArch64 `tbz`/`cbz` and friends reach only +-32 KiB / +-1 MiB, and the counters grow the code: each
    becomes the inverted test over an unconditional `b` (same flags, same targets, same counts)."""
    m = _A64_SHORT.match(line)
    if not m:
        return [line]
    op, operands, target = m.group(1), m.group(2), m.group(3)
    return [f"\t{_INVERT[op]} {operands}, .Lpf_skip{ln}", f"\tb {target}", f".Lpf_skip{ln}:"]


def instrument(text: str, function: str, syntax: Syntax) -> tuple[str, list[Block]]:
    """`text` with a counter increment at the start of every block of `function`, plus the counter
    array `pf_cnt` (global, 4 bytes per block, zero-initialised) and its save slot."""
    blocks = split_blocks(text, function, syntax)
    lines = text.splitlines()
    inserts: dict[int, list[str]] = {}
    for blk in blocks:
        inserts.setdefault(blk.insert_at, []).extend(_snippet(blk.index, syntax))
    out: list[str] = []
    for ln, line in enumerate(lines):
        out += inserts.get(ln, [])
        out += _long_branch(line, ln) if syntax == "arm64" else [line]
    out += inserts.get(len(lines), [])
    if syntax != "x86-avx2":  # (x86 assemblers relax every jump, so x86 counters stay in line)
        out += ["\t.text", "\t.p2align 4"] + [ln for blk in blocks for ln in _stub(blk.index, syntax)]
    out += ["\t.bss", "\t.p2align 3", f"\t.globl {COUNTERS}", f"{COUNTERS}:", f"\t.space {4 * max(len(blocks), 1)}",
            f"{SAVE}:", "\t.space 8", ""]
    return "\n".join(out), blocks

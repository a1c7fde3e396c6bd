"""Reading assembly: instruction lines, function regions and loops of the assembly LLVM prints for x86-64
(AT&T), AArch64 and Hexagon (VLIW packets).

* `asm_instructions`: instruction lines only (Hexagon packets split into their instructions);
* `function_region`: one function's lines;
* `find_loops` / `inner_loop` / `inner_loop_instructions`: loop bodies, delimited by a back-branch or,
  on Hexagon, by a hardware loop `loopN(label, ..)` ... `:endloopN`, with their packets;
* `main_vector_loop`: the steady-state vector loop (the innermost loop that stores whole vectors most).

Pure text: nothing here calls LLVM. A target is named by its ISA (`x86-avx2`, `arm64`, `hvx128`, or a
`pitchfork.backend.machine.Target`), which fixes the syntax; with no target the syntax is guessed from
the text. Used by the machine layer (pitchfork/backend/machine.py: the hvx_pairs packet comparison), the
tests and the benchmark harness. Invariant: a loop's `instructions` are exactly the instruction lines
between its head label and its back-branch (or end packet), in order, whatever the syntax.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal, NamedTuple, Optional

if TYPE_CHECKING:
    from pitchfork.backend.machine import Target

#: the ISAs whose assembly syntax this module reads
SYNTAXES = ("x86-avx2", "arm64", "hvx128")


def syntax_of(target: Target | str) -> str:
    """The ISA name of `target` (a `Target` or its name), checked."""
    name = target if isinstance(target, str) else target.name
    if name not in SYNTAXES:
        raise ValueError(f"unknown target {name!r}; expected one of {sorted(SYNTAXES)}")
    return name


# --------------------------------------------------------------------------------------------------
# Reading assembly
#
# Syntax notes: x86 is AT&T (`#` comments, `$imm`, `%reg`); AArch64 and Hexagon use `//` comments and
# `#imm`, so `#` is only a comment marker on x86. Hexagon prints each packet as `{` / one instruction
# per line / `}`, the closing brace of a hardware-loop end packet carrying `:endloop0` (or `:endloop1`,
# `:endloop01`). A compound instruction such as `p0 = cmp.gt(r3,#0); if (!p0.new) jump:nt .L` is one
# encoding and is kept as one instruction.

AsmKind = Literal["label", "inst", "open", "close"]


class _Item(NamedTuple):
    """One piece of a line (a NamedTuple: an assembly has thousands, made faster than dataclasses)."""

    kind: AsmKind
    text: str  # label name, instruction text, or for "close" the endloop digits ('' if none)


_OPEN = _Item("open", "")  # (immutable: one object serves every packet opening)

_LABEL = re.compile(r"^([A-Za-z_.$][\w.$]*|\"[^\"]+\"):(?=\s|$)")  # not `jump:nt`
_LABEL_START = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz_.$\"")  # what _LABEL can start with
_ENDLOOP = re.compile(r"\}\s*:endloop(\d+)")


def _detect_syntax(asm_text: str, target: Target | str | None) -> str:
    if target is not None:
        return syntax_of(target)
    if re.search(r"^\s*\{\s*$", asm_text, re.MULTILINE) or ":endloop" in asm_text:
        return "hvx128"
    # AT&T registers (`%ymm0`) outside comments; `%bb.0` etc. only ever appear in comments.
    code = (line.split("//", 1)[0].split("#", 1)[0] for line in asm_text.splitlines())
    if any(re.search(r"%[a-z]", line) for line in code):
        return "x86-avx2"
    return "arm64"


def function_region(asm_text: str, function: str | None) -> str:
    if function is None:
        return asm_text
    lines = asm_text.splitlines()
    start = None
    head = re.compile(rf"^\s*(\"{re.escape(function)}\"|{re.escape(function)}):(\s|$)")
    for i, line in enumerate(lines):
        if head.match(line):
            start = i
            break
    if start is None:
        raise ValueError(f"function {function!r} not found in the assembly")
    end = len(lines)
    end_pat = re.compile(rf"^\s*(\.Lfunc_end\d+:|\.size\s+\"?{re.escape(function)}\"?\s*,)")
    for j in range(start + 1, len(lines)):
        if end_pat.match(lines[j]):
            end = j
            break
    return "\n".join(lines[start + 1 : end])


def _items(asm_text: str, syntax: str) -> list[_Item]:
    items: list[_Item] = []
    append = items.append
    x86, hvx = syntax == "x86-avx2", syntax == "hvx128"
    for raw in asm_text.splitlines():
        line = raw.split("//", 1)[0]
        if x86:
            line = line.split("#", 1)[0]
        line = line.strip()
        while line:
            # (a label starts with a letter, `_`, `.`, `$` or `"`: nothing else is tried against _LABEL)
            m = _LABEL.match(line) if line[0] in _LABEL_START else None
            if m:
                append(_Item("label", m.group(1).strip('"')))
                line = line[m.end() :].strip()
                continue
            if line.startswith("{"):
                append(_OPEN)
                line = line[1:].strip()
                continue
            close = line.find("}") if hvx else -1
            if close >= 0:
                before = line[:close].strip()
                if before:
                    append(_Item("inst", " ".join(before.split())))
                em = _ENDLOOP.match(line[close:])
                append(_Item("close", em.group(1) if em else ""))
                line = line[close:][em.end() if em else 1 :].strip()
                continue
            if not line.startswith("."):  # directives start with '.', labels were handled above
                # (`" ".join(line.split())` is `re.sub(r"\s+", " ", line)` on a stripped line: both split
                # at runs of the same (Unicode) whitespace)
                append(_Item("inst", " ".join(line.split())))
            break
    return items


def asm_instructions(
    asm_text: str, function: str | None = None, *, target: Target | str | None = None
) -> list[str]:
    """Instruction lines of `asm_text` (or of one function), whitespace-normalised.

    Directives, comments, labels and Hexagon packet braces are dropped; each instruction of a packet is
    one entry. `target` selects the comment syntax; it is guessed from the text when omitted.
    """
    syntax = _detect_syntax(asm_text, target)
    return [it.text for it in _items(function_region(asm_text, function), syntax) if it.kind == "inst"]


@dataclass(frozen=True, slots=True)
class Loop:
    """A loop in the assembly: the code from its header label to its back-branch / `:endloopN` packet.

    `packets` is filled for Hexagon only (one tuple of instructions per `{ ... }` packet); it is the
    performance proxy there, since llvm-mca has no Hexagon model.
    """

    label: str
    instructions: tuple[str, ...]
    packets: tuple[tuple[str, ...], ...]
    hardware_loop: bool  # header label set up by `loopN(label, ..)`, body ends with `:endloopN`
    innermost: bool
    start: int  # item indices, for ordering and nesting
    end: int


_BRANCH = {
    "x86-avx2": re.compile(r"^j[a-z]+\b"),
    "arm64": re.compile(r"^(b(\.[a-z]+)?|b[a-z]{2}|cbn?z|tbn?z)\s"),
    "hvx128": re.compile(r"\bjump(:[a-z]+)?\s"),
}
_UNCONDITIONAL = {  # control never falls through these
    "x86-avx2": re.compile(r"^(jmp\w*|ret\w*|ud2)\b"),
    "arm64": re.compile(r"^(b|br|ret)(\s|$)"),
    "hvx128": re.compile(r"^(jump|jumpr|dealloc_return)\b"),
}
_HW_LOOP = re.compile(r"\b(?:sp\d)?loop([01])\(\s*#*([\w.$]+)\s*,")  # `##label`: constant-extended
_SYMBOL = re.compile(r"[A-Za-z_.$][\w.$]*")


@dataclass(frozen=True, slots=True)
class _Flow:
    """What `_is_cycle` reads of each item, computed once per `find_loops` call (it walks the same items
    from every back-branch): `kind[i]`; `jumps[i]` the indices of the labels an instruction branch
    names (None: not a branch), or of the labels an `:endloop` packet end may branch to (`hw`);
    `uncond[i]` whether control never falls through instruction i."""

    kind: list[str]
    jumps: list[Optional[list[int]]]
    uncond: list[bool]


def _flow(items: list[_Item], labels: dict[str, int], hw: dict[str, list[int]], syntax: str) -> _Flow:
    branch, uncond = _BRANCH[syntax], _UNCONDITIONAL[syntax]
    kinds: list[str] = []
    jumps: list[Optional[list[int]]] = []
    unconds: list[bool] = []
    for it in items:
        kinds.append(it.kind)
        if it.kind == "inst":
            jumps.append([labels[t] for t in _SYMBOL.findall(it.text) if t in labels]
                         if branch.search(it.text) else None)
            unconds.append(uncond.search(it.text) is not None)
        else:
            jumps.append([t for n in it.text for t in hw.get(n, [])] if it.kind == "close" else None)
            unconds.append(False)
    return _Flow(kinds, jumps, unconds)


def _is_cycle(flow: _Flow, head: int, back: int) -> bool:
    """True if item `back` (a branch, or an `:endloop` packet end) is reachable from label `head`
    without leaving [head, back]. An `:endloopN` packet may branch to any label a `loopN` set up (an
    over-approximation: `_flow`).

    A backward branch is not always a loop: a cold block laid out late may jump back to a join point.
    """
    kind, jumps, uncond = flow.kind, flow.jumps, flow.uncond
    seen: set[int] = set()
    work = [head]
    while work:
        i = work.pop()
        falls, in_packet = True, False
        while head <= i <= back and i not in seen:
            if i == back:
                return True
            seen.add(i)
            k = kind[i]
            if k == "open":
                in_packet = True
            elif k == "close":
                in_packet = False
                work += jumps[i]  # type: ignore[arg-type]
                if not falls:
                    break
            elif k == "inst":
                j = jumps[i]
                if j is not None:
                    work += j
                if uncond[i]:
                    falls = False
                    if not in_packet:  # Hexagon: the rest of the packet still executes
                        break
            i += 1
    return False


def find_loops(
    asm_text: str, function: str | None = None, *, target: Target | str | None = None
) -> list[Loop]:
    """All loops of `asm_text` (or of `function`), in order of their header label.

    A loop is a label with a later branch back to it that the label can reach (so a cold block jumping
    back to a join point is not a loop), or a Hexagon hardware loop `loopN(label, ..)`
    whose body runs from `label` to the first packet closed with `:endloopN`. Two back edges to the same
    label form one loop. `innermost` is set for loops that contain no other loop.
    """
    syntax = _detect_syntax(asm_text, target)
    items = _items(function_region(asm_text, function), syntax)
    labels = {it.text: i for i, it in enumerate(items) if it.kind == "label"}
    spans: dict[str, tuple[int, bool]] = {}  # header label -> (end index, hardware loop)

    def add(label: str, end: int, hw: bool) -> None:
        old = spans.get(label)
        if old is None or end > old[0]:
            spans[label] = (end, hw or (old is not None and old[1]))

    hw: dict[str, list[int]] = {}  # hardware loop number -> header label indices
    # each instruction's `loopN(label, ..)` (hvx128), searched once
    loop_setups = {i: m for i, it in enumerate(items)
                   if syntax == "hvx128" and it.kind == "inst" and (m := _HW_LOOP.search(it.text))}
    for m in loop_setups.values():
        if m.group(2) in labels:
            hw.setdefault(m.group(1), []).append(labels[m.group(2)])
    flow = _flow(items, labels, hw, syntax)
    for i, it in enumerate(items):
        if it.kind != "inst":
            continue
        hwm = loop_setups.get(i)
        if hwm:
            # Usually the body runs from the label down to its `:endloopN` packet. (When LLVM lays the
            # end packet out above the header, the loop is found from the branch that closes it.)
            n, label = hwm.group(1), hwm.group(2)
            if label in labels:
                j = labels[label]
                while j < len(items) and not (items[j].kind == "close" and n in items[j].text):
                    j += 1
                if j < len(items) and _is_cycle(flow, labels[label], j):
                    add(label, j, True)
            continue
        if flow.jumps[i] is None:  # not a branch
            continue
        for tok in _SYMBOL.findall(it.text):
            if tok in labels and labels[tok] < i and _is_cycle(flow, labels[tok], i):
                end = i
                if syntax == "hvx128":  # extend to the end of the packet holding the branch
                    while end < len(items) and items[end].kind != "close":
                        end += 1
                add(tok, min(end, len(items) - 1), False)
    ranges = sorted((labels[lab], end, lab, is_hw) for lab, (end, is_hw) in spans.items())
    loops = []
    for start, end, lab, is_hw in ranges:
        inner = not any(s >= start and e <= end and (s, e) != (start, end) for s, e, _, _ in ranges)
        body = items[start : end + 1]
        loops.append(
            Loop(
                lab,
                tuple(it.text for it in body if it.kind == "inst"),
                _packets(body) if syntax == "hvx128" else (),
                is_hw,
                inner,
                start,
                end,
            )
        )
    return loops


def _packets(body: list[_Item]) -> tuple[tuple[str, ...], ...]:
    packets: list[tuple[str, ...]] = []
    cur: list[str] | None = None
    for it in body:
        if it.kind == "open":
            cur = []
        elif it.kind == "close":
            if cur is not None:
                packets.append(tuple(cur))
            cur = None
        elif it.kind == "inst":
            if cur is None:
                packets.append((it.text,))  # an instruction printed outside braces is its own packet
            else:
                cur.append(it.text)
    return tuple(packets)


def inner_loop(asm_text: str, function: str | None = None, *, target: Target | str | None = None) -> Loop:
    """The innermost loop with the most instructions (the main, usually unrolled, body rather than a
    remainder loop). Raises `ValueError` if the code has no loop."""
    loops = [lp for lp in find_loops(asm_text, function, target=target) if lp.innermost]
    if not loops:
        raise ValueError(f"no loop found in {function or 'the assembly'}")
    return max(loops, key=lambda lp: (len(lp.instructions), -lp.start))


def inner_loop_instructions(
    asm_text: str, function: str | None = None, *, target: Target | str | None = None
) -> list[str]:
    """Instructions of `inner_loop(asm_text, function)`, label to back-branch (or `:endloop`) inclusive."""
    return list(inner_loop(asm_text, function, target=target).instructions)


_VECTOR_STORE = {
    # x86 AT&T: a vector register moved to memory
    # (not to the stack (%rsp-based): spills and lane-by-lane gathers through a stack slot are not output stores)
    "x86-avx2": re.compile(r"^vmov(dq[au]|up[sd]|ap[sd])\s+%[xy]mm\d+,\s*\S*\((?!%rsp)"),
    "arm64": re.compile(r"^(st1|st2|st3|st4|stp\s+q|str\s+q|stur\s+q)"),
    "hvx128": re.compile(r"vmemu?\([^)]*\)\s*=\s*v"),
}


_LANE_OPS = {"x86-avx2": re.compile(r"^(vpextr|vpinsr|v?pgather|vgather)")}


def main_vector_loop(asm_text: str, function: str | None = None, *, target: Target | str) -> Loop:
    """The steady-state vector loop: the innermost loop that stores whole vectors most often.

    Halide splits a vectorized loop into a prologue, a steady state and an epilogue; the border parts
    gather lane by lane (our border gathers are small scalar loops that store no vector), so the
    innermost loops that store vectors are the steady-state bodies. Halide's own border code gathers
    inline (lane extracts/inserts in a loop that also stores vectors), as do our x86 gathers of up to
    32 lanes (codegen_memory.short_gather), so on x86 the loops with the fewest lane-by-lane
    instructions are preferred first. Ties go to the longest body.
    """
    name = syntax_of(target)
    store = _VECTOR_STORE[name]
    lane = _LANE_OPS.get(name)
    loops = [lp for lp in find_loops(asm_text, function, target=name) if lp.innermost]
    scored = [(-sum(1 for i in lp.instructions if lane is not None and lane.search(i)),
               sum(1 for i in lp.instructions if store.search(i)), len(lp.instructions), lp) for lp in loops]
    scored = [s for s in scored if s[1] > 0]
    if not scored:
        raise ValueError("no innermost loop stores a vector")
    return max(scored, key=lambda s: s[:3])[3]

"""HVX shuffles whose 32-bit words repeat, split so that LLVM 22 builds them right.

LLVM 22's Hexagon backend lowers a shuffle it cannot match to an HVX permute as a BUILD_VECTOR of the
extracted lanes, and `buildHvxVectorReg` packs 8- and 16-bit lanes into 32-bit words and starts from a
splat of the most frequent word. It makes that splat in the vector's own element type, so a byte or
halfword splat of the word's low part: every lane of a word that occurs twice or more came out wrong
(a u16 gather `a[x + 5*y]` vectorized over x (8) and y (3) ran wrong in lanes 4, 5, 18 and 19 of every
24 under qemu-hexagon, with isel=pitchfork and isel=llvm alike; llvm-project PR 204808 fixes the
splat after LLVM 22). 32-bit lanes that repeat ran wrong too (a u32 `a[x + 4*y]` over x (32) and y (2):
a <36 x i32> load shuffled to 64 lanes, wrong in 1 lane of 16; that path was not traced in LLVM), and
the same split makes them right, so the rewrite takes 8-, 16- and 32-bit lanes (a 32-bit lane is its
own word).

The rewrite keeps the shuffle's value and gives the backend only build-vectors whose non-zero words
are all distinct: the shuffle is split into groups, the k-th occurrence of every repeated word going to
group k (words that occur once, partly undefined or all undefined stay in group 0); each group is the
original shuffle with its other lanes zero (`select` of a constant condition against zeroinitializer:
a word of zeros, whose splat is right at any width, is then the only word that repeats), padded with
zero lanes to whole 128-byte registers; the groups are combined with `llvm.hexagon.V6.vor.128B` per
register (an intrinsic, so the DAG combiner cannot fold the groups back into the one shuffle, as it
does `or` of complementary shuffles) and the original lanes sliced off the front.

It runs on the optimised text (after the optimisation pipeline, which would fold it back) and
changes nothing else: the module is returned as is when no such shuffle occurs. A splat (every
defined lane the same source lane) is left alone: it is lowered as a splat of the lane, not built.
Invariant: the rewritten module computes the same values lane for lane.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterator

from pitchfork.backend.hvx_fixups import each_function

_REGISTER_BYTES = 128
_LANE_BYTES = {"i8": 1, "i16": 2, "half": 2, "bfloat": 2, "i32": 4, "float": 4}
_VOR = "llvm.hexagon.V6.vor.128B"
_UNDEFINED = ("poison", "undef")
# Everything from ` = shufflevector` on: what has_repeated_word_shuffle searches (a pattern that starts
# with fixed text is found by scanning for it; a line-anchored one is tried at every character).
_CORE = (r" = shufflevector <(?P<n>\d+) x (?P<t>i8|i16|half|bfloat|i32|float)> "
         r"(?P<a>%[\w.$-]+|zeroinitializer|poison|undef|<[^<>]*>), <(?P=n) x (?P=t)> "
         r"(?P<b>%[\w.$-]+|zeroinitializer|poison|undef|<[^<>]*>), <(?P<m>\d+) x i32> (?P<mask><[^<>]*>)")
_SHUFFLE_CORE = re.compile(_CORE)
_SHUFFLE = re.compile(r"^(?P<ind>\s*)(?P<dst>%[\w.$-]+)" + _CORE + r"\s*$", re.M)


def _elements(vector: str) -> list[str]:
    """The elements of a vector constant (`<i32 0, i32 poison, ...>`), each its value's text."""
    return [item.split()[-1] for item in vector.strip("<> ").split(",")]


def _effective_mask(m: re.Match[str]) -> list[int | None] | None:
    """The shuffle's mask with every lane that reads an undefined value as None: an undefined mask lane,
    a lane of a `poison` / `undef` operand, or an undef / poison element of a constant vector operand
    (the emitters pad a splat that way; such lanes repeat without being built). None, before any
    parsing, when no defined mask lane repeats (most shuffles: slices, concatenations, interleaves),
    as then no word can."""
    # the mask's defined elements as written, spaces dropped ("i325"): compared as text, not parsed
    items = [v for v in m["mask"][1:-1].replace(" ", "").split(",") if not v.endswith(_UNDEFINED)]
    if len(set(items)) == len(items):
        return None
    n = int(m["n"])
    undefined: set[int] = set()
    for k, operand in enumerate((m["a"], m["b"])):
        if operand in _UNDEFINED:
            undefined.update(range(k * n, (k + 1) * n))
        elif operand.startswith("<"):
            undefined.update(k * n + i for i, v in enumerate(_elements(operand)) if v in _UNDEFINED)
    lanes = [None if v in _UNDEFINED else int(v) for v in _elements(m["mask"])]
    return [None if v is None or v in undefined else v for v in lanes]


def _groups(mask: list[int | None] | None, per_word: int) -> list[int] | None:
    """Each lane's group (see the module docstring), or None when no defined word repeats or the
    shuffle is a splat."""
    if mask is None:
        return None
    defined = {v for v in mask if v is not None}
    if len(defined) <= 1:
        return None
    seen: dict[tuple[int, ...], int] = {}
    groups = [0] * len(mask)
    repeated = False
    for start in range(0, len(mask), per_word):
        word = tuple(mask[start:start + per_word])
        if None in word or len(word) < per_word:
            continue
        k = seen.get(word, 0)
        seen[word] = k + 1
        repeated |= k > 0
        groups[start:start + per_word] = [k] * per_word
    return groups if repeated else None


def has_repeated_word_shuffle(ir_text: str) -> bool:
    """Whether the module holds a shuffle that `rewrite_repeated_word_shuffles` rewrites."""
    for m in _SHUFFLE_CORE.finditer(ir_text):
        if _groups(_effective_mask(m), 4 // _LANE_BYTES[m["t"]]) is not None:
            return True
    return False


def rewrite_repeated_word_shuffles(ir_text: str) -> str:
    """`ir_text` with every 8/16/32-bit shuffle whose 32-bit words repeat computed as the module
    docstring says; the `llvm.hexagon.V6.vor.128B` declaration added where it is missing."""
    counter = itertools.count()
    inserts: set[int] = set()
    text = each_function(ir_text, lambda f: _SHUFFLE.sub(lambda m: _expand(m, counter, inserts), f))
    if text == ir_text:
        return text
    declared = {ln.split("@", 1)[1].split("(", 1)[0] for ln in text.split("\n") if ln.startswith("declare ")}
    if _VOR not in declared:
        text += f"\ndeclare <32 x i32> @{_VOR}(<32 x i32>, <32 x i32>)\n"
    for words in sorted(inserts):
        name = f"llvm.vector.insert.v{words}i32.v32i32"
        if name not in declared:
            text += f"declare <{words} x i32> @{name}(<{words} x i32>, <32 x i32>, i64 immarg)\n"
    return text


def _vec(values: Iterator[str] | list[str], ty: str) -> str:
    return "<" + ", ".join(f"{ty} {v}" for v in values) + ">"


def _expand(m: re.Match[str], counter: Iterator[int], inserts: set[int]) -> str:
    t, n_lanes = m["t"], int(m["m"])
    lane_bytes = _LANE_BYTES[t]
    mask = _effective_mask(m)
    groups = _groups(mask, 4 // lane_bytes)
    if mask is None or groups is None:
        return m.group(0)
    ind, dst, n = m["ind"], m["dst"], int(m["n"])
    per_register = _REGISTER_BYTES // lane_bytes
    padded = -(-n_lanes // per_register) * per_register
    registers = padded // per_register
    words = padded * lane_bytes // 4
    tag = f"{dst[1:]}.rw{next(counter)}"
    src = f"<{n} x {t}> {m['a']}, <{n} x {t}> {m['b']}"
    lines: list[str] = []
    parts: list[list[str]] = []  # per group, its registers as <32 x i32> values
    for g in range(max(groups) + 1):
        keep = [i < n_lanes and mask[i] is not None and groups[i] == g for i in range(padded)]
        lanes = [str(mask[i]) if keep[i] else "poison" for i in range(padded)]
        shuf, sel, cast = f"%{tag}.s{g}", f"%{tag}.z{g}", f"%{tag}.w{g}"
        lines.append(f"{ind}{shuf} = shufflevector {src}, <{padded} x i32> {_vec(lanes, 'i32')}")
        cond = _vec(["true" if k else "false" for k in keep], "i1")
        lines.append(f"{ind}{sel} = select <{padded} x i1> {cond}, <{padded} x {t}> {shuf}, "
                     f"<{padded} x {t}> zeroinitializer")
        lines.append(f"{ind}{cast} = bitcast <{padded} x {t}> {sel} to <{words} x i32>")
        regs = []
        for r in range(registers):
            if registers == 1:
                regs.append(cast)
                continue
            reg = f"%{tag}.w{g}.r{r}"
            idx = [str(32 * r + i) for i in range(32)]
            lines.append(f"{ind}{reg} = shufflevector <{words} x i32> {cast}, <{words} x i32> poison, "
                         f"<32 x i32> {_vec(idx, 'i32')}")
            regs.append(reg)
        parts.append(regs)
    combined = []
    for r in range(registers):
        acc = parts[0][r]
        for g in range(1, len(parts)):
            nxt = f"%{tag}.or{g}.r{r}"
            lines.append(f"{ind}{nxt} = call <32 x i32> @{_VOR}(<32 x i32> {acc}, <32 x i32> {parts[g][r]})")
            acc = nxt
        combined.append(acc)
    whole = combined[0]
    if registers > 1:  # the registers back in one value (each inserted into the one before)
        inserts.add(words)
        whole = "poison"
        for r, reg in enumerate(combined):
            nxt = f"%{tag}.cat{r}"
            lines.append(f"{ind}{nxt} = call <{words} x i32> @llvm.vector.insert.v{words}i32.v32i32("
                         f"<{words} x i32> {whole}, <32 x i32> {reg}, i64 {32 * r})")
            whole = nxt
    full = f"%{tag}.full"
    lines.append(f"{ind}{full} = bitcast <{words} x i32> {whole} to <{padded} x {t}>")
    lines.append(f"{ind}{dst} = shufflevector <{padded} x {t}> {full}, <{padded} x {t}> poison, "
                 f"<{n_lanes} x i32> {_vec([str(k) for k in range(n_lanes)], 'i32')}")
    return "\n".join(lines)


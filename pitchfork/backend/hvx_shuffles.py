"""HVX shuffles and insertelement chains whose 32-bit words repeat, split so that LLVM 22 builds them right.

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

Insertelement chains reach the same build without any shuffle: a vector built lane by lane whose
lanes repeat in the same order (hvx128's float code computes lane by lane, pitchfork/codegen/hvx_floats.py:
`u16(f32(a[x + 3*y]) * 0.5)` vectorized over y (4) and x (8) inserted the same two converted values at
lanes 2-3 and 24-25, InstCombine having folded the extracts of the 2-D load's shuffle into extracts of
the load: 32 of 512 lanes wrong under qemu-hexagon, both isels; i16 chains of 32, 48, 64 or 128 lanes
and i8 chains of 64 or 128 lanes from scalar arguments ran wrong alike, i32 and 16-lane chains right).
A chain's end (an insertelement used otherwise than by the next insert) whose words repeat is split the
same way: its lanes (inserted, or the lanes of the vector it started from) go to groups as above, each
group an insertelement chain into zeroinitializer, combined with vor. Chains of i1 lanes reach the same
build through predicates (`buildHvxVectorPred` makes a vector of bytes, 2 per lane of a <64 x i1>, 4 per
lane of a <128 x i1>): such chains of 40, 48, 64, 96 or 128 lanes from scalar compares ran wrong
(hvx_floats builds one for a float compare of fewer than 64 lanes feeding integer code); a chain of
i1 is built zero-extended to i16 / i8 lanes, split as above, and compared with zero.

A splat of a 64-bit lane (codegen's `_repeat` splats a group of four halfwords as one i64) reached it
too: legalised as a BUILD_VECTOR of the lane's two words and bitcast to halfwords, its repeated words
were built with the halfword splat (`i8(i16(a[y]) >> 1)` over y (4) and x (32): the second lane of every
group wrong, 192 of 768 lanes, both isels). Such a splat is made of two word splats (`vsplat`, an
intrinsic the combiner does not see through) interleaved.

It runs on the optimised text (after the optimisation pipeline, which would fold it back) and
changes nothing else: the module is returned as is when no such shuffle occurs. A splat (every
defined lane the same source lane) is left alone: it is lowered as a splat of the lane, not built.
Invariant: the rewritten module computes the same values lane for lane.
"""

from __future__ import annotations

import itertools
import re
from collections import Counter
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
    """Whether the module holds a shuffle, a splat of 64-bit lanes or an insertelement chain that
    `rewrite_repeated_word_shuffles` rewrites."""
    if any(_splat64_lane(m) is not None for m in _SPLAT64.finditer(ir_text)):
        return True
    for m in _SHUFFLE_CORE.finditer(ir_text):
        if _groups(_effective_mask(m), 4 // _LANE_BYTES[m["t"]]) is not None:
            return True
    if _INSERT_CORE.search(ir_text) is None:
        return False
    found = False

    def probe(f: str) -> str:
        nonlocal found
        found = found or any(groups is not None for _, _, groups in _chains(f))
        return f
    each_function(ir_text, probe)
    return found


def rewrite_repeated_word_shuffles(ir_text: str) -> str:
    """`ir_text` with every 8/16/32-bit shuffle whose 32-bit words repeat computed as the module
    docstring says; the `llvm.hexagon.V6.vor.128B` declaration added where it is missing."""
    counter = itertools.count()
    inserts: set[int] = set()
    def one(f: str) -> str:
        f = _SPLAT64.sub(lambda m: _expand_splat64(m, counter), f)
        return _rewrite_chains(_SHUFFLE.sub(lambda m: _expand(m, counter, inserts), f), counter, inserts)
    text = each_function(ir_text, one)
    if text == ir_text:
        return text
    declared = {ln.split("@", 1)[1].split("(", 1)[0] for ln in text.split("\n") if ln.startswith("declare ")}
    if _VOR not in declared and f"@{_VOR}(" in text:
        text += f"\ndeclare <32 x i32> @{_VOR}(<32 x i32>, <32 x i32>)\n"
    if _SPLATW not in declared and f"@{_SPLATW}(" in text:
        text += f"\ndeclare <32 x i32> @{_SPLATW}(i32)\n"
    for words in sorted(inserts):
        name = f"llvm.vector.insert.v{words}i32.v32i32"
        if name not in declared:
            text += f"declare <{words} x i32> @{name}(<{words} x i32>, <32 x i32>, i64 immarg)\n"
    return text


_SPLATW = "llvm.hexagon.V6.lvsplatw.128B"
_SPLAT64 = re.compile(r"^(?P<ind>\s*)(?P<dst>%[\w.$-]+) = shufflevector <(?P<n>\d+) x i64> (?P<a>%[\w.$-]+|poison|undef), "
                      r"<(?P=n) x i64> (?P<b>%[\w.$-]+|poison|undef), <(?P<m>\d+) x i32> "
                      r"(?P<mask>zeroinitializer|<[^<>]*>)\s*$", re.M)


def _splat64_lane(m: re.Match[str]) -> int | None:
    """The source lane of a splat of 64-bit lanes to 2 or more lanes (every defined mask lane the same),
    else None."""
    if int(m["m"]) < 2:
        return None
    if m["mask"] == "zeroinitializer":
        return 0
    lanes = {v for v in _elements(m["mask"]) if v not in _UNDEFINED}
    return int(lanes.pop()) if len(lanes) == 1 else None


def _expand_splat64(m: re.Match[str], counter: Iterator[int]) -> str:
    """A splat of a 64-bit lane as two word splats (`vsplat`) interleaved: LLVM 22 built the <N x i64>
    splat as a BUILD_VECTOR of its 32-bit halves, which a bitcast to 8/16-bit lanes made one with
    repeated words (codegen's `_repeat` splats a 4 x i16 group as an i64: `i8(i16(a[y]) >> 1)` over y
    (4) and x (32) ran wrong in the second lane of every group, 192 of 768 lanes)."""
    lane = _splat64_lane(m)
    if lane is None:
        return m.group(0)
    ind, dst, n, lanes = m["ind"], m["dst"], int(m["n"]), int(m["m"])
    src, k = (m["a"], lane) if lane < n else (m["b"], lane - n)
    if src in _UNDEFINED:
        return m.group(0)
    t = f"%{dst[1:]}.sp{next(counter)}"
    lines = [f"{ind}{t}.e = extractelement <{n} x i64> {src}, i32 {k}",
             f"{ind}{t}.lo = trunc i64 {t}.e to i32",
             f"{ind}{t}.sh = lshr i64 {t}.e, 32",
             f"{ind}{t}.hi = trunc i64 {t}.sh to i32",
             f"{ind}{t}.vlo = call <32 x i32> @{_SPLATW}(i32 {t}.lo)",
             f"{ind}{t}.vhi = call <32 x i32> @{_SPLATW}(i32 {t}.hi)",
             f"{ind}{t}.w64 = shufflevector <32 x i32> {t}.vlo, <32 x i32> {t}.vhi, <64 x i32> "
             + _vec([str(i // 2 + 32 * (i % 2)) for i in range(64)], "i32")]
    words, whole = 64, f"{t}.w64"
    while words < 2 * lanes:  # more than 32 lanes: the pair of registers concatenated with itself
        nxt = f"{t}.w{2 * words}"
        lines.append(f"{ind}{nxt} = shufflevector <{words} x i32> {whole}, <{words} x i32> {whole}, "
                     f"<{2 * words} x i32> " + _vec([str(i) for i in range(2 * words)], "i32"))
        words, whole = 2 * words, nxt
    if words != 2 * lanes:
        lines.append(f"{ind}{t}.w = shufflevector <{words} x i32> {whole}, <{words} x i32> poison, "
                     f"<{2 * lanes} x i32> " + _vec([str(i) for i in range(2 * lanes)], "i32"))
        whole = f"{t}.w"
    lines.append(f"{ind}{dst} = bitcast <{2 * lanes} x i32> {whole} to <{lanes} x i64>")
    return "\n".join(lines)


_INSERT_CORE = re.compile(r" = insertelement <\d+ x (?:i8|i16|half|bfloat|i1)> ")
_INSERT = re.compile(r"^(?P<ind>\s*)(?P<dst>%[\w.$-]+) = insertelement <(?P<n>\d+) x (?P<t>i8|i16|half|bfloat|i1)> "
                     r"(?P<base>%[\w.$-]+|zeroinitializer|poison|undef|<[^<>]*>), (?P=t) (?P<val>[^,]+), "
                     r"i(?:32|64) (?P<idx>\d+)\s*$", re.M)
_NAME = re.compile(r"%[\w.$-]+")
_ZERO = {"i8": "0", "i16": "0", "half": "0xH0000", "bfloat": "0xR0000", "i1": "false"}


def _per_word(t: str, n: int) -> int:
    """Lanes per 32-bit word of the register a <n x t> vector is built in. An i1 vector is a predicate,
    built as a vector of bytes (`buildHvxVectorPred`): 128 / L bytes per lane, L the legal predicate
    length (32, 64 or 128) it widens to."""
    if t != "i1":
        return 4 // _LANE_BYTES[t]
    return 1 if n <= 32 else 2 if n <= 64 else 4


def _chains(text: str) -> list[tuple[re.Match[str], list[str | None], list[int] | None]]:
    """The insertelement chains of one function's text: for each chain end (an insertelement whose
    result is used otherwise than as the vector operand of another insertelement), its match, each lane's
    value as text (None: undefined; `%v[k]`: lane k of a vector `%v` the chain started from) and each
    lane's group (`_chain_groups`)."""
    defs = {m["dst"]: m for m in _INSERT.finditer(text)}
    # one insert into an undefined or zero vector (a splat's first step, the common case) repeats nothing
    if not any(m["base"] in defs or m["base"].startswith(("<", "%")) for m in defs.values()):
        return []
    uses = Counter(_NAME.findall(text))
    as_base = Counter(m["base"] for m in defs.values())
    out = []
    for dst, m in defs.items():
        if uses[dst] - 1 <= as_base[dst]:
            continue  # only ever extended by further inserts: built when its chain's end is
        n = int(m["n"])
        lanes: dict[int, str] = {}
        cur = dst
        while cur in defs:
            link = defs[cur]
            if int(link["n"]) != n or link["t"] != m["t"]:
                break
            lanes.setdefault(int(link["idx"]), link["val"].strip())
            cur = link["base"]
        if cur in defs or any(k >= n for k in lanes):
            continue
        base: list[str | None]
        if cur in _UNDEFINED:
            base = [None] * n
        elif cur == "zeroinitializer":
            base = [_ZERO[m["t"]]] * n
        elif cur.startswith("<"):
            base = [None if v in _UNDEFINED else v for v in _elements(cur)]
        else:
            base = [f"{cur}[{k}]" for k in range(n)]
        values = [lanes.get(k, base[k]) for k in range(n)]
        values = [None if v in _UNDEFINED else v for v in values]
        per_word = _per_word(m["t"], n)
        out.append((m, values, _chain_groups(values, per_word) if per_word > 1 else None))
    return out


def _chain_groups(values: list[str | None], per_word: int) -> list[int] | None:
    """Each lane's group, as `_groups` for shuffles: the k-th occurrence of a repeated word in group k.
    A word whose lanes are one defined value repeats harmlessly (its splat at the lane width is right);
    any other word that occurs twice (constants and partly undefined words too) is split. None when no
    word needs it."""
    seen: dict[tuple[str | None, ...], int] = {}
    groups = [0] * len(values)
    repeated = False
    for start in range(0, len(values), per_word):
        word = tuple(values[start:start + per_word])
        if all(v is None for v in word) or (None not in word and len(set(word)) == 1):
            continue
        k = seen.get(word, 0)
        seen[word] = k + 1
        repeated |= k > 0
        groups[start:start + per_word] = [k] * len(word)
    return groups if repeated else None


def _rewrite_chains(text: str, counter: Iterator[int], inserts: set[int]) -> str:
    """One function's text with every chain end whose words repeat computed from groups (see the
    module docstring): each group an insertelement chain into zeroinitializer, combined with vor."""
    if _INSERT_CORE.search(text) is None:
        return text
    todo = {m["dst"]: (m, values, groups) for m, values, groups in _chains(text) if groups is not None}
    if not todo:
        return text

    def expand(line: re.Match[str]) -> str:
        if line["dst"] not in todo:
            return line.group(0)
        m, values, groups = todo[line["dst"]]
        t, n, ind, dst = m["t"], int(m["n"]), m["ind"], m["dst"]
        tag = f"{dst[1:]}.rw{next(counter)}"
        lines: list[str] = []
        pred = ""
        if t == "i1":  # a predicate: its lanes as bytes / halfwords (as the backend builds it), compared
            pred, dst, t = dst, f"%{tag}.wide", "i16" if _per_word("i1", n) == 2 else "i8"
            wide = {}
            for v in dict.fromkeys(v for v in values if v is not None and not v.endswith("]")):
                wide[v] = f"%{tag}.b{len(wide)}"
                lines.append(f"{ind}{wide[v]} = zext i1 {v} to {t}")
            for k, v in enumerate(values):
                if v is not None and v.endswith("]"):
                    vec, lane = v[:-1].split("[")
                    lines.append(f"{ind}%{tag}.p{k} = extractelement <{n} x i1> {vec}, i32 {lane}")
                    lines.append(f"{ind}%{tag}.q{k} = zext i1 %{tag}.p{k} to {t}")
                    wide[v] = f"%{tag}.q{k}"
            values = [None if v is None else wide[v] for v in values]
        per_register = _REGISTER_BYTES // _LANE_BYTES[t]
        padded = -(-n // per_register) * per_register
        parts = []
        for g in range(max(groups) + 1):
            acc = "zeroinitializer"
            for k, v in enumerate(values):
                if v is None or groups[k] != g:
                    continue
                if v.endswith("]"):  # a lane of the vector the chain started from
                    vec, lane = v[:-1].split("[")
                    lines.append(f"{ind}%{tag}.x{g}.{k} = extractelement <{n} x {t}> {vec}, i32 {lane}")
                    v = f"%{tag}.x{g}.{k}"
                lines.append(f"{ind}%{tag}.i{g}.{k} = insertelement <{padded} x {t}> {acc}, {t} {v}, i32 {k}")
                acc = f"%{tag}.i{g}.{k}"
            parts.append(_registers(lines, ind, f"%{tag}.w{g}", acc, t, padded))
        _combine(lines, ind, tag, parts, t, padded, n, dst, inserts)
        if pred:
            lines.append(f"{ind}{pred} = icmp ne <{n} x {t}> {dst}, zeroinitializer")
        return "\n".join(lines)
    return _INSERT.sub(expand, text)


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
        parts.append(_registers(lines, ind, cast, sel, t, padded))
    _combine(lines, ind, tag, parts, t, padded, n_lanes, dst, inserts)
    return "\n".join(lines)


def _registers(lines: list[str], ind: str, cast: str, value: str, t: str, padded: int) -> list[str]:
    """Append `cast` = `value` (<padded x t>) as <words x i32> to `lines`, and its 128-byte registers
    (<32 x i32> each) sliced out of it when there are several; their names."""
    words = padded * _LANE_BYTES[t] // 4
    lines.append(f"{ind}{cast} = bitcast <{padded} x {t}> {value} to <{words} x i32>")
    if words == 32:
        return [cast]
    regs = []
    for r in range(words // 32):
        regs.append(f"{cast}.r{r}")
        lines.append(f"{ind}{regs[-1]} = shufflevector <{words} x i32> {cast}, <{words} x i32> poison, "
                     f"<32 x i32> {_vec([str(32 * r + i) for i in range(32)], 'i32')}")
    return regs


def _combine(lines: list[str], ind: str, tag: str, parts: list[list[str]], t: str, padded: int, n_lanes: int,
             dst: str, inserts: set[int]) -> None:
    """Append to `lines` the vor of the groups' registers (`parts[g]`: group g's <32 x i32> registers),
    the registers back in one <padded x t> value and `dst` = its first `n_lanes` lanes."""
    registers = len(parts[0])
    words = 32 * registers
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

"""Cross-check fpir's semantics against Halide 21 itself, for every op Halide exposes.

Every instance of a Halide-exposed op over u8/i8 operands (all 65536 operand pairs; shift amounts of
either sign; mixed-sign widening_mul; select with a u1 condition), casts / reinterprets / saturating casts
from u8, i8, u16, i16 (every source value) to every integer type, extending_* with a 16-bit accumulator, and
mul_shr / rounding_mul_shr for every u8/i8 pair and shift amounts 0..17 plus a few large ones, is realized
by a JIT-compiled Halide pipeline on numpy inputs and compared lane by lane with fpir.interp.

Known differences are listed in HALIDE_REJECTS (Halide refuses the types) and HALIDE_DIFFERS (Halide
computes something else); both sets are asserted exactly, so a new difference fails loudly.
saturating_shl is not a Halide op (it is an ARM codegen pattern), so it is checked through its definition
saturating_cast<T>(widening_shift_left(x, y)).
"""

from __future__ import annotations

from typing import Any, Callable, Optional

import numpy as np
import pytest

hl = pytest.importorskip("halide")

from fpir.interp import evaluate  # noqa: E402
from fpir.types import ScalarType, i8, i16, u1, u8, u16  # noqa: E402
from fpir_testlib import ARG_NAMES, Instance, instances, mul_shr_8bit, semantic_ops  # noqa: E402

N = 65536
A8 = np.repeat(np.arange(256, dtype=np.uint8), 256)
B8 = np.tile(np.arange(256, dtype=np.uint8), 256)
W16 = (A8.astype(np.uint16) << 8) | B8  # every 16-bit pattern
C8 = ((A8.astype(np.int64) * 37 + B8.astype(np.int64) * 101 + 11) & 255).astype(np.uint8)
K1 = ((A8 ^ B8) & 1).astype(np.uint8)

E = Callable[..., Any]
HALIDE: dict[str, Callable[[list[Any], Any], Any]] = {
    "add": lambda a, t: a[0] + a[1], "sub": lambda a, t: a[0] - a[1], "mul": lambda a, t: a[0] * a[1],
    "div": lambda a, t: a[0] / a[1], "mod": lambda a, t: a[0] % a[1],
    "min": lambda a, t: hl.min(a[0], a[1]), "max": lambda a, t: hl.max(a[0], a[1]),
    "eq": lambda a, t: a[0] == a[1], "ne": lambda a, t: a[0] != a[1], "lt": lambda a, t: a[0] < a[1],
    "le": lambda a, t: a[0] <= a[1], "gt": lambda a, t: a[0] > a[1], "ge": lambda a, t: a[0] >= a[1],
    "select": lambda a, t: hl.select(a[0], a[1], a[2]),
    "and": lambda a, t: a[0] & a[1], "or": lambda a, t: a[0] | a[1], "xor": lambda a, t: a[0] ^ a[1],
    "not": lambda a, t: ~a[0], "shl": lambda a, t: a[0] << a[1], "shr": lambda a, t: a[0] >> a[1],
    "abs": lambda a, t: hl.abs(a[0]),
    "cast": lambda a, t: hl.cast(t, a[0]), "reinterpret": lambda a, t: hl.reinterpret(t, a[0]),
    "widening_add": lambda a, t: hl.widening_add(a[0], a[1]),
    "widening_sub": lambda a, t: hl.widening_sub(a[0], a[1]),
    "widening_mul": lambda a, t: hl.widening_mul(a[0], a[1]),
    "extending_add": lambda a, t: hl.widen_right_add(a[0], a[1]),
    "extending_sub": lambda a, t: hl.widen_right_sub(a[0], a[1]),
    "extending_mul": lambda a, t: hl.widen_right_mul(a[0], a[1]),
    "widening_shl": lambda a, t: hl.widening_shift_left(a[0], a[1]),
    "widening_shr": lambda a, t: hl.widening_shift_right(a[0], a[1]),
    "absd": lambda a, t: hl.absd(a[0], a[1]),
    "saturating_cast": lambda a, t: hl.saturating_cast(t, a[0]),
    "saturating_add": lambda a, t: hl.saturating_add(a[0], a[1]),
    "saturating_sub": lambda a, t: hl.saturating_sub(a[0], a[1]),
    "halving_add": lambda a, t: hl.halving_add(a[0], a[1]),
    "halving_sub": lambda a, t: hl.halving_sub(a[0], a[1]),
    "rounding_halving_add": lambda a, t: hl.rounding_halving_add(a[0], a[1]),
    "rounding_shl": lambda a, t: hl.rounding_shift_left(a[0], a[1]),
    "rounding_shr": lambda a, t: hl.rounding_shift_right(a[0], a[1]),
    "mul_shr": lambda a, t: hl.mul_shift_right(a[0], a[1], a[2]),
    "rounding_mul_shr": lambda a, t: hl.rounding_mul_shift_right(a[0], a[1], a[2]),
    # not a Halide op: its definition in Halide's own terms
    "saturating_shl": lambda a, t: hl.saturating_cast(a[0].type(), hl.widening_shift_left(a[0], a[1])),
}

# Halide refuses these operand types (user_assert at construction); fpir accepts them on purpose:
# extending_* extends the narrow operand with its own signedness, as the paper's `x + widen(y)` reads.
HALIDE_REJECTS = {f"extending_{op}({w},{n})" for op in ("add", "sub", "mul")
                  for w, n in (("u16", "i8"), ("i16", "u8"))}
# Instances where Halide 21 computes something else than fpir's documented semantics: Halide's cast to
# bool keeps the low bit (cast<bool>(u8 2) is false, also when constant-folded), fpir's cast<u1> tests != 0.
HALIDE_DIFFERS = {f"cast<u1>({t})" for t in ("u8", "i8", "u16", "i16")}

# Shift amounts Halide leaves undefined (the x86 JIT takes them modulo 32, e.g. u8 1 << 32 = 1): fpir
# defines them (0, or -1 for a negative value shifted right). Lanes outside these windows are not compared.
SHIFT_OPS = ("shl", "shr", "rounding_shl", "rounding_shr", "widening_shl", "widening_shr", "saturating_shl")


def halide_defined(op: str, bits: int, amount: np.ndarray) -> np.ndarray:
    """Lanes whose shift amount Halide defines, for an op whose shifted operand has `bits` bits."""
    amount = amount.astype(np.int64)
    if op in ("widening_shl", "widening_shr"):
        return np.abs(amount) < 2 * bits
    if op == "saturating_shl":  # Halide form saturating_cast(widening_shift_left(x, y)): exact for y <= bits
        return (amount > -2 * bits) & (amount <= bits)
    if op in ("mul_shr", "rounding_mul_shr"):  # the shift applies to the 2*bits product
        return amount < 2 * bits
    return np.abs(amount) < bits


def hl_type(t: ScalarType) -> Any:
    return hl.Bool() if t.bits == 1 else (hl.Int(t.bits) if t.signed else hl.UInt(t.bits))


def _columns(inst: Instance) -> Optional[list[np.ndarray]]:
    """Raw bit-pattern columns for each operand, or None if the instance is not part of this check."""
    ts = inst.arg_types
    if inst.op in ("mul_shr", "rounding_mul_shr"):
        return None  # separate 2-D check
    if any(t.bits not in (1, 8, 16) for t in ts):
        return None
    if len(ts) == 1:
        return [W16 if ts[0].bits == 16 else A8] if ts[0].bits > 1 else None
    if inst.op.startswith("extending_"):
        return [W16, C8]
    if any(t.bits != 8 for t in ts[-2:]) or (len(ts) == 3 and ts[0] != u1):
        return None
    return ([K1] if len(ts) == 3 else []) + [A8, B8]


def _fpir_input(col: np.ndarray, t: ScalarType) -> np.ndarray:
    return col.astype(np.bool_) if t.bits == 1 else col.view(t.np_dtype)


def _halide_arg(buf: Any, x: Any, t: ScalarType) -> Any:
    e = buf[x]
    if t.bits == 1:
        return e != 0
    return e if hl_type(t) == e.type() else hl.reinterpret(hl_type(t), e)


CASES = [i for op in HALIDE for i in instances(op, (u1, u8, i8, u16, i16)) + (
    [i for i in instances(op) if i.explicit is not None and i.arg_types[0] in (u8, i8, u16, i16)]
    if op in ("cast", "reinterpret", "saturating_cast") else [])
    if _columns(i) is not None and (i.explicit is None or i.explicit.bits > 1 or op == "cast")]
CASES = list({i.id: i for i in CASES
              if not (i.explicit is not None and i.arg_types == (i.explicit,))}.values())


@pytest.fixture(scope="module")
def halide_results() -> dict[str, Any]:
    return run_halide_cases()


def run_halide_cases() -> dict[str, Any]:
    """Realize every case in one pipeline; map case id -> (halide output, fpir output) or 'rejected: why'."""
    keep: list[Any] = []  # numpy arrays must outlive the buffers that alias them
    bufs: dict[int, Any] = {}

    def buf(col: np.ndarray) -> Any:
        if id(col) not in bufs:
            keep.append(col)
            bufs[id(col)] = hl.Buffer(col)
        return bufs[id(col)]

    x = hl.Var("x")
    funcs, ids, results = [], [], {}
    for inst in CASES:
        cols = _columns(inst)
        assert cols is not None
        try:
            args = [_halide_arg(buf(c), x, t) for c, t in zip(cols, inst.arg_types)]
            e = HALIDE[inst.op](args, hl_type(inst.explicit) if inst.explicit is not None else None)
        except Exception as ex:  # Halide's user_assert surfaces as a RuntimeError/HalideError
            results[inst.id] = f"rejected: {str(ex).splitlines()[0]}"
            continue
        f = hl.Func(f"f{len(funcs)}")
        f[x] = e
        funcs.append(f)
        ids.append(inst)
    outs = hl.Pipeline(funcs).realize([N])
    for inst, out in zip(ids, outs):
        cols = _columns(inst)
        env = {n: _fpir_input(c, t) for n, c, t in zip(ARG_NAMES, cols, inst.arg_types)}
        results[inst.id] = (np.asarray(out).copy(), evaluate(inst.term(), env), cols)
    return results


@pytest.mark.parametrize("inst", CASES, ids=lambda i: i.id)
def test_halide_agrees(inst: Instance, halide_results: dict[str, Any]) -> None:
    r = halide_results[inst.id]
    if isinstance(r, str):
        assert inst.id in HALIDE_REJECTS, f"Halide {r}"
        return
    assert inst.id not in HALIDE_REJECTS, "Halide now accepts this instance: update HALIDE_REJECTS"
    got_hl, got_fpir, cols = r
    assert got_hl.dtype == inst.result.np_dtype, f"result type: Halide {got_hl.dtype}, fpir {inst.result}"
    differ = got_hl != got_fpir
    if inst.op in SHIFT_OPS:
        defined = halide_defined(inst.op, inst.arg_types[0].bits, _fpir_input(cols[1], inst.arg_types[1]))
        assert defined.sum() >= 256 * 8
        differ &= defined
    bad = np.flatnonzero(differ)
    if inst.id in HALIDE_DIFFERS:
        assert bad.size, "Halide now agrees: update HALIDE_DIFFERS"
        return
    if bad.size:
        k = int(bad[0])
        ins = ", ".join(f"{n}={_fpir_input(c, t)[k]}" for n, c, t in zip(ARG_NAMES, cols, inst.arg_types))
        pytest.fail(f"{inst.id}: {bad.size} lanes differ, first {ins}: "
                    f"Halide {got_hl[k]}, fpir {got_fpir[k]}")


def test_halide_checks_every_op() -> None:
    assert set(HALIDE) == set(semantic_ops())
    assert {i.op for i in CASES} | {"mul_shr", "rounding_mul_shr"} == set(HALIDE)


@pytest.mark.slow
@pytest.mark.parametrize("op", ["mul_shr", "rounding_mul_shr"])
@pytest.mark.parametrize("t", [u8, i8], ids=str)
def test_halide_mul_shr_8bit(op: str, t: ScalarType) -> None:
    """Every (a, b) pair of the type, shift amounts 0..17 and 31, 64, 127, 128, 200, 255."""
    a_np, b_np, q_np, want = mul_shr_8bit(op, t)  # cached: the arrays stay alive with the buffers
    x, y = hl.Var("x"), hl.Var("y")
    A, B, Q = hl.Buffer(a_np), hl.Buffer(b_np), hl.Buffer(q_np)
    f = hl.Func("f")
    f[x, y] = HALIDE[op]([A[x], B[x], Q[y]], None)
    got = np.asarray(f.realize([N, len(q_np)]))  # numpy order: [y][x]
    bad = np.argwhere((got != want) & halide_defined(op, t.bits, q_np)[:, None])
    if bad.size:
        qi, k = bad[0]
        pytest.fail(f"{op}({t}): {len(bad)} lanes differ, first a={a_np[k]} b={b_np[k]} q={q_np[qi]}: "
                    f"Halide {got[qi, k]}, fpir {want[qi, k]}")

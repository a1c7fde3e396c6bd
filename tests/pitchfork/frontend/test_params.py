"""Bad arguments to `pitchfork.compile` and to a compiled pipeline (issue 8, items 1, 2, 4, 6, 7, 8).

* scalar Param values: exactly what Halide 21's `Param.set` accepts (checked here against Halide
  itself), wrapped as Halide wraps them; the rest refused with the parameter's name;
* a Param the pipeline reads but that is missing from the argument list: refused at compile time;
* an argument list that is not a list, an unknown isel, a pipeline Halide refuses to lower (split by
  -4, gpu_tile), an extern stage: refused by name; a schedule with more than MAX_LANES lanes: a fallback
  to Halide naming them;
* i8 shifts by >= 8: Halide leaves them undefined; the compiled code gives FPIR's definition.
"""

from __future__ import annotations

import warnings

import halide as hl
import numpy as np
import pytest

import pitchfork
from fpir.interp import evaluate as fpir_eval  # noqa: F401 - imported to fail early if fpir moves
from pitchfork.errors import ParamTypeError, ParamValueError, PipelineError, UsageError
from pitchfork.api import PitchforkFallbackWarning
from pitchfork.codegen.base import Unsupported
from pitchfork.frontend.params import scalar_value

x = hl.Var("x")


_PROBES: dict[str, tuple[hl.Param, hl.Func]] = {}


def _halide_accepts(t: hl.Type, value: object) -> tuple[bool, int | None]:
    """(accepted, realized value) from Halide's own Param.set + realize (one JIT per type)."""
    if str(t) not in _PROBES:
        p = hl.Param(t, "k")
        f = hl.Func("probe")
        f[x] = hl.cast(hl.Int(64), p) + x * 0
        f.compile_jit()
        _PROBES[str(t)] = (p, f)
    p, f = _PROBES[str(t)]
    try:
        p.set(value)
    except (hl.HalideError, TypeError, UnicodeDecodeError):
        return False, None
    return True, int(np.asarray(f.realize([1]))[0])


HTYPES = {"int8": hl.Int(8), "uint8": hl.UInt(8), "int16": hl.Int(16), "uint16": hl.UInt(16),
          "int32": hl.Int(32), "uint32": hl.UInt(32), "bool": hl.Bool()}
#: Values on which Halide's binding is self-consistent (None, complex and numpy scalars of another
#: width hit bugs in its overload resolution; see pitchfork/frontend/params.py).
VALUES = [0, 1, -1, 127, 128, 255, 256, -128, -129, 32767, 32768, 65535, 65536, -32769, 100000, 2**31,
          2**32 - 1, 2**32, -2**31 - 1, True, False, 2.0, 2.7, -0.0, 1e20, float("nan"), float("inf"), "7"]


@pytest.mark.parametrize("tname", sorted(HTYPES))
def test_scalar_values_match_halide_acceptance(tname: str) -> None:
    t = HTYPES[tname]
    code, bits = ("uint", 1) if tname == "bool" else (tname.rstrip("0123456789"), int(tname.lstrip("uint")))
    lo, hi = (0, 1) if bits == 1 else (-(1 << (bits - 1)), (1 << bits) - 1)
    for v in VALUES:
        ok, realized = _halide_accepts(t, v)
        try:
            ours: int | None = scalar_value("k", code, bits, v)
        except (ParamValueError, ParamTypeError) as e:
            assert str(e).startswith("parameter k"), e
            ours = None
        if ours is not None:  # everything we accept, Halide accepts, with the same value
            assert ok and ours == realized, (tname, v, realized)
        elif ok:
            # The one documented difference: Halide's C round trip also lets through integers outside
            # both ranges of the width whose bits happen to round-trip (2**32 - 1 -> int16 -1).
            assert isinstance(v, int) and not lo <= v <= hi, (tname, v)


@pytest.mark.parametrize("value", [None, 3 + 0j, np.array([1, 2]), "7", b"7"])
def test_non_numbers_refused_by_name(value: object) -> None:
    with pytest.raises(ParamTypeError, match=r"^parameter gain \(int16\) needs a number"):
        scalar_value("gain", "int", 16, value)


def test_numpy_scalars_read_by_value() -> None:
    # Halide's binding reads np.float32(2.0) for a UInt(8) Param as 1; the value is 2.
    assert scalar_value("k", "uint", 8, np.float32(2.0)) == 2
    assert scalar_value("k", "uint", 8, np.int64(200)) == 200
    with pytest.raises(ParamValueError, match="parameter k: the value 300 cannot be losslessly converted to uint8"):
        scalar_value("k", "uint", 8, np.int64(300))
    with pytest.raises(ParamValueError, match="parameter k"):
        scalar_value("k", "uint", 8, np.uint64(2**64 - 1))


@pytest.fixture(scope="module")
def add_k() -> tuple[pitchfork.api.CompiledPipeline, object]:
    inp = hl.ImageParam(hl.Int(16), 1, "inp")
    k = hl.Param(hl.Int(16), "k")
    f = hl.Func("add_k")
    f[x] = inp[x] + k
    f.vectorize(x, 16)
    with warnings.catch_warnings():
        warnings.simplefilter("error", PitchforkFallbackWarning)
        return pitchfork.compile(f, [inp, k], target="x86-avx2"), (f, inp, k)


def test_compiled_pipeline_refuses_bad_scalars(add_k: tuple) -> None:
    prog, _ = add_k
    a = np.arange(32, dtype=np.int16)
    with pytest.raises(ParamValueError, match=r"parameter k: the value 100000 cannot be losslessly converted to int16"):
        prog(a, 100000)
    with pytest.raises(ParamValueError, match=r"parameter k: the value 2.7 cannot be losslessly converted to int16"):
        prog(a, 2.7)
    with pytest.raises(ParamTypeError, match=r"parameter k \(int16\) needs a number, got str '7'"):
        prog(a, "7")
    # accepted values give Halide's answer
    _, (f, inp, k) = add_k
    for v in (3, 2.0, -32768, 65535, True, np.int8(-5)):
        inp.set(hl.Buffer(a))
        k.set(int(v))
        want = np.asarray(f.realize([32])).copy()
        assert np.array_equal(prog(a, v), want), v


def test_fallback_refuses_the_same_values() -> None:
    from pitchfork.frontend.params import halide_scalar_value

    k = hl.Param(hl.UInt(8), "k")
    assert halide_scalar_value(k, np.float32(2.0)) == 2 and halide_scalar_value(k, -1) == 255
    with pytest.raises(ParamValueError, match="parameter k: the value 256"):
        halide_scalar_value(k, 256)
    with pytest.raises(ParamTypeError, match=r"parameter g \(float32\) needs a number"):
        halide_scalar_value(hl.Param(hl.Float(32), "g"), "1.5")
    # Through a compiled pipeline that falls back (require(): a runtime check PITCHFORK does not compile)
    inp = hl.ImageParam(hl.Float(16), 1, "inp")
    f = hl.Func("f16k")
    v = inp[x] + hl.cast(hl.Float(16), k)
    f[x] = hl.require(v >= inp[x], v, v)
    f.vectorize(x, 8)
    with pytest.warns(PitchforkFallbackWarning, match="require"):
        prog = pitchfork.compile(f, [inp, k], target="x86-avx2")
    a = np.zeros(8, np.float16)
    assert prog(a, np.float32(2.0))[0] == 2.0  # Halide's binding alone would give 1.0
    with pytest.raises(ParamValueError, match="parameter k: the value 256"):
        prog(a, 256)
    with pytest.raises(ParamTypeError, match="parameter k"):
        prog(a, None)


def test_missing_param_refused_at_compile_time() -> None:
    inp = hl.ImageParam(hl.UInt(8), 1, "inp")
    k = hl.Param(hl.UInt(8), "k_missing")
    f = hl.Func("f")
    f[x] = inp[x] + k
    f.vectorize(x, 16)
    with pytest.raises(PipelineError, match="the pipeline uses k_missing, which is not in the argument list"):
        pitchfork.compile(f, [inp])
    with pytest.raises(PipelineError, match="inp"):
        pitchfork.compile(f, [k])


def test_argument_list_and_isel_checked() -> None:
    inp = hl.ImageParam(hl.UInt(8), 1, "inp")
    f = hl.Func("f")
    f[x] = inp[x] + 1  # nothing vectorized: isel must still be checked
    with pytest.raises(UsageError, match=r"takes the pipeline's arguments as a list.*got a ImageParam"):
        pitchfork.compile(f, inp)  # type: ignore[arg-type]
    with pytest.raises(UsageError, match="unknown isel 'bogus'"):
        pitchfork.compile(f, [inp], isel="bogus")


def _schedule_refused(schedule: str) -> str:
    inp = hl.ImageParam(hl.UInt(8), 2, "inp")
    y = hl.Var("y")
    f = hl.Func("sched")
    f[x, y] = inp[x, y] + 1
    if schedule == "split":
        xo, xi = hl.Var("xo"), hl.Var("xi")
        f.split(x, xo, xi, -4)
    elif schedule == "gpu_tile":
        xo, yo, xi, yi = hl.vars("xo yo xi yi")
        f.gpu_tile(x, y, xo, yo, xi, yi, 8, 8)
    with pytest.raises((PipelineError, UsageError)) as e:
        pitchfork.compile(f, [inp])
    return str(e.value)


def test_impossible_schedules_refused_at_compile_time() -> None:
    assert "Split factors must be strictly positive" in _schedule_refused("split")
    assert "requires <Default_GPU>" in _schedule_refused("gpu_tile")



def test_huge_vectors_fall_back_to_halide_naming_their_lanes() -> None:
    """Vectors wider than MAX_LANES: Halide compiles them, our codegen would exhaust memory first, so the
    pipeline goes to Halide's compiler with the reason (fallback=False: raised)."""
    inp = hl.ImageParam(hl.UInt(8), 2, "inp")
    y = hl.Var("y")
    f = hl.Func("huge")
    f[x, y] = inp[x, y] + 1
    f.vectorize(x, 4096)
    with pytest.warns(PitchforkFallbackWarning, match="vectors of 4096 lanes"):
        prog = pitchfork.compile(f, [inp])
    assert prog.is_fallback and "4096 lanes" in prog.fallback_reason
    data = np.random.default_rng(0).integers(0, 255, (3, 4096), dtype=np.uint8)
    out = np.asarray(prog(data, size=[4096, 3]))
    assert np.array_equal(out, data + np.uint8(1))
    with pytest.raises(Unsupported, match="vectors of 4096 lanes"):
        pitchfork.compile(f, [inp], fallback=False)


def test_extern_stage_refused_by_name() -> None:
    inp = hl.ImageParam(hl.UInt(8), 1, "inp")
    e = hl.Func("e")
    e.define_extern("my_extern_fn", [inp], hl.UInt(8), 1)
    f = hl.Func("f")
    f[x] = e[x] + 1
    f.vectorize(x, 16)
    with pytest.raises(PipelineError, match=r"extern stage my_extern_fn \(define_extern\)"):
        pitchfork.compile(f, [inp])


def test_i8_shift_by_at_least_8_is_fpir_defined() -> None:
    """Halide leaves it undefined (0 scalar, amount mod 8 vectorized); we compile FPIR's definition."""
    a = hl.ImageParam(hl.Int(8), 1, "a")
    b = hl.ImageParam(hl.Int(8), 1, "b")
    fl, fr = hl.Func("shl8"), hl.Func("shr8")
    fl[x] = a[x] << b[x]
    fr[x] = a[x] >> b[x]
    fl.vectorize(x, 32)
    fr.vectorize(x, 32)
    av = np.array([-100, -25, 1, 127, -1, 64, -128, 3] * 8, np.int8)
    bv = np.array([8, 9, 12, 100, 127, 8, 7, 0] * 8, np.int8)
    with warnings.catch_warnings():
        warnings.simplefilter("error", PitchforkFallbackWarning)
        left = pitchfork.compile(fl, [a, b])(av, bv)
        right = pitchfork.compile(fr, [a, b])(av, bv)
    wide_a, wide_b = av.astype(np.int64), bv.astype(np.int64)
    want_l = np.where(wide_b >= 8, 0, (wide_a << np.minimum(wide_b, 7)).astype(np.int8))
    want_r = np.where(wide_b >= 8, np.where(wide_a < 0, -1, 0), wide_a >> np.minimum(wide_b, 7))
    assert np.array_equal(left, want_l.astype(np.int8))
    assert np.array_equal(right, want_r.astype(np.int8))


def test_zero_size_input_gives_empty_result() -> None:
    y = hl.Var("y")
    inp = hl.ImageParam(hl.UInt(8), 2, "input")
    f = hl.Func("plus1")
    f[x, y] = inp[x, y] + 1
    f.vectorize(x, 16)
    prog = pitchfork.compile(f, [inp])
    a = np.zeros((0, 32), np.uint8)
    inp.set(hl.Buffer(a))
    want = np.asarray(f.realize([32, 0]))
    got = prog(a)
    assert got.shape == want.shape == (0, 32) and got.dtype == np.uint8


def test_deeply_nested_pipeline_falls_back_with_the_reason() -> None:
    """The statement parser and expression translation recurse per nesting level; past MAX_NESTING
    the pipeline goes to Halide (same answer), saying why, instead of a RecursionError."""
    from pitchfork.frontend.checks import MAX_NESTING

    inp = hl.ImageParam(hl.UInt(8), 1, "inp")
    e = inp[x]
    for i in range(1, 3 * MAX_NESTING // 2):
        e = (e ^ inp[x + (i % 5)]) + hl.u8(i % 7) if i % 2 else e - inp[x + (i % 3)]
    f = hl.Func("deep")
    f[x] = e
    f.vectorize(x, 16)
    with pytest.warns(PitchforkFallbackWarning, match=rf"expression nested \d+ deep .*at most {MAX_NESTING}"):
        prog = pitchfork.compile(f, [inp])
    a = np.random.default_rng(0).integers(0, 256, 64 + 8, dtype=np.uint8)
    inp.set(hl.Buffer(a))
    assert np.array_equal(prog(a, size=[64]), np.asarray(f.realize([64])))

"""x86 gathers from a float32 buffer (codegen/memory.py `_gather`, `_avx2_gather`).

8, 16 or 32 lanes (session 25): one `vgatherdps` per 8 lanes instead of reading the lanes one by one
(bilateral_grid's slicing stage: 16 gathers of the grid per 8 pixels), by default only on a host whose
CPU LLVM tunes for fast gathers (session 33: codegen/float_gather_cpu.py). Other lane counts (session 16):
the lanes are read and inserted as floats, as Halide's code does (`vmovss` + `vinsertps`), not as their
integer bits (`vmovd` + `vpinsrd`, whose vector then crosses into the float domain: bilateral_grid's
slicing stage took 4.8% more CPU than Halide's). Either way a gather only moves bits: the result is
compared bit for bit with Halide 21's own realize, on random bit patterns (NaN payloads, -0.0,
infinities, subnormals among them) and on indices that reach both ends of the table."""

from __future__ import annotations

import re
import warnings

import halide as hl
import numpy as np
import pytest

import pitchfork
from benchmarks.apps.common import HALIDE_TARGETS


def float_lookup(lanes: int, scale: bool) -> tuple[hl.Func, list]:
    """out[x] = table[idx[x]] (* 0.5): a `lanes`-lane gather of a float32 table in the vectorized x loop."""
    table = hl.ImageParam(hl.Float(32), 1, "table")
    idx = hl.ImageParam(hl.UInt(8), 1, "idx")
    x = hl.Var("x")
    out = hl.Func("out")
    v = table[hl.cast(hl.Int(32), idx[x])]
    out[x] = v * hl.f32(0.5) if scale else v
    out.vectorize(x, lanes)
    return out, [table, idx]


def _inputs(seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    table = rng.integers(0, 2**32, 256, dtype=np.uint64).astype(np.uint32).view(np.float32)
    table[:6] = [np.nan, -0.0, np.inf, 1e-40, -np.inf, 0.0]
    table.view(np.uint32)[6] = 0x7FC12345  # a NaN with a payload
    idx = rng.integers(0, 256, 96, dtype=np.uint8)
    idx[:9] = [0, 1, 2, 3, 4, 5, 6, 255, 0]
    return table, idx


def _halide(func: hl.Func, args: list, table: np.ndarray, idx: np.ndarray) -> np.ndarray:
    args[0].set(hl.Buffer(table))
    args[1].set(hl.Buffer(idx))
    return np.asarray(func.realize([len(idx)], hl.Target(HALIDE_TARGETS["x86-avx2"])))


@pytest.mark.parametrize("lanes", [8, 16, 32])
def test_x86_float_gather_is_vgatherdps_and_bit_exact(lanes: int) -> None:
    """With the pass on (`enable_passes`: its default follows the host CPU, see below)."""
    func, args = float_lookup(lanes, scale=False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        prog = pitchfork.compile(func, args, target="x86-avx2", name="float_lookup", fallback=False,
                                 enable_passes=["x86_float_gathers"])
    asm = prog.assembly()
    assert len(re.findall(r"\bvgatherdps\b", asm)) >= lanes // 8 and not re.search(r"\bvinsertps\b", asm), asm
    table, idx = _inputs(lanes)
    got = prog(table, idx, size=[len(idx)])
    want = _halide(*float_lookup(lanes, scale=False), table, idx)
    assert np.array_equal(got.view(np.uint32), want.view(np.uint32))  # every bit, NaN payloads included
    assert np.array_equal(got.view(np.uint32), table[idx.astype(np.int64)].view(np.uint32))


def test_x86_float_gather_of_four_lanes_is_float_inserts_and_bit_exact() -> None:
    func, args = float_lookup(4, scale=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        prog = pitchfork.compile(func, args, target="x86-avx2", name="float_lookup", fallback=False)
    asm = prog.assembly()
    assert re.search(r"\bvinsertps\b", asm) and not re.search(r"\bvpinsrd\b|\bvgatherdps\b", asm), asm
    table, idx = _inputs(4)
    got = prog(table, idx, size=[len(idx)])
    want = _halide(*float_lookup(4, scale=True), table, idx)
    same = got.view(np.uint32) == want.view(np.uint32)
    assert np.all(same | (np.isnan(got) & np.isnan(want)))  # x0.5 of a NaN: a NaN on both sides


def test_x86_float_gathers_off_reads_lanes_one_by_one_as_halide() -> None:
    """`disable_passes=["x86_float_gathers"]` (pitchfork/passes/pipeline.py): Halide 21's own form (it
    sets +prefer-no-gather, for CPUs whose GDS microcode mitigation makes vgatherdps slow): the lanes read
    one by one as float inserts, no vgatherdps; the same bits."""
    func, args = float_lookup(16, scale=False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        prog = pitchfork.compile(func, args, target="x86-avx2", name="float_lookup", fallback=False,
                                 disable_passes=["x86_float_gathers"])
    asm = prog.assembly()
    assert re.search(r"\bvinsertps\b", asm) and not re.search(r"\bvgatherdps\b", asm), asm
    table, idx = _inputs(16)
    got = prog(table, idx, size=[len(idx)])
    want = _halide(*float_lookup(16, scale=False), table, idx)
    assert np.array_equal(got.view(np.uint32), want.view(np.uint32))


def test_llvm_tuning_says_which_cpus_gather_fast() -> None:
    """codegen/float_gather_cpu.py asks LLVM 22's own tuning (TuningFastGather): Intel Skylake and later
    lower a float gather to vgatherdps; Haswell and AMD Zen (where session 33 measured local_laplacian
    ~10% slower with vgatherdps) do not; a CPU name LLVM does not know answers False."""
    from pitchfork.codegen.float_gather_cpu import fast_float_gathers

    assert all(fast_float_gathers(c) for c in ("skylake", "icelake-server", "alderlake"))
    assert not any(fast_float_gathers(c) for c in ("haswell", "znver3", "znver4", "znver5", "generic"))


def test_x86_float_gathers_default_follows_the_host_cpu() -> None:
    """By default the pass runs iff LLVM's tuning for the compiling host's CPU gathers fast: vgatherdps on
    a Skylake+ Intel host, Halide 21's lane-by-lane form on an AMD Zen host; the same bits either way."""
    from pitchfork.codegen.float_gather_cpu import fast_float_gathers
    from pitchfork.passes.pipeline import default_passes, resolve

    fast = fast_float_gathers()
    assert default_passes("x86-avx2", "pitchfork").on("x86_float_gathers") == fast
    assert resolve("x86-avx2", "pitchfork", enable=["x86_float_gathers"]).on("x86_float_gathers")
    func, args = float_lookup(8, scale=False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        prog = pitchfork.compile(func, args, target="x86-avx2", name="float_lookup", fallback=False)
    asm = prog.assembly()
    gathered, inserted = (bool(re.search(rf"\b{op}\b", asm)) for op in ("vgatherdps", "vinsertps"))
    assert gathered == fast and inserted != fast, asm
    table, idx = _inputs(8)
    got = prog(table, idx, size=[len(idx)])
    assert np.array_equal(got.view(np.uint32), table[idx.astype(np.int64)].view(np.uint32))

"""Shared pieces of the loop-nest code generator (pitchfork/codegen/loop_nest.py): the error type for
unsupported constructs, the Halide -> FPIR name tables, the records codegen keeps per leaf, buffer and
run, and small text helpers. Data and pure functions only; nothing here emits IR."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Hashable, Optional

from llvmlite import ir

from fpir.types import ScalarType
from pitchfork.frontend import ir as H
from pitchfork.frontend.htypes import HType

if TYPE_CHECKING:
    import numpy as np

class Unsupported(Exception):
    def __init__(self, what: str, node: Optional[H.Node] = None) -> None:
        line = getattr(node, "line", 0) if node is not None else 0
        super().__init__(f"{what}" + (f" (statement line {line})" if line else ""))
        self.what = what


# Shifts by at least the bit width: Halide leaves them undefined (its result depends on the schedule);
# FPIR's shl/shr define them (0, or -1 for a negative value shifted right), and that is what we compile.
BINOPS = {"+": "add", "-": "sub", "*": "mul", "/": "div", "%": "mod", "min": "min", "max": "max",
          "==": "eq", "!=": "ne", "<": "lt", "<=": "le", ">": "gt", ">=": "ge", "&&": "and", "||": "or",
          "<<": "shl", ">>": "shr", "&": "and", "|": "or", "^": "xor"}

# Halide intrinsic name -> FPIR op (the result type of casts comes from the call's type)
INTRINSICS = {
    "shift_left": "shl", "shift_right": "shr", "bitwise_and": "and", "bitwise_or": "or", "bitwise_xor": "xor",
    "bitwise_not": "not", "abs": "abs", "absd": "absd", "widening_add": "widening_add",
    "widening_sub": "widening_sub", "widening_mul": "widening_mul", "widening_shift_left": "widening_shl",
    "widening_shift_right": "widening_shr", "widen_right_add": "extending_add", "widen_right_sub": "extending_sub",
    "widen_right_mul": "extending_mul", "rounding_shift_left": "rounding_shl",
    "rounding_shift_right": "rounding_shr", "halving_add": "halving_add", "halving_sub": "halving_sub",
    "rounding_halving_add": "rounding_halving_add", "saturating_add": "saturating_add",
    "saturating_sub": "saturating_sub", "mul_shift_right": "mul_shr",
    "rounding_mul_shift_right": "rounding_mul_shr", "saturating_shift_left": "saturating_shl",
}
#: Constant-size allocations up to this many bytes go on the stack, larger and dynamic ones to
#: halide_malloc (Halide 21's threshold, on every target; codegen_alloc.py).
STACK_LIMIT = 16 * 1024
#: Our own blocks are aligned to this many bytes: every stack slot, and every block of the WEAK default
#: `halide_malloc` a kernel's module defines (pitchfork/codegen/alloc.py). Halide's alignment for HVX;
#: the `aligned` facts of Halide's statement assume at least a native vector.
ALLOC_ALIGN = 128
#: What a kernel may assume of a heap block, per ISA: the alignment of Halide 21's runtime
#: `halide_malloc` for the target (its `halide_malloc_alignment()`: LLVM_Runtime_Linker links
#: alignment_128 for Hexagon/HVX, alignment_64 for x86, alignment_32 elsewhere; in the installed
#: runtime's halide_default_malloc: x86 `and $-0x40`, arm64 `and #-0x20`, Hexagon `and #-0x80`).
#: Not ALLOC_ALIGN: a program linking Halide's runtime beside our object (the AOT library, as
#: Halide's own objects link) may get Halide's definition of the WEAK `halide_malloc`, not ours, so
#: only the smaller guarantee holds (tests/pitchfork/codegen/test_codegen_alloc.py runs Halide's
#: `halide_malloc` on x86, arm64 and Hexagon against this table).
HEAP_ALIGN: dict[str, int] = {"x86-avx2": 64, "arm64": 32, "hvx128": 128}
# Bit counts (no FPIR op): emitted with LLVM's intrinsics, the argument selected on its own. Halide's
# count_leading_zeros(0) is the bit width, which is llvm.ctlz with is_zero_poison = false.
BIT_COUNTS = {"count_leading_zeros": "ctlz", "count_trailing_zeros": "cttz", "popcount": "ctpop"}
#: Branch weights (taken, not taken) of a branch that is all but always taken: Halide's
#: `very_likely_branch`, which its backend puts on every assertion and on every loop's entry test.
#: Without them LLVM weighs each side of such a branch evenly: each assertion halves the estimated
#: frequency of the code after it, and the register allocator, which ranks values by the frequency
#: of their uses, spilled the short loops of a long loop body and reloaded their loop-invariant
#: values in every iteration (camera_pipe's denoise loop: 7 reloads an iteration, Halide 21's 1).
VERY_LIKELY = (1 << 30, 0)
#: Which targets carry them: the "branch_weights" codegen pass (pitchfork.passes.pipeline).
IDENTITY_CALLS = ("likely", "likely_if_innermost", "promise_clamped", "unsafe_promise_clamped", "strict_float")


#: (Halide type code, bits) -> its FPIR type, one object each (fpir_type runs for every node converted)
_FPIR_TYPES: dict[tuple[str, int], ScalarType] = {
    (code, bits): ScalarType(code == "int", bits) for code in ("int", "uint") for bits in (8, 16, 32, 64)}
_FPIR_TYPES["uint", 1] = ScalarType(False, 1)


def fpir_type(t: HType, node: Optional[H.Node] = None) -> ScalarType:
    st = _FPIR_TYPES.get((t.code, t.bits))
    if st is not None:
        return st
    if t.code not in ("int", "uint"):
        raise Unsupported(f"{t} values where PITCHFORK's integer path needs an integer", node)
    if t.bits not in (1, 8, 16, 32, 64):
        raise Unsupported(f"{t} values", node)
    return ScalarType(t.code == "int", t.bits)  # (int1: FPIR's error, booleans are unsigned)


def buffer_dtype(t: HType) -> "np.dtype":
    """A buffer element's numpy dtype: float16/float32/float64, uint16 for bfloat16 (numpy has none:
    its bit patterns), or the integer type's as FPIR types it (uint1 is bool); any other element type
    is `Unsupported`. The API's and the AOT caller's argument checks share it."""
    import numpy as np

    if t.code == "float" and t.bits in (16, 32, 64):
        return np.dtype(f"float{t.bits}")
    if t.code == "bfloat" and t.bits == 16:
        return np.dtype("uint16")
    return np.dtype(fpir_type(t).np_dtype)


def type_code(t: HType) -> int:
    code = {"int": 0, "uint": 1, "float": 2, "handle": 3, "bfloat": 4}[t.code]
    return code | (t.bits << 8) | (t.lanes << 16)


@dataclass
class Leaf:
    kind: str  # "load" | "splat" | "ramp" | "value" | "shuffle"
    node: H.Expr
    lanes: int
    type: ScalarType
    #: a dense load's (stream key, element offset): loads of one expression with one key read one
    #: buffer at indices that differ by the offsets (the `stream(...)` predicate's facts)
    stream: Optional[tuple[Hashable, int]] = None


@dataclass
class BufferInfo:
    name: str
    ptr: ir.Value
    elem: Optional[HType] = None
    dims: list[tuple[ir.Value, ir.Value, ir.Value]] = field(default_factory=list)
    code: int = 0
    dimensions: int = 0
    #: bytes the base pointer is known to be aligned to (allocations: ALLOC_ALIGN; arguments: the
    #: element size, which CompiledPipeline guarantees by copying misaligned arrays)
    align: int = 1
    #: alias scope: one per argument buffer, one shared by all allocations (see `_mem_access`)
    scope: str = ""


@dataclass
class Stats:
    vector_exprs: int = 0
    rules_fired: dict = field(default_factory=dict)
    selection_seconds: float = 0.0
    asserts_checked: int = 0
    asserts_skipped: int = 0



def _ident(name: str) -> str:
    """An LLVM value name for a Halide name (`sobel$1` -> `sobel_1`)."""
    return "".join(c if c.isalnum() or c in "._" else "_" for c in name)


def _show(e: H.Node, limit: int = 160) -> str:
    """Halide's text of a node for error messages, shortened."""
    from pitchfork.frontend.printer import to_text

    try:
        text = " ".join(to_text(e).split())
    except Exception:  # noqa: BLE001 - a message must never fail
        text = type(e).__name__
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _assert_text(s: H.AssertStmt) -> str:
    from pitchfork.frontend.printer import to_text

    return f"{to_text(s.condition)} ({to_text(s.message)})"


def _storage(t: ScalarType) -> ScalarType:
    return ScalarType(False, 8) if t.bits == 1 else t

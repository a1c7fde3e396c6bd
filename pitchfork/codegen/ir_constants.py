"""Shared llvmlite integer constants (shuffle masks, splats, scalars) and the integer vector and pointer
types of the code generator: one object per distinct value.

Why: llvmlite makes one `ir.Constant` object per element of a vector constant and formats every
element again for each new vector object; HVX code uses hundreds of 64- to 256-lane shuffle masks
and splats of a few distinct values (sobel3x3 on hvx128: 852 vector constants, 20 distinct, 122,000
element objects), which made building and printing the module a third of its compile. An
`ir.Constant` has no parent and llvmlite caches its text, so one object can stand in every function
and module that uses the value. Invariant: each function returns a constant that prints exactly as
the `ir.Constant(...)` it replaces (given in its docstring); callers never mutate it. The same holds
for `undef(t)`, except its text: llvmlite wraps `Undefined` into one undef constant per lane, so
`ir.Constant(<256 x i8>, ir.Undefined)` prints `<256 x i8> <i8 undef, i8 undef, ...>` (half of sobel3x3
hvx128's codegen IR text, and formatted again for every new object); `undef(t)` of a vector type prints
`<256 x i8> undef`. LLVM folds a vector constant whose every lane is undef to that `undef` when it parses
it (ConstantVector::get), so the parsed module, and everything compiled from it, is the same; only the
codegen text (`CompiledModule.source_ir`) is shorter. Code that inspects constants sees an undef vector's
`.constant` as `ir.Undefined` (not llvmlite's tuple of undef lanes): hvx_floats and hvx_reduce read both
forms alike, and lane_order and hvx_emit, which look for a *list* of lanes, see neither as one.

Scalar constants and types are shared for the same reason at a smaller scale: llvmlite formats a value's
reference and a type's text once per object (`_StringReferenceCaching`, `_StrCaching`), and the scalar
emitter made a new `i32`/`i64` constant per index term and a new vector type per value (sobel3x3 arm64:
~500 constants and ~350 vector and pointer types a compile, each formatted again when the module is
printed). A type is a value in llvmlite (compared by `==`, never mutated), so one object serves every
instruction, function and module of that type.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache

from llvmlite import ir


@lru_cache(maxsize=4096)
def _vector(bits: int, values: tuple[int, ...]) -> ir.Constant:
    return ir.Constant(ir.VectorType(ir.IntType(bits), len(values)), list(values))


def vector(bits: int, values: Sequence[int]) -> ir.Constant:
    """`ir.Constant(<len(values) x i<bits>>, list(values))`, shared."""
    return _vector(bits, tuple(map(int, values)))  # (map: the same tuple, without a generator's frames)


def mask(idx: Sequence[int]) -> ir.Constant:
    """The `<len(idx) x i32>` shufflevector mask of `idx`, shared."""
    return _vector(32, tuple(map(int, idx)))  # (hvx128: ~700 masks of 64-256 lanes a compile)


@lru_cache(maxsize=4096, typed=True)
def scalar(bits: int, value: int) -> ir.Constant:
    """`ir.Constant(ir.IntType(bits), value)`, shared (`typed`: a bool value prints as llvmlite prints a
    bool, `true`, so it is never the constant of the equal int)."""
    return ir.Constant(ir.IntType(bits), value)


#: (bits, lanes) -> the integer vector type
_VECTOR_TYPES: dict[tuple[int, int], ir.VectorType] = {}


def vector_type(bits: int, lanes: int) -> ir.VectorType:
    """`ir.VectorType(ir.IntType(bits), lanes)`, shared."""
    t = _VECTOR_TYPES.get((bits, lanes))
    if t is None:
        t = _VECTOR_TYPES[bits, lanes] = ir.VectorType(ir.IntType(bits), lanes)
    return t


_POINTERS: dict[str, ir.PointerType] = {}


def pointer(pointee: ir.Type) -> ir.PointerType:
    """`ir.PointerType(pointee)`, shared (keyed by the pointee's text, as `undef`)."""
    key = str(pointee)
    t = _POINTERS.get(key)
    if t is None:
        t = _POINTERS[key] = ir.PointerType(pointee)
    return t


@lru_cache(maxsize=4096)
def splat(bits: int, value: int, lanes: int) -> ir.Constant:
    """`ir.Constant(<lanes x i<bits>>, [ir.Constant(i<bits>, value)] * lanes)`, shared."""
    return ir.Constant(ir.VectorType(ir.IntType(bits), lanes), [ir.Constant(ir.IntType(bits), value)] * lanes)


_UNDEF: dict[str, ir.Constant] = {}


def undef(t: ir.Type) -> ir.Constant:
    """`ir.Constant(t, ir.Undefined)`, shared (keyed by the type's text: llvmlite hashes every
    VectorType alike); a vector is written `<n x T> undef`, not lane by lane (the same LLVM constant)."""
    key = str(t)
    c = _UNDEF.get(key)
    if c is None:
        c = _UNDEF[key] = ir.Constant(t, ir.Undefined)
        # llvmlite's VectorType.wrap_constant_value made a list of undef lanes; the whole-value
        # `Undefined` is what Constant prints as `undef` (set before anything formats it)
        c.constant = ir.Undefined
    return c

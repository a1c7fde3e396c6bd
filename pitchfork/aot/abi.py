"""Halide's ahead-of-time ABI for PITCHFORK-compiled pipelines: the entry point, `_argv`, the header.

    text, asm, obj = aot_outputs(prog)      # one module: the kernel (internal) + the Halide-ABI entry
    header(prog)                            # what Halide's compile_to_header declares for it

The kernel codegen.py builds has a private convention (`void k(ptr err, host, min, extent, stride...)`).
This module adds, in the same object, the function a Halide AOT user calls:

    int name(struct halide_buffer_t *in..., <scalar params by value>, struct halide_buffer_t *out...)

(arguments in the pipeline's order, outputs last, scalars with their C type),
`int name_argv(void **args)` (buffers as `halide_buffer_t *`, scalars as pointers to their value) and
`const struct halide_filter_metadata_t *name_metadata()` (names, kinds, dimensions, types, target).

What the entry does is Halide's own prologue, taken from the captured statement rather than
re-invented: the statement logged before "Finding intrinsics" starts with Halide's argument checks
(null buffer arguments, the `let`s reading host/type/dimensions/min/extent/stride, bounds-query
handling, then the asserts on type, dimensionality, accessed region, extents, strides constraints,
sizes, device_dirty and null host). `EntryBuilder` walks that prologue in order and emits it against
the real `halide_buffer_t` fields (HalideRuntime.h layout, as an LLVM struct, so 32-bit Hexagon gets
its own offsets): scalar expressions go through codegen.py's exact scalar emission, buffer fields and
handles are read here. A failing assert formats Halide's message (abi_runtime.py), calls
`halide_error`, and returns Halide's negative `halide_error_code_t`. A bounds query (an argument with
a null host and no device) fills in the buffers' shapes as Halide's `_halide_buffer_init` does and
returns 0. The walk stops at the first statement that is not a check (the first `produce`, loop or
allocation): there the entry calls the kernel with the host pointers and dims. Asserts the kernel
meets later (inside the loop nest) come back through its error slot and are reported with the
assertion's text and the code of its `halide_error_*` call.

Invariant: the entry accepts exactly the calls Halide's own code accepts (same checks, same order,
same codes and messages), and computes the same bytes (the kernel is the one `pitchfork.compile`
runs and tests). No Halide runtime is needed to link; `halide_error` is weak.
"""

from __future__ import annotations

import dataclasses
import itertools
import re
from pathlib import Path
from typing import TYPE_CHECKING

from llvmlite import ir

from pitchfork.frontend import ir as H
from pitchfork.aot.abi_runtime import MSG_BYTES, Formatter, error_code, fit_int, message_for
from pitchfork.frontend.capture import CapturedStmt, halide_target
from pitchfork.codegen.loop_nest import LoopNestCodegen, Unsupported, fpir_type
from pitchfork.codegen.floats_bfloat import widen
from pitchfork.codegen.floats import FloatEmitter
from pitchfork.frontend.htypes import HType
from pitchfork.targets.target_strings import has_feature

if TYPE_CHECKING:
    from pitchfork.api import CompiledPipeline

I1, I8, I16, I32, I64 = (ir.IntType(n) for n in (1, 8, 16, 32, 64))
PTR = ir.PointerType(I8)
#: struct halide_buffer_t { uint64_t device; const halide_device_interface_t *device_interface;
#: uint8_t *host; uint64_t flags; halide_type_t type; int32_t dimensions; halide_dimension_t *dim;
#: void *padding; }  (halide_type_t is {uint8 code, uint8 bits, uint16 lanes}: read as one u32)
BUFFER_T = ir.LiteralStructType([I64, PTR, PTR, I64, I32, I32, PTR, PTR])
F_DEVICE, F_INTERFACE, F_HOST, F_FLAGS, F_TYPE, F_DIMENSIONS, F_DIM, F_PADDING = range(8)
#: struct halide_dimension_t { int32_t min, extent, stride; uint32_t flags; }
DIMENSION_T = ir.LiteralStructType([I32, I32, I32, I32])
DEVICE_DIRTY = 2  # halide_buffer_flag_device_dirty
_GETTERS = {"_halide_buffer_get_min": 0, "_halide_buffer_get_extent": 1, "_halide_buffer_get_stride": 2}
_C_SCALAR = {(1, "uint"): "bool", **{(b, c): f"{c}{b}_t" for b in (8, 16, 32, 64) for c in ("int", "uint")}}


class AbiError(ValueError):
    """The pipeline cannot get a Halide-ABI entry point (a construct its prologue uses is not handled)."""


def kernel_name(name: str) -> str:
    """The kernel's symbol inside the AOT object (internal linkage)."""
    return f"{name}.pitchfork_kernel"


# --------------------------------------------------------------------------------------------------
# Signature and header


@dataclasses.dataclass(frozen=True)
class AbiArg:
    name: str  # the Halide name (argument, or output Func)
    kind: str  # "input_buffer" | "output_buffer" | "scalar"
    type: HType  # element type of a buffer, or the scalar's type
    dimensions: int
    #: a float16 scalar Halide's entry point takes as LLVM `half` (`passes_as_half`), not as its bits
    as_half: bool = False

    @property
    def c_name(self) -> str:
        # A Func named again in one process is `output$1`; the generator's (and Halide's header's)
        # name is `output`.
        base = re.sub(r"[^A-Za-z0-9_]", "_", re.sub(r"\$\d+(?=(\.\d+)?$)", "", self.name))
        return f"_{base}_buffer" if self.kind != "scalar" else f"_{base}"

    @property
    def c_type(self) -> str:
        if self.kind != "scalar":
            return "struct halide_buffer_t *"
        t = self.type
        if t.is_float and t.bits == 16:
            # Halide's header says float16_t / bfloat16_t (C++ types of Halide.h); C's types passed the
            # same way as its entry point's i16 or `half` (AAPCS64 passes _Float16 in h0, as `half`)
            return "_Float16" if self.as_half else "uint16_t"
        if t.code == "float":
            return {32: "float", 64: "double"}[t.bits]
        c = _C_SCALAR.get((t.bits, t.code))
        if c is None:
            raise AbiError(f"scalar parameter {self.name} of type {t} has no C type")
        return c


def passes_as_half(t: HType, halide_target: str) -> bool:
    """Whether Halide 21's entry point for `halide_target` takes a scalar of type `t` as LLVM `half`
    (in a floating-point register) rather than as an integer of its width: a float16 on an ARM
    target with arm_fp16 only. CodeGen_LLVM::upgrade_type_for_argument_passing passes every float
    narrower than 32 bits and every bfloat16 as the unsigned integer of its width, and CodeGen_ARM's
    keeps float16 when the target has ARMFp16. Halide's own LLVM assembly agrees: for a float16 Param
    x86-64-linux-avx2, arm-64-linux and hexagon-32-noos-hvx-hvx_128 declare `i16`,
    arm-64-linux-arm_fp16 declares `half`; for a bfloat16 Param all four declare `i16`."""
    return (t.code == "float" and t.bits == 16 and halide_target.startswith("arm-")
            and has_feature(halide_target, "arm_fp16"))


#: Halide 21's complete_x86_target (CodeGen_X86.cpp): the features each x86 feature implies, applied in
#: this order (AVX10_1's vector-width-dependent part is not: PITCHFORK does not compile for it)
_X86_IMPLIED = (("AVX512_SapphireRapids", ("AVX512_Zen4", "AVXVNNI")), ("AVX512_Zen5", ("AVX512_Zen4", "AVXVNNI")),
                ("AVX512_Zen4", ("AVX512_Cannonlake",)), ("AVX512_Cannonlake", ("AVX512_Skylake",)),
                ("AVX512_Cannonlake", ("AVX512",)), ("AVX512_Skylake", ("AVX512",)), ("AVX512_KNL", ("AVX512",)),
                ("AVX512", ("AVX2",)), ("AVX2", ("AVX", "F16C", "FMA")), ("AVX", ("SSE41",)))


def codegen_target_string(target: str) -> str:
    """The target string Halide 21's metadata carries for a module compiled for `target` (a Halide
    target string): its code generator's target, which for x86 is completed with the implied features
    (x86-64-linux-avx2 -> x86-64-linux-avx-avx2-f16c-fma-sse41, read in Halide's own metadata)."""
    import halide as hl

    t = hl.Target(target)
    if t.arch == hl.TargetArch.X86:
        for have, implied in _X86_IMPLIED:
            if t.has_feature(getattr(hl.TargetFeature, have)):
                for f in implied:
                    t = t.with_feature(getattr(hl.TargetFeature, f))
    return t.to_string()


def abi_arguments(captured: CapturedStmt) -> list[AbiArg]:
    """The entry point's arguments in Halide's order: the pipeline arguments, then the outputs."""
    args = [AbiArg(a.name, "scalar", a.type, 0, passes_as_half(a.type, captured.target)) if a.kind == "scalar"
            else AbiArg(a.name, "input_buffer", a.type, a.dimensions) for a in captured.arguments]
    for o in captured.output_buffers:  # a Tuple output `f`: buffers f.0, f.1, ... (Halide's order)
        args.append(AbiArg(o.name, "output_buffer", o.types[0], o.dimensions))
    return args


def header_text(name: str, args: list[AbiArg]) -> str:
    """The C header Halide's `compile_to_header` writes for this signature: its interface part
    (Halide's also carries a copy of HalideRuntime.h; include that for the struct definitions)."""
    guard = "HALIDE__" + re.sub(r"[^A-Za-z0-9]", "_", name) + "_h"
    params = ", ".join(f"{a.c_type}{'' if a.c_type.endswith('*') else ' '}{a.c_name}" for a in args)
    return f"""#ifndef {guard}
#define {guard}
#include <stdint.h>
#ifndef __cplusplus
#include <stdbool.h>
#endif

// Generated by PITCHFORK: the same entry point as Halide's ahead-of-time header for `{name}`.
// The object needs no Halide runtime; `halide_error` is defined weak (it prints to stderr) and an
// application may define its own. struct halide_buffer_t is defined in HalideRuntime.h.
struct halide_buffer_t;
struct halide_filter_metadata_t;

#ifndef HALIDE_MUST_USE_RESULT
#ifdef __has_attribute
#if __has_attribute(nodiscard)
#define HALIDE_MUST_USE_RESULT [[nodiscard]]
#elif __has_attribute(warn_unused_result)
#define HALIDE_MUST_USE_RESULT __attribute__((warn_unused_result))
#else
#define HALIDE_MUST_USE_RESULT
#endif
#else
#define HALIDE_MUST_USE_RESULT
#endif
#endif

#ifndef HALIDE_FUNCTION_ATTRS
#define HALIDE_FUNCTION_ATTRS
#endif

#ifdef __cplusplus
extern "C" {{
#endif

HALIDE_FUNCTION_ATTRS
int {name}({params});

HALIDE_FUNCTION_ATTRS
int {name}_argv(void **args);

HALIDE_FUNCTION_ATTRS
const struct halide_filter_metadata_t *{name}_metadata();

#ifdef __cplusplus
}}  // extern "C"
#endif

#endif
"""


# --------------------------------------------------------------------------------------------------
# The entry point


class EntryBuilder:
    """Builds `name`, `name_argv` and `name_metadata` into `module`; `name` calls the (declared)
    kernel `kernel_name(name)`."""

    def __init__(self, captured: CapturedStmt, stmt: H.Stmt, target: str, name: str,
                 assertions: dict[int, str], module: ir.Module) -> None:
        self.captured, self.stmt, self.target, self.name = captured, stmt, target, name
        self.assertions = assertions
        self.module = module
        self.args = abi_arguments(captured)
        self.fmt = Formatter(module, hexagon=target == "hvx128")
        self._ids = itertools.count()

    # ---- types -----------------------------------------------------------------------------
    @staticmethod
    def _scalar_ir(a: AbiArg) -> ir.Type:
        """The scalar's type in the entry point's signature: Halide's for the target (a float16 as
        `half` or i16, `passes_as_half`; a bfloat16 as i16), so the value arrives in the register
        Halide's callers put it in."""
        t = a.type
        if t.is_float and t.bits == 16:
            return ir.HalfType() if a.as_half else I16
        if t.is_float:  # a C float/double, as Halide's entry point takes it
            return ir.FloatType() if t.bits == 32 else ir.DoubleType()
        return ir.IntType(t.bits)

    def kernel_type(self) -> ir.FunctionType:
        types: list[ir.Type] = [PTR]
        for a in self.args:
            if a.kind == "scalar":
                types.append(I64 if a.type.bits == 64 else I32)
            else:
                types += [PTR] + [I32] * (3 * a.dimensions)
        return ir.FunctionType(ir.VoidType(), types)

    def build(self) -> None:
        for a in self.args:
            if a.kind == "scalar" and not a.type.is_float:
                fpir_type(a.type)  # integer scalars only (the kernel's own restriction)
        self.kernel = ir.Function(self.module, self.kernel_type(), name=kernel_name(self.name))
        ftype = ir.FunctionType(I32, [PTR if a.kind != "scalar" else self._scalar_ir(a) for a in self.args])
        fn = ir.Function(self.module, ftype, name=self.name)
        for a, v in zip(self.args, fn.args):
            v.name = a.c_name
        self.fn = fn
        self.b = ir.IRBuilder(fn.append_basic_block("entry"))
        # codegen.py's scalar emission (exact Halide semantics), pointed at this function
        cg = LoopNestCodegen(self.captured, self.stmt, self.target, "llvm", self.name)
        cg.module, cg.fn, cg.b = self.module, fn, self.b
        cg.scalars, cg.vlets, cg.buffers = {}, {}, {}
        cg.fscalars = {}
        self.cg = cg
        self.msg = self.b.gep(self.b.alloca(ir.ArrayType(I8, MSG_BYTES), name="msg"),
                              [ir.Constant(I32, 0), ir.Constant(I32, 0)])
        self.err = self.b.alloca(I32, name="err")
        self.handles: dict[str, ir.Value] = {}
        for a, v in zip(self.args, fn.args):
            if a.kind == "scalar" and a.type.is_float:
                # the prologue's float expressions read it as codegen's float scalars: a float16 as
                # half, a bfloat16 as the float32 it stands for
                if a.type.code == "bfloat":
                    v = widen(self.b, v)
                elif v.type == I16:
                    v = self.b.bitcast(v, ir.HalfType())
                cg.fscalars[a.name] = v
            elif a.kind == "scalar":
                cg.scalars[a.name] = (v, fpir_type(a.type))
            else:
                self.handles[f"{a.name}.buffer"] = v
        if not self._walk(self.stmt):
            self.b.ret(ir.Constant(I32, 0))
        self._argv()
        self._metadata()

    # ---- buffer fields -----------------------------------------------------------------------
    def _struct(self, buf: ir.Value) -> ir.Value:
        return self.b.bitcast(buf, ir.PointerType(BUFFER_T))

    def _field_ptr(self, buf: ir.Value, f: int) -> ir.Value:
        return self.b.gep(self._struct(buf), [ir.Constant(I32, 0), ir.Constant(I32, f)])

    def _field(self, buf: ir.Value, f: int) -> ir.Value:
        return self.b.load(self._field_ptr(buf, f))

    def _dim_ptr(self, buf: ir.Value, d: ir.Value, k: int) -> ir.Value:
        dims = self.b.bitcast(self._field(buf, F_DIM), ir.PointerType(DIMENSION_T))
        return self.b.gep(dims, [d, ir.Constant(I32, k)])

    # ---- expressions -----------------------------------------------------------------------
    def _bind(self, value: ir.Value, t: HType) -> H.Variable:
        name = f"abi.{next(self._ids)}"
        self.cg.scalars[name] = (value, fpir_type(t))
        return H.Variable(name, t)

    def handle(self, e: H.Expr) -> ir.Value:
        """The pointer a handle-valued expression stands for."""
        if isinstance(e, H.Variable) and e.name in self.handles:
            return self.handles[e.name]
        if isinstance(e, (H.Cast, H.Reinterpret)):
            if e.value.type.is_handle:
                return self.handle(e.value)
            return self.b.inttoptr(self.value(e.value), PTR)
        if isinstance(e, H.Call):
            if e.name == "_halide_buffer_get_host":
                return self._field(self.handle(e.args[0]), F_HOST)
            if e.name == "_halide_buffer_get_shape":
                return self.b.bitcast(self._field(self.handle(e.args[0]), F_DIM), PTR)
        raise Unsupported(f"handle {e}")

    def lower(self, e: H.Expr) -> H.Expr:
        """`e` with buffer-field reads and pointer values replaced by variables bound to IR values."""
        if isinstance(e, H.Call):
            n = e.name
            if n in _GETTERS:
                d = self.value(e.args[1])
                return self._bind(self.b.load(self._dim_ptr(self.handle(e.args[0]), d, _GETTERS[n])), e.type)
            if n == "_halide_buffer_get_type":
                return self._bind(self._field(self.handle(e.args[0]), F_TYPE), e.type)
            if n == "_halide_buffer_get_dimensions":
                return self._bind(self._field(self.handle(e.args[0]), F_DIMENSIONS), e.type)
            if n == "_halide_buffer_get_device_dirty":
                flags = self._field(self.handle(e.args[0]), F_FLAGS)
                bit = self.b.and_(flags, ir.Constant(I64, DEVICE_DIRTY))
                return self._bind(self.b.icmp_unsigned("!=", bit, ir.Constant(I64, 0)), e.type)
            if n == "_halide_buffer_is_bounds_query":
                return self._bind(self._is_bounds_query(self.handle(e.args[0])), e.type)
        if e.type.is_handle:
            return self._bind(self.b.ptrtoint(self.handle(e), I64), HType("uint", 64))
        if isinstance(e, (H.Cast, H.Reinterpret)) and e.value.type.is_handle:
            u64 = self._bind(self.b.ptrtoint(self.handle(e.value), I64), HType("uint", 64))
            return u64 if e.type == HType("uint", 64) else H.Cast(e.type, u64)
        if isinstance(e, H.Variable) and e.name not in self.cg.scalars and e.name in self.handles:
            return self._bind(self.b.ptrtoint(self.handles[e.name], I64), HType("uint", 64))
        changes = {}
        for f in dataclasses.fields(e):
            v = getattr(e, f.name)
            if isinstance(v, H.Expr):
                changes[f.name] = self.lower(v)
            elif isinstance(v, tuple) and v and all(isinstance(x, H.Expr) for x in v):
                changes[f.name] = tuple(self.lower(x) for x in v)
        return dataclasses.replace(e, **changes) if changes else e

    def value(self, e: H.Expr) -> ir.Value:
        return self.cg.scalar(self.lower(e), H.Evaluate(e))

    def _is_bounds_query(self, buf: ir.Value) -> ir.Value:
        host = self.b.icmp_unsigned("==", self.b.ptrtoint(self._field(buf, F_HOST), I64), ir.Constant(I64, 0))
        dev = self.b.icmp_unsigned("==", self._field(buf, F_DEVICE), ir.Constant(I64, 0))
        return self.b.and_(host, dev)

    # ---- statements ------------------------------------------------------------------------
    def _walk(self, s: H.Stmt) -> bool:
        """Emit the checks of `s` in order; at its first other statement call the kernel and return.
        True when every path through `s` has returned."""
        if isinstance(s, H.Block):
            return any(self._walk(x) for x in s.stmts)  # stops at the first one that returned
        if isinstance(s, H.LetStmt):
            if not self._let(s):
                return self._call_kernel()
            return self._walk(s.body)
        if isinstance(s, H.AssertStmt):
            try:
                ok = self.value(s.condition)
            except Unsupported:
                return self._call_kernel()
            self._assert(ok, s.message)
            return False
        if isinstance(s, H.Evaluate) and isinstance(s.value, H.Call) and s.value.name == "_halide_buffer_init":
            self._buffer_init(s.value)
            return False
        if isinstance(s, H.IfThenElse) and not _has_work(s):
            return self._if(s)
        if isinstance(s, H.IfThenElse) and _is_guard(s):
            return self._if(s)
        return self._call_kernel()

    def _let(self, s: H.LetStmt) -> bool:
        if s.value.type.is_handle:
            try:
                self.handles[s.name] = self.handle(s.value)
            except Unsupported:
                return False
            return True
        if s.value.type.is_vector:
            return False
        try:
            v = self.value(s.value)
        except Unsupported:
            return False
        self.cg.scalars[s.name] = (v, fpir_type(s.value.type))
        return True

    def _if(self, s: H.IfThenElse) -> bool:
        c = self.value(s.cond)
        then_b = self.fn.append_basic_block("then")
        else_b = self.fn.append_basic_block("else")
        after = self.fn.append_basic_block("endif")
        self.b.cbranch(c, then_b, else_b)
        done = []
        for block, branch in ((then_b, s.then_case), (else_b, s.else_case)):
            self.b.position_at_end(block)
            returned = self._walk(branch) if branch is not None else False
            if not returned:
                self.b.branch(after)
            done.append(returned)
        self.b.position_at_end(after)
        if all(done):
            self.b.unreachable()
            return True
        return False

    def _assert(self, ok: ir.Value, message: H.Expr) -> None:
        fail = self.fn.append_basic_block("check_failed")
        cont = self.fn.append_basic_block("check_ok")
        self.b.cbranch(ok, cont, fail)
        self.b.position_at_end(fail)
        code = self._report(message)
        self.b.ret(ir.Constant(I32, code))
        self.b.position_at_end(cont)

    def _report(self, message: H.Expr) -> int:
        """Format and report a `halide_error_*(...)` call's message; returns its error code."""
        if not isinstance(message, H.Call):
            self.fmt.report(self.b, self.msg, ["Assertion failed"], [])
            return error_code("")
        args = [a.value if isinstance(a, H.StringImm) else self._double(a) if a.type.is_float else self.value(a)
                for a in message.args]
        if message.name == "halide_error_access_out_of_bounds":
            self.fmt.report_out_of_bounds(self.b, self.fn, self.msg, args)
        else:
            m = message_for(message.name)
            pieces = m.pieces if m is not None else [f"{message.name} failed"]
            self.fmt.report(self.b, self.msg, pieces, args)
        return error_code(message.name)

    def _double(self, e: H.Expr) -> ir.Value:
        """A float message argument as a double (the `_f64` error calls take `float64(...)`), by
        codegen's float emission."""
        v = FloatEmitter(self.cg, H.Evaluate(e)).emit(self.lower(e))
        return v if isinstance(v.type, ir.DoubleType) else self.b.fpext(v, ir.DoubleType())

    def _buffer_init(self, call: H.Call) -> None:
        """Halide's `_halide_buffer_init(buf, shape, host, device, interface, code, bits, dims,
        make_struct(min, extent, stride, flags, ...), flags)` on a bounds query."""
        a = call.args
        buf = self.handle(a[0])
        shape = self.b.bitcast(self.handle(a[1]), ir.PointerType(DIMENSION_T))
        b = self.b
        b.store(self.handle(a[2]), self._field_ptr(buf, F_HOST))
        b.store(fit_int(b, self.value(a[3]), 64), self._field_ptr(buf, F_DEVICE))
        b.store(self.handle(a[4]), self._field_ptr(buf, F_INTERFACE))
        code = fit_int(b, self.value(a[5]), 32)
        bits = fit_int(b, self.value(a[6]), 32)
        t = b.or_(b.or_(code, b.shl(bits, ir.Constant(I32, 8))), ir.Constant(I32, 1 << 16))
        b.store(t, self._field_ptr(buf, F_TYPE))
        dims = a[7]
        b.store(fit_int(b, self.value(dims), 32), self._field_ptr(buf, F_DIMENSIONS))
        b.store(b.bitcast(shape, PTR), self._field_ptr(buf, F_DIM))
        b.store(ir.Constant(PTR, None), self._field_ptr(buf, F_PADDING))
        fields = a[8].args if isinstance(a[8], H.Call) and a[8].name == "make_struct" else ()
        if not fields and not (isinstance(dims, H.IntImm) and dims.value == 0):
            raise AbiError(f"bounds query shape {a[8]}")
        for i, f in enumerate(fields):
            p = b.gep(shape, [ir.Constant(I32, i // 4), ir.Constant(I32, i % 4)])
            b.store(fit_int(b, self.value(f), 32), p)
        b.store(fit_int(b, self.value(a[9]), 64), self._field_ptr(buf, F_FLAGS))

    def _call_kernel(self) -> bool:
        b = self.b
        args: list[ir.Value] = [b.bitcast(self.err, PTR)]
        for a, v in zip(self.args, self.fn.args):
            if a.kind == "scalar" and a.type.is_float:
                # the kernel takes a float parameter as its bit pattern (pitchfork.codegen.loop_nest),
                # a 16-bit one zero-extended in an i32 slot
                if a.type.bits == 16:
                    args.append(b.zext(b.bitcast(v, I16), I32))
                else:
                    args.append(b.bitcast(v, I64 if a.type.bits == 64 else I32))
                continue
            if a.kind == "scalar":
                args.append(fit_int(b, v, 64 if a.type.bits == 64 else 32, signed=a.type.code == "int"))
                continue
            args.append(self._field(v, F_HOST))
            for d in range(a.dimensions):
                for k in range(3):
                    args.append(b.load(self._dim_ptr(v, ir.Constant(I32, d), k)))
        b.store(ir.Constant(I32, 0), self.err)
        b.call(self.kernel, args)
        e = b.load(self.err)
        ok = self.fn.append_basic_block("kernel_ok")
        bad = self.fn.append_basic_block("kernel_failed")
        b.cbranch(b.icmp_signed("==", e, ir.Constant(I32, 0)), ok, bad)
        b.position_at_end(ok)
        b.ret(ir.Constant(I32, 0))
        # An assertion inside the loop nest: its text and its call's code (values are not known here).
        b.position_at_end(bad)
        default = self.fn.append_basic_block("kernel_unknown_error")
        sw = b.switch(e, default)
        for k, text in sorted(self.assertions.items()):
            blk = self.fn.append_basic_block(f"kernel_assert_{k}")
            sw.add_case(ir.Constant(I32, k), blk)
            b.position_at_end(blk)
            m = re.search(r"(halide_error_\w+)", text)
            self.fmt.report(b, self.msg, [f"{self.name}: assertion failed: {text}"], [])
            b.ret(ir.Constant(I32, error_code(m.group(1) if m else "")))
        b.position_at_end(default)
        self.fmt.report(b, self.msg, [f"{self.name}: assertion failed"], [])
        b.ret(ir.Constant(I32, error_code("")))
        return True

    def _argv(self) -> None:
        fn = ir.Function(self.module, ir.FunctionType(I32, [ir.PointerType(PTR)]), name=f"{self.name}_argv")
        b = ir.IRBuilder(fn.append_basic_block("entry"))
        vals = []
        for i, (a, t) in enumerate(zip(self.args, self.fn.function_type.args)):
            p = b.load(b.gep(fn.args[0], [ir.Constant(I32, i)]))
            vals.append(p if a.kind != "scalar" else b.load(b.bitcast(p, ir.PointerType(t))))
        b.ret(b.call(self.fn, vals))


    def _metadata(self) -> None:
        """`const struct halide_filter_metadata_t *name_metadata()`: version 1, the arguments' names,
        kinds, dimensions and types, a scalar's default / min / max / estimate and a buffer's
        (min, extent) estimates per dimension (`CapturedStmt.estimates`, as Halide's
        CodeGen_LLVM::embed_metadata_getter writes them: null where not set), the target string and
        the function name."""

        arg_t = ir.LiteralStructType([PTR, I32, I32, I32, PTR, PTR, PTR, PTR, PTR])
        null = ir.Constant(PTR, None)
        kinds = {"scalar": 0, "input_buffer": 1, "output_buffer": 2}
        entries = []
        estimates = {e.name: e for e in self.captured.estimates}
        for a in self.args:
            code = {"int": 0, "uint": 1, "float": 2, "handle": 3, "bfloat": 4}[a.type.code]
            t = code | a.type.bits << 8 | 1 << 16
            est = estimates.get(a.name)
            if est is None:
                scalars, buffer = [null] * 4, null
            elif a.kind == "scalar":
                scalars = [self._scalar_value(v) for v in (est.scalar_def, est.scalar_min, est.scalar_max,
                                                           est.scalar_estimate)]
                buffer = null
            else:
                buffer = self._buffer_estimates([v for pair in est.buffer for v in pair])
                scalars = [null] * 4
            entries.append(ir.Constant(arg_t, [self.fmt.cstring(re.sub(r"\$\d+$", "", a.name)),
                                               ir.Constant(I32, kinds[a.kind]), ir.Constant(I32, a.dimensions),
                                               ir.Constant(I32, t), *scalars, buffer]))
        arr_t = ir.ArrayType(arg_t, len(entries))
        arr = ir.GlobalVariable(self.module, arr_t, name=f"{self.name}.metadata_arguments")
        arr.global_constant, arr.linkage, arr.initializer = True, "internal", ir.Constant(arr_t, entries)
        meta_t = ir.LiteralStructType([I32, I32, PTR, PTR, PTR])
        target = codegen_target_string(self.captured.target)
        meta = ir.GlobalVariable(self.module, meta_t, name=f"{self.name}.metadata")
        meta.global_constant, meta.linkage = True, "internal"
        meta.initializer = ir.Constant(meta_t, [ir.Constant(I32, 1), ir.Constant(I32, len(entries)),
                                                arr.bitcast(PTR), self.fmt.cstring(target),
                                                self.fmt.cstring(self.name)])
        fn = ir.Function(self.module, ir.FunctionType(PTR, []), name=f"{self.name}_metadata")
        ir.IRBuilder(fn.append_basic_block("entry")).ret(meta.bitcast(PTR))

    def _constant(self, value: ir.Constant, what: str) -> ir.Constant:
        """A private constant global holding `value` (8-byte aligned, as Halide's), as an i8*."""
        g = ir.GlobalVariable(self.module, value.type, name=self.module.get_unique_name(f"{self.name}.{what}"))
        g.global_constant, g.linkage, g.initializer, g.align = True, "internal", value, 8
        return g.bitcast(PTR)

    def _scalar_value(self, bits: int | None) -> ir.Constant:
        """A `halide_scalar_value_t` (an 8-byte union) holding `bits` in its low bytes, zeros above
        (Halide's `[2 x i32] [v, 0]`, `[2 x float] [v, 0.0]`...: the same bytes on these
        little-endian targets), or null for an unset value."""
        if bits is None:
            return ir.Constant(PTR, None)
        signed = bits - (1 << 64) if bits >= 1 << 63 else bits  # a uint64 estimate's bits as an i64
        return self._constant(ir.Constant(I64, signed), "scalar_value")

    def _buffer_estimates(self, values: list[int | None]) -> ir.Constant:
        """`const int64_t *const *`: for each dimension a pointer to its min estimate and one to its
        extent estimate (null where unset); null for no dimensions, as Halide's."""
        if not values:
            return ir.Constant(PTR, None)
        ptrs = [ir.Constant(PTR, None) if v is None else self._constant(ir.Constant(I64, v), "estimate")
                for v in values]
        return self._constant(ir.Constant(ir.ArrayType(PTR, len(ptrs)), ptrs), "buffer_estimates")


def _has_work(s: H.Stmt) -> bool:
    """Whether `s` contains anything but lets, asserts and buffer inits (a loop, store, produce...)."""
    if isinstance(s, H.Block):
        return any(_has_work(x) for x in s.stmts)
    if isinstance(s, H.LetStmt):
        return _has_work(s.body)
    if isinstance(s, H.IfThenElse):
        return _has_work(s.then_case) or (s.else_case is not None and _has_work(s.else_case))
    if isinstance(s, H.AssertStmt):
        return False
    if isinstance(s, H.Evaluate):
        return not (isinstance(s.value, H.Call) and s.value.name == "_halide_buffer_init")
    return True


def _is_guard(s: H.IfThenElse) -> bool:
    """Halide's `if (!(is_bounds_query(a) || ...)) { checks; pipeline }`: the real work's guard."""
    return "_halide_buffer_is_bounds_query" in repr(s.cond) and s.else_case is None


# --------------------------------------------------------------------------------------------------
# The AOT module


def aot_ir(prog: CompiledPipeline) -> str:
    """LLVM IR text of the AOT module: the optimised kernel renamed `kernel_name` (internal) and the
    optimised Halide-ABI entry points, for `prog.target`."""
    from pitchfork.backend.machine import _parse

    if prog.module is None or prog.captured is None:
        raise AbiError(f"{prog.name} was compiled by Halide (fallback); use Halide's own AOT output")
    t = prog.module.target  # the machine it was compiled for (target features: pitchfork/targets/target_strings.py)
    stmt = prog.captured.parse()
    wrapper = ir.Module(name=f"{prog.name}.abi")
    wrapper.triple = t.triple
    try:
        EntryBuilder(prog.captured, stmt, prog.target, prog.name, prog.assertions, wrapper).build()
    except Unsupported as e:
        raise AbiError(f"{prog.name}: the Halide-ABI entry point cannot be built: {e}") from e
    wmod = _parse(str(wrapper), t)
    wmod.verify()
    # The entry is not run through LLVM's IR optimiser: it runs once per call, and the optimiser would
    # turn the formatting loops into libc calls (strlen, memset) that Hexagon has no library for.
    kmod = _parse(prog.module.optimized_ir, t)
    k = kmod.get_function(prog.name)
    k.name = kernel_name(prog.name)
    kmod.link_in(wmod)
    kmod.get_function(kernel_name(prog.name)).linkage = "internal"
    kmod.verify()
    return header_free_ir(str(kmod))


def aot_outputs(prog: CompiledPipeline) -> tuple[str, str, bytes]:
    """(`.ll` text, `.s` text, `.o` bytes) of the AOT module; `.s` and `.o` are what `llc -O3` makes
    of the `.ll` (no further optimisation)."""
    text = aot_ir(prog)
    return text, _aot_emit(prog, text, "asm"), _aot_emit(prog, text, "obj")  # type: ignore[return-value]


def aot_object(prog: CompiledPipeline) -> bytes:
    """The `.o` of `aot_outputs` alone (its assembly is not emitted)."""
    return _aot_emit(prog, aot_ir(prog), "obj")  # type: ignore[return-value]


def _aot_emit(prog: CompiledPipeline, text: str, kind: str) -> bytes | str:
    from pitchfork.backend.machine import _parse, _set_align_vectors, _shared_machine, emission_options

    assert prog.module is not None
    t = prog.module.target  # the machine it was compiled for (target features: pitchfork/targets/target_strings.py)
    if t.name == "hvx128":
        _set_align_vectors(prog.module.align_vectors)
    tm = _shared_machine(t, prog.module.opt)
    with emission_options(t, text):  # hvx128: i64-vector modules unpacketised, as compile_module does
        return tm.emit_assembly(_parse(text, t)) if kind == "asm" else tm.emit_object(_parse(text, t))


def header(prog: CompiledPipeline) -> str:
    """The C header for `prog`'s entry point (Halide's for a fallback)."""
    if prog.captured is not None and prog.module is not None:
        return header_text(prog.name, abi_arguments(prog.captured))
    import tempfile
    from pathlib import Path

    pipeline, args = prog._halide
    with tempfile.TemporaryDirectory() as d:
        f = Path(d) / f"{prog.name}.h"
        pipeline.compile_to_header(str(f), list(args), prog.name, halide_target(prog.halide_target))
        return f.read_text()


def static_library(members: list[tuple[str, bytes]], symbols: dict[str, int]) -> bytes:
    """A System V / GNU `ar` archive with its symbol index, as `ar rcs` writes it (GNU ld and lld
    need the index; binutils' `ar` cannot index Hexagon objects, so it is written here).
    `members` are (file name, bytes); `symbols` maps each defined global symbol to its member."""
    def header(name: str, size: int) -> bytes:
        h = name.ljust(16).encode() + b"0".ljust(12) + b"0".ljust(6) + b"0".ljust(6) + b"644".ljust(8) + \
            str(size).ljust(10).encode() + b"`\n"
        assert len(h) == 60
        return h

    # GNU long names: member names over 15 characters live in the "//" member, referenced as "/<offset>"
    longnames = b""
    member_names = []
    for name, _ in members:
        if len(name) <= 15:
            member_names.append(name + "/")
        else:
            member_names.append(f"/{len(longnames)}")
            longnames += name.encode() + b"/\n"
    long_member = (header("//", len(longnames)) + longnames + (b"\n" if len(longnames) % 2 else b"")) \
        if longnames else b""
    names = sorted(symbols)
    table_size = 4 + 4 * len(names) + sum(len(n) + 1 for n in names)
    first = 8 + 60 + table_size + (table_size % 2) + len(long_member)
    offsets, pos = [], first
    for name, data in members:
        offsets.append(pos)
        pos += 60 + len(data) + (len(data) % 2)
    table = len(names).to_bytes(4, "big") + b"".join(offsets[symbols[n]].to_bytes(4, "big") for n in names)
    table += b"".join(n.encode() + b"\0" for n in names)
    out = bytearray(b"!<arch>\n") + header("/", len(table)) + table + (b"\n" if len(table) % 2 else b"")
    out += long_member
    for member, (name, data) in zip(member_names, members):
        out += header(member, len(data)) + data + (b"\n" if len(data) % 2 else b"")
    return bytes(out)


__all__ = ["AbiArg", "AbiError", "EntryBuilder", "abi_arguments", "aot_ir", "aot_object", "aot_outputs",
           "header", "header_text", "kernel_name", "passes_as_half", "static_library"]


def library_symbols(name: str) -> list[str]:
    """The global symbols the AOT object defines."""
    return [name, f"{name}_argv", f"{name}_metadata", "halide_error"]


def write_library(prog: CompiledPipeline, out_dir: str | Path) -> dict[str, Path]:
    """Write `<name>.o`, `<name>.a`, `<name>.h`, `<name>.ll` and `<name>.s` (Halide's own outputs for
    a fallback: its object and static library carry its runtime). A pipeline with parallel loops
    calls `halide_do_par_for`: its `.a` holds Halide's runtime too (pitchfork/backend/halide_runtime.py),
    its `.o` links against a runtime the application supplies (as Halide's no_runtime objects)."""
    from pitchfork.backend.halide_runtime import runtime_object, uses_runtime

    d = Path(out_dir)
    d.mkdir(parents=True, exist_ok=True)
    paths = {k: d / f"{prog.name}.{k}" for k in ("o", "a", "h", "ll", "s")}
    if prog.is_fallback:
        pipeline, args = prog._halide
        t = halide_target(prog.halide_target)
        pipeline.compile_to_static_library(str(d / prog.name), list(args), prog.name, t)
        pipeline.compile_to_object(str(paths["o"]), list(args), prog.name, t)
        paths["ll"].write_text(prog.llvm_ir())
        paths["s"].write_text(prog.assembly())
        paths["h"].write_text(header(prog))
        return paths
    text, asm, obj = aot_outputs(prog)
    paths["ll"].write_text(text)
    paths["s"].write_text(asm)
    paths["o"].write_bytes(obj)
    paths["h"].write_text(header(prog))
    members = [(f"{prog.name}.o", obj)]
    symbols = dict.fromkeys(library_symbols(prog.name), 0)
    assert prog.module is not None
    if uses_runtime(prog.module.optimized_ir) and not has_feature(prog.halide_target, "no_runtime"):
        # Parallel loops call Halide's thread pool: the library carries Halide's runtime for the
        # target, as Halide's own static libraries do (unless the target has no_runtime). Every
        # runtime symbol is WEAK, so it links beside Halide's own libraries and their runtime.
        rt = runtime_object(prog.target).read_bytes()
        members.append(("halide_runtime.o", rt))
        for sym in defined_symbols(rt):
            symbols.setdefault(sym, 1)
    paths["a"].write_bytes(static_library(members, symbols))
    return paths


def defined_symbols(obj: bytes) -> list[str]:
    """The global and weak symbols an ELF object defines (for an archive's index), read by `nm`."""
    import shutil
    import subprocess
    import tempfile

    nm = shutil.which("nm")
    if nm is None:
        raise AbiError("nm (binutils) is needed to index Halide's runtime in the static library")
    with tempfile.NamedTemporaryFile(suffix=".o") as f:
        f.write(obj)
        f.flush()
        out = subprocess.run([nm, "-g", "--defined-only", "-P", f.name], capture_output=True, text=True, check=True)
    return [line.split()[0] for line in out.stdout.splitlines() if line.strip()]


_DROP_LINE = re.compile(r"^(; ModuleID = .*|source_filename = .*|; Function Attrs: .*|attributes #\d+ = .*|"
                        r"![\w.]+ = .*)$")
_ATTR_REF = re.compile(r"(?<=[)\s])#\d+(?=\s|$|\s*\{)")
_MD_ATTACH = re.compile(r",\s*![\w.]+ !\d+")


def header_free_ir(llvm_ir: str) -> str:
    """The optimised module without attribute groups, metadata, module id and source file name
    (see the module docstring); lines otherwise unchanged."""
    out: list[str] = []
    for line in llvm_ir.splitlines():
        if _DROP_LINE.match(line):
            continue
        line = _MD_ATTACH.sub("", line)
        line = _ATTR_REF.sub("", line).rstrip()
        if line.startswith(("define ", "declare ")):
            line = re.sub(r"\s+", " ", line)
        out.append(line)
    text = "\n".join(out).strip("\n") + "\n"
    return re.sub(r"\n{3,}", "\n\n", text)

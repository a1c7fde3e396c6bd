"""The little runtime a Halide-ABI entry point needs, emitted as LLVM IR next to it (no Halide runtime).

* `halide_error(void *user_context, const char *msg)`: a WEAK default that writes "Error: ", `msg` and
  a newline to stderr, as Halide's default handler does (libc `write` on x86/AArch64 Linux; the Linux `write` system call through `trap0(#1)` on
  Hexagon, where there is no libc). An application overrides it by defining its own `halide_error`, as
  with Halide's runtime (HalideRuntime.h: "you can also override it by simply defining your own
  halide_error"). Unlike Halide's default handler it never aborts: the entry point returns the error.
* Message formatting: the assertions in Halide's lowered statement end in calls such as
  `halide_error_bad_type("Input buffer input", input.type, 67585)`; Halide's runtime turns each into a
  message and an error code (`halide_error_code_t`). `MESSAGES` restates those messages as templates
  (literal text, and the call's arguments formatted as C `int`/`uint64_t`/`int64_t`, strings, a
  `halide_type_t` such as `uint8` / `int16x4`, or a double as `1.234560e+02`), and `Formatter` emits IR
  that fills a 1 KiB stack buffer from a template, calls `halide_error`, and yields the code. The message texts are checked
  against Halide 21's own runtime by tests/pitchfork/aot/test_abi.py and test_abi_float_ranges.py
  (both libraries in one driver). A double's formatting multiplies and divides doubles: on Hexagon
  those are __hexagon_muldf3 / __hexagon_divdf3 calls, as in Halide's own Hexagon library (its
  runtime's halide_double_to_string), which the toolchain's runtime library provides (the bare-metal
  qemu-hexagon harness does not: that case is not run there).

Every helper except `halide_error` has internal linkage, so several PITCHFORK libraries (and Halide's
own, whose runtime is weak too) link into one program.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Optional, Sequence, Union

from llvmlite import ir

I1, I8, I32, I64 = ir.IntType(1), ir.IntType(8), ir.IntType(32), ir.IntType(64)
PTR = ir.PointerType(I8)
MSG_BYTES = 1024

# halide_error_code_t (HalideRuntime.h, Halide 21)
ERROR_CODES: dict[str, int] = {
    "generic_error": -1, "explicit_bounds_too_small": -2, "bad_type": -3, "access_out_of_bounds": -4,
    "buffer_allocation_too_large": -5, "buffer_extents_too_large": -6,
    "constraints_make_required_region_smaller": -7, "constraint_violated": -8, "param_too_small": -9,
    "param_too_large": -10, "out_of_memory": -11, "buffer_argument_is_null": -12, "unaligned_host_ptr": -24,
    "requirement_failed": -27, "buffer_extents_negative": -28, "specialize_fail": -31, "host_is_null": -34,
    "bad_dimensions": -43, "device_dirty_with_no_device_support": -44, "storage_bound_too_small": -45,
}

# A template piece: literal text, or (format, argument index). Formats: "s" string, "i" C int,
# "i64" int64_t, "u64" uint64_t, "t" halide_type_t given as its 32 bits, "f64" a double as the
# runtime's Printer writes one (halide_double_to_string, scientific: `-2.500000e+00`).
Piece = Union[str, tuple[str, int]]


@dataclass(frozen=True)
class Message:
    code: int
    pieces: tuple[Piece, ...]


def _m(code: str, *pieces: Piece) -> Message:
    return Message(ERROR_CODES[code], tuple(pieces))


#: halide_error_<name> -> message template (Halide 21's runtime, src/runtime/errors.cpp)
MESSAGES: dict[str, Message] = {
    "halide_error_buffer_argument_is_null": _m("buffer_argument_is_null", "Buffer argument ", ("s", 0), " is nullptr"),
    "halide_error_bad_type": _m("bad_type", ("s", 0), " has type ", ("t", 2), " but type of the buffer passed in is ",
                                ("t", 1)),
    "halide_error_bad_dimensions": _m("bad_dimensions", ("s", 0), " requires a buffer of exactly ", ("i", 2),
                                      " dimensions, but the buffer passed in has ", ("i", 1), " dimensions"),
    "halide_error_buffer_extents_negative": _m("buffer_extents_negative", "The extents for buffer ", ("s", 0),
                                               " dimension ", ("i", 1), " is negative (", ("i", 2), ")"),
    "halide_error_constraint_violated": _m("constraint_violated", "Constraint violated: ", ("s", 0), " (", ("i", 1),
                                           ") == ", ("s", 2), " (", ("i", 3), ")"),
    "halide_error_buffer_allocation_too_large": _m("buffer_allocation_too_large", "Total allocation for buffer ",
                                                   ("s", 0), " is ", ("u64", 1),
                                                   ", which exceeds the maximum size of ", ("u64", 2)),
    "halide_error_buffer_extents_too_large": _m("buffer_extents_too_large", "Product of extents for buffer ",
                                                ("s", 0), " is ", ("i64", 1), ", which exceeds the maximum size of ",
                                                ("i64", 2)),
    "halide_error_device_dirty_with_no_device_support": _m(
        "device_dirty_with_no_device_support", "The buffer ", ("s", 0),
        " is dirty on device, but this pipeline was compiled with no support for device to host copies."),
    "halide_error_host_is_null": _m("host_is_null", "The host pointer of ", ("s", 0),
                                    " is null, but the pipeline will access it on the host."),
    "halide_error_param_too_small_i64": _m("param_too_small", "Parameter ", ("s", 0), " is ", ("i64", 1),
                                           " but must be at least ", ("i64", 2)),
    "halide_error_param_too_small_u64": _m("param_too_small", "Parameter ", ("s", 0), " is ", ("u64", 1),
                                           " but must be at least ", ("u64", 2)),
    "halide_error_param_too_large_i64": _m("param_too_large", "Parameter ", ("s", 0), " is ", ("i64", 1),
                                           " but must be at most ", ("i64", 2)),
    "halide_error_param_too_large_u64": _m("param_too_large", "Parameter ", ("s", 0), " is ", ("u64", 1),
                                           " but must be at most ", ("u64", 2)),
    "halide_error_param_too_small_f64": _m("param_too_small", "Parameter ", ("s", 0), " is ", ("f64", 1),
                                           " but must be at least ", ("f64", 2)),
    "halide_error_param_too_large_f64": _m("param_too_large", "Parameter ", ("s", 0), " is ", ("f64", 1),
                                           " but must be at most ", ("f64", 2)),
    "halide_error_unaligned_host_ptr": _m("unaligned_host_ptr", "The host pointer of ", ("s", 0),
                                          " is not aligned to a ", ("i", 1), " bytes boundary."),
    "halide_error_requirement_failed": _m("requirement_failed", "Requirement Failed: (", ("s", 0), ") ", ("s", 1)),
    "halide_error_explicit_bounds_too_small": _m("explicit_bounds_too_small", "Bounds given for ", ("s", 1), " in ",
                                                 ("s", 0), " (from ", ("i", 2), " to ", ("i", 3),
                                                 ") do not cover required region (from ", ("i", 4), " to ",
                                                 ("i", 5), ")"),
    "halide_error_out_of_memory": _m("out_of_memory", "Out of memory (halide_malloc returned nullptr)"),
}
#: access_out_of_bounds(name, dim, min_touched, max_touched, min_valid, max_valid) picks one of two texts
OUT_OF_BOUNDS_BEFORE = (("s", 0), " is accessed at ", ("i", 2), ", which is before the min (", ("i", 4),
                        ") in dimension ", ("i", 1))
OUT_OF_BOUNDS_BEYOND = (("s", 0), " is accessed at ", ("i", 3), ", which is beyond the max (", ("i", 5),
                        ") in dimension ", ("i", 1))


def error_code(call_name: str) -> int:
    """The halide_error_code_t a `halide_error_*` runtime call returns (generic_error if unknown)."""
    if call_name == "halide_error_access_out_of_bounds":
        return ERROR_CODES["access_out_of_bounds"]
    m = MESSAGES.get(call_name)
    return m.code if m is not None else ERROR_CODES["generic_error"]


#: An evaluated argument: an IR integer (any width; extended per the piece's format), an IR double
#: (for "f64") or a string.
Arg = Union[ir.Value, str]


class Formatter:
    """Emits, into `module`, the internal formatting helpers and the weak `halide_error` once, and per
    failing assertion the code that builds its message in `buf` and reports it."""

    def __init__(self, module: ir.Module, hexagon: bool) -> None:
        self.module = module
        self.hexagon = hexagon
        self._strings: dict[str, ir.GlobalVariable] = {}
        self.halide_error = self._halide_error()
        self.append_str = self._append_str()
        self.append_digits = self._append_digits()
        self.append_u64 = self._append_u64()
        self.append_i64 = self._append_i64()
        self.append_type = self._append_type()
        # emitted on first use: its double arithmetic is a library call on Hexagon
        self._append_f64: Optional[ir.Function] = None

    # ---- constants -------------------------------------------------------------------------
    def cstring(self, text: str) -> ir.Value:
        g = self._strings.get(text)
        if g is None:
            data = bytearray(text.encode()) + b"\0"
            ty = ir.ArrayType(I8, len(data))
            g = ir.GlobalVariable(self.module, ty, name=f".pf.str.{len(self._strings)}")
            g.global_constant = True
            g.linkage = "private"
            g.unnamed_addr = True
            g.initializer = ir.Constant(ty, data)
            self._strings[text] = g
        return g.bitcast(PTR)

    # ---- report ----------------------------------------------------------------------------
    def report(self, b: ir.IRBuilder, buf: ir.Value, pieces: Sequence[Piece], args: Sequence[Arg]) -> None:
        """Fill `buf` from the template and call halide_error(NULL, buf)."""
        pos: ir.Value = ir.Constant(I32, 0)
        for p in pieces:
            if isinstance(p, str):
                pos = b.call(self.append_str, [buf, pos, self.cstring(p)])
                continue
            fmt, i = p
            a = args[i] if i < len(args) else "?"
            if isinstance(a, str) or fmt == "s":
                pos = b.call(self.append_str, [buf, pos, self.cstring(a if isinstance(a, str) else "?")])
            elif fmt == "t":
                pos = b.call(self.append_type, [buf, pos, fit_int(b, a, 32, signed=False)])
            elif fmt == "f64":
                if self._append_f64 is None:
                    self._append_f64 = self._append_double()
                pos = b.call(self._append_f64, [buf, pos, a])
            elif fmt == "u64":
                pos = b.call(self.append_u64, [buf, pos, fit_int(b, a, 64, signed=False)])
            elif fmt == "i64":
                pos = b.call(self.append_i64, [buf, pos, fit_int(b, a, 64, signed=True)])
            else:  # C int: the low 32 bits, signed
                v = fit_int(b, a, 32, signed=True)
                pos = b.call(self.append_i64, [buf, pos, b.sext(v, I64)])
        b.store(ir.Constant(I8, 0), b.gep(buf, [pos]))
        b.call(self.halide_error, [ir.Constant(PTR, None), buf])

    def report_out_of_bounds(self, b: ir.IRBuilder, fn: ir.Function, buf: ir.Value, args: Sequence[Arg]) -> None:
        """halide_error_access_out_of_bounds: 'before the min' if min_touched < min_valid, else 'beyond
        the max' if max_touched > max_valid, else an empty message (as Halide's runtime does)."""
        def i32(k: int) -> ir.Value:
            a = args[k]
            return fit_int(b, a, 32, signed=True) if not isinstance(a, str) else ir.Constant(I32, 0)

        before = fn.append_basic_block("oob_before")
        not_before = fn.append_basic_block("oob_not_before")
        beyond = fn.append_basic_block("oob_beyond")
        empty = fn.append_basic_block("oob_empty")
        done = fn.append_basic_block("oob_done")
        b.cbranch(b.icmp_signed("<", i32(2), i32(4)), before, not_before)
        b.position_at_end(not_before)
        b.cbranch(b.icmp_signed(">", i32(3), i32(5)), beyond, empty)
        for block, pieces in ((before, OUT_OF_BOUNDS_BEFORE), (beyond, OUT_OF_BOUNDS_BEYOND)):
            b.position_at_end(block)
            self.report(b, buf, pieces, args)
            b.branch(done)
        b.position_at_end(empty)
        self.report(b, buf, (), args)
        b.branch(done)
        b.position_at_end(done)

    # ---- the weak default halide_error -----------------------------------------------------
    def _halide_error(self) -> ir.Function:
        fn = ir.Function(self.module, ir.FunctionType(ir.VoidType(), [PTR, PTR]), name="halide_error")
        fn.linkage = "weak"
        b = ir.IRBuilder(fn.append_basic_block("entry"))
        msg = fn.args[1]
        prefix = "Error: "  # as Halide's default handler prints (which then aborts; this one returns)
        self._write2(b, self.cstring(prefix), ir.Constant(I64, len(prefix)))
        n = self._strlen(b, fn, msg)
        self._write2(b, msg, n)
        nl = b.alloca(I8)
        b.store(ir.Constant(I8, 10), nl)
        self._write2(b, nl, ir.Constant(I64, 1))
        b.ret_void()
        return fn

    def _write2(self, b: ir.IRBuilder, p: ir.Value, n: ir.Value) -> None:
        if self.hexagon:
            # Linux write(2, p, n) under qemu-hexagon (no libc on Hexagon): `{ r6 = #64 } { trap0(#1) }
            # { jumpr r31 }` as machine code in a text section (llvmlite has no Hexagon assembler for
            # inline asm); arguments arrive in r0-r2 by the calling convention.
            sys_write = self.module.globals.get("pf_hexagon_sys_write")
            if sys_write is None:
                code = bytes.fromhex("06c80078" "04c00054" "00c09f52")
                ty = ir.ArrayType(I8, len(code))
                sys_write = ir.GlobalVariable(self.module, ty, name="pf_hexagon_sys_write")
                sys_write.global_constant = True
                sys_write.linkage = "internal"
                sys_write.section = ".text.pf_hexagon_sys_write"
                sys_write.align = 4
                sys_write.initializer = ir.Constant(ty, bytearray(code))
            fty = ir.FunctionType(I32, [I32, PTR, I32])
            b.call(b.bitcast(sys_write, ir.PointerType(fty)), [ir.Constant(I32, 2), p, b.trunc(n, I32)])
            return
        write = self.module.globals.get("write")
        if write is None:
            write = ir.Function(self.module, ir.FunctionType(I64, [I32, PTR, I64]), name="write")
        b.call(write, [ir.Constant(I32, 2), p, n])

    def _strlen(self, b: ir.IRBuilder, fn: ir.Function, s: ir.Value) -> ir.Value:
        pre = b.block
        loop = fn.append_basic_block("len")
        done = fn.append_basic_block("len_done")
        b.branch(loop)
        b.position_at_end(loop)
        i = b.phi(I64)
        i.add_incoming(ir.Constant(I64, 0), pre)
        c = b.load(b.gep(s, [i]))
        nxt = b.add(i, ir.Constant(I64, 1))
        i.add_incoming(nxt, loop)
        b.cbranch(b.icmp_unsigned("==", c, ir.Constant(I8, 0)), done, loop)
        b.position_at_end(done)
        return i

    # ---- formatting helpers: (buf, pos, value) -> new pos; never write past MSG_BYTES - 1 ---
    def _helper(self, name: str, value_type: ir.Type,
                body: Callable[[ir.IRBuilder, ir.Function, ir.Value, ir.Value, ir.Value], ir.Value]) -> ir.Function:
        fn = ir.Function(self.module, ir.FunctionType(I32, [PTR, I32, value_type]), name=name)
        fn.linkage = "internal"
        b = ir.IRBuilder(fn.append_basic_block("entry"))
        b.ret(body(b, fn, *fn.args))
        return fn

    def _put_char(self, b: ir.IRBuilder, buf: ir.Value, pos: ir.Value, c: ir.Value) -> ir.Value:
        """buf[pos] = c if there is room; returns pos + (1 if written)."""
        room = b.icmp_signed("<", pos, ir.Constant(I32, MSG_BYTES - 1))
        safe = b.select(room, pos, ir.Constant(I32, MSG_BYTES - 1))
        old = b.load(b.gep(buf, [safe]))
        b.store(b.select(room, c, old), b.gep(buf, [safe]))
        return b.add(pos, b.zext(room, I32))

    def _append_str(self) -> ir.Function:
        def body(b: ir.IRBuilder, fn: ir.Function, buf: ir.Value, pos: ir.Value, s: ir.Value) -> ir.Value:
            pre = b.block
            loop = fn.append_basic_block("loop")
            step = fn.append_basic_block("step")
            done = fn.append_basic_block("done")
            b.branch(loop)
            b.position_at_end(loop)
            i = b.phi(I32)
            p = b.phi(I32)
            i.add_incoming(ir.Constant(I32, 0), pre)
            p.add_incoming(pos, pre)
            c = b.load(b.gep(s, [i]))
            b.cbranch(b.icmp_unsigned("==", c, ir.Constant(I8, 0)), done, step)
            b.position_at_end(step)
            p2 = self._put_char(b, buf, p, c)
            i.add_incoming(b.add(i, ir.Constant(I32, 1)), step)
            p.add_incoming(p2, step)
            b.branch(loop)
            b.position_at_end(done)
            return p
        return self._helper("pf_append_str", PTR, body)

    def _append_digits(self) -> ir.Function:
        """pf_append_digits(buf, pos, v, min_digits): `v` in decimal with at least `min_digits`
        digits, zero-padded (halide_uint64_to_string)."""
        fn = ir.Function(self.module, ir.FunctionType(I32, [PTR, I32, I64, I32]), name="pf_append_digits")
        fn.linkage = "internal"
        buf, pos, v, min_digits = fn.args
        b = ir.IRBuilder(fn.append_basic_block("entry"))
        digits = b.alloca(ir.ArrayType(I8, 32))
        d0 = b.gep(digits, [ir.Constant(I32, 0), ir.Constant(I32, 0)])
        pre = b.block
        gen = fn.append_basic_block("digits")
        emit = fn.append_basic_block("emit")
        out = fn.append_basic_block("out")
        done = fn.append_basic_block("done")
        b.branch(gen)
        b.position_at_end(gen)  # least significant digit first; at least one digit
        x = b.phi(I64)
        n = b.phi(I32)
        x.add_incoming(v, pre)
        n.add_incoming(ir.Constant(I32, 0), pre)
        ten = ir.Constant(I64, 10)
        b.store(b.trunc(b.add(b.urem(x, ten), ir.Constant(I64, 48)), I8), b.gep(d0, [n]))
        q = b.udiv(x, ten)
        n1 = b.add(n, ir.Constant(I32, 1))
        x.add_incoming(q, gen)
        n.add_incoming(n1, gen)
        more = b.or_(b.icmp_unsigned("!=", q, ir.Constant(I64, 0)), b.icmp_signed("<", n1, min_digits))
        b.cbranch(more, gen, emit)
        b.position_at_end(emit)
        b.branch(out)
        b.position_at_end(out)
        k = b.phi(I32)
        p = b.phi(I32)
        k.add_incoming(n1, emit)
        p.add_incoming(pos, emit)
        k1 = b.sub(k, ir.Constant(I32, 1))
        p1 = self._put_char(b, buf, p, b.load(b.gep(d0, [k1])))
        k.add_incoming(k1, out)
        p.add_incoming(p1, out)
        b.cbranch(b.icmp_signed("==", k1, ir.Constant(I32, 0)), done, out)
        b.position_at_end(done)
        b.ret(p1)
        return fn

    def _append_u64(self) -> ir.Function:
        def body(b: ir.IRBuilder, fn: ir.Function, buf: ir.Value, pos: ir.Value, v: ir.Value) -> ir.Value:
            return b.call(self.append_digits, [buf, pos, v, ir.Constant(I32, 1)])
        return self._helper("pf_append_u64", I64, body)

    def _append_double(self) -> ir.Function:
        """pf_append_f64(buf, pos, v): halide_double_to_string(.., v, scientific=1), which Halide's
        runtime Printer uses for a double, step by step: nan / inf / signed zero by name; else the
        sign, v scaled by 10 into [1, 10) (`v *= 10` while below 1, `v /= 10` while 10 or more), then
        (uint64)(v * 1e6 + 0.5) as one digit, '.', six digits, and `e+NN` / `e-NN`. The multiply-add
        is llvm.fmuladd, as clang emits it from the runtime's C (fused where the target has FMA)."""
        F64 = ir.DoubleType()

        def body(b: ir.IRBuilder, fn: ir.Function, buf: ir.Value, pos: ir.Value, v: ir.Value) -> ir.Value:
            bits = b.bitcast(v, I64)
            mantissa = b.and_(bits, ir.Constant(I64, (1 << 52) - 1))
            exponent = b.and_(b.lshr(bits, ir.Constant(I64, 52)), ir.Constant(I64, 2047))
            negative = b.icmp_signed("<", bits, ir.Constant(I64, 0))
            special = fn.append_basic_block("special")
            finite = fn.append_basic_block("finite")
            number = fn.append_basic_block("number")
            has_mantissa = b.icmp_unsigned("!=", mantissa, ir.Constant(I64, 0))
            is_zero = b.and_(b.icmp_unsigned("==", exponent, ir.Constant(I64, 0)), b.not_(has_mantissa))
            b.cbranch(b.icmp_unsigned("==", exponent, ir.Constant(I64, 2047)), special, finite)
            b.position_at_end(special)  # nan / inf, signed
            name = b.select(has_mantissa, b.select(negative, self.cstring("-nan"), self.cstring("nan")),
                            b.select(negative, self.cstring("-inf"), self.cstring("inf")))
            b.ret(b.call(self.append_str, [buf, pos, name]))
            b.position_at_end(finite)
            zero = fn.append_basic_block("zero")
            b.cbranch(is_zero, zero, number)
            b.position_at_end(zero)
            name = b.select(negative, self.cstring("-0.000000e+00"), self.cstring("0.000000e+00"))
            b.ret(b.call(self.append_str, [buf, pos, name]))
            b.position_at_end(number)
            # (the '-' is stored either way: a positive number's first digit overwrites it)
            p0 = b.select(negative, self._put_char(b, buf, pos, ir.Constant(I8, ord("-"))), pos)
            mag = b.select(negative, b.fneg(v), v)
            # while (arg < 1) { arg *= 10; e--; }  then  while (arg >= 10) { arg /= 10; e++; }
            ten = ir.Constant(F64, 10.0)
            one = ir.Constant(F64, 1.0)
            loops = []
            for cond, step, de in (("<", b.fmul, -1), (">=", b.fdiv, 1)):
                pre = b.block
                head = fn.append_basic_block("scale")
                loop = fn.append_basic_block("scale_step")
                after = fn.append_basic_block("scaled")
                b.branch(head)
                b.position_at_end(head)
                x = b.phi(F64)
                e = b.phi(I32)
                x.add_incoming(mag, pre)
                e.add_incoming(loops[-1][1] if loops else ir.Constant(I32, 0), pre)
                b.cbranch(b.fcmp_ordered(cond, x, one if cond == "<" else ten), loop, after)
                b.position_at_end(loop)
                x.add_incoming(step(x, ten), loop)
                e.add_incoming(b.add(e, ir.Constant(I32, de)), loop)
                b.branch(head)
                b.position_at_end(after)
                mag = x
                loops.append((x, e))
            e10 = loops[-1][1]
            fmuladd = self.module.globals.get("llvm.fmuladd.f64") or ir.Function(
                self.module, ir.FunctionType(F64, [F64, F64, F64]), name="llvm.fmuladd.f64")
            fixed = b.fptoui(b.call(fmuladd, [mag, ir.Constant(F64, 1e6), ir.Constant(F64, 0.5)]), I64)
            scale = ir.Constant(I64, 1000000)
            top = b.udiv(fixed, scale)
            p = b.call(self.append_digits, [buf, p0, top, ir.Constant(I32, 1)])
            p = self._put_char(b, buf, p, ir.Constant(I8, ord(".")))
            p = b.call(self.append_digits, [buf, p, b.sub(fixed, b.mul(top, scale)), ir.Constant(I32, 6)])
            below = b.icmp_signed("<", e10, ir.Constant(I32, 0))
            p = b.call(self.append_str, [buf, p, b.select(below, self.cstring("e-"), self.cstring("e+"))])
            mag_e = b.select(below, b.sub(ir.Constant(I32, 0), e10), e10)
            return b.call(self.append_digits, [buf, p, b.sext(mag_e, I64), ir.Constant(I32, 2)])
        return self._helper("pf_append_f64", ir.DoubleType(), body)

    def _append_i64(self) -> ir.Function:
        def body(b: ir.IRBuilder, fn: ir.Function, buf: ir.Value, pos: ir.Value, v: ir.Value) -> ir.Value:
            neg = b.icmp_signed("<", v, ir.Constant(I64, 0))
            pre = b.block
            minus = fn.append_basic_block("minus")
            digits = fn.append_basic_block("digits")
            b.cbranch(neg, minus, digits)
            b.position_at_end(minus)
            pm = self._put_char(b, buf, pos, ir.Constant(I8, ord("-")))
            b.branch(digits)
            b.position_at_end(digits)
            p = b.phi(I32)
            p.add_incoming(pos, pre)
            p.add_incoming(pm, minus)
            # the magnitude: 0 - v read unsigned is right for INT64_MIN too
            mag = b.select(neg, b.sub(ir.Constant(I64, 0), v), v)
            return b.call(self.append_u64, [buf, p, mag])
        return self._helper("pf_append_i64", I64, body)

    def _append_type(self) -> ir.Function:
        def body(b: ir.IRBuilder, fn: ir.Function, buf: ir.Value, pos: ir.Value, t: ir.Value) -> ir.Value:
            code = b.and_(t, ir.Constant(I32, 0xFF))
            bits = b.and_(b.lshr(t, ir.Constant(I32, 8)), ir.Constant(I32, 0xFF))
            lanes = b.lshr(t, ir.Constant(I32, 16))
            name = self.cstring("bad_type_code")
            for c, text in ((4, "bfloat"), (3, "handle"), (2, "float"), (1, "uint"), (0, "int")):
                name = b.select(b.icmp_unsigned("==", code, ir.Constant(I32, c)), self.cstring(text), name)
            p = b.call(self.append_str, [buf, pos, name])
            p = b.call(self.append_u64, [buf, p, b.zext(bits, I64)])
            vec = fn.append_basic_block("vector")
            done = fn.append_basic_block("done")
            pre = b.block
            b.cbranch(b.icmp_unsigned("!=", lanes, ir.Constant(I32, 1)), vec, done)
            b.position_at_end(vec)
            p2 = b.call(self.append_str, [buf, p, self.cstring("x")])
            p2 = b.call(self.append_u64, [buf, p2, b.zext(lanes, I64)])
            b.branch(done)
            b.position_at_end(done)
            out = b.phi(I32)
            out.add_incoming(p, pre)
            out.add_incoming(p2, vec)
            return out
        return self._helper("pf_append_type", I32, body)


def fit_int(b: ir.IRBuilder, v: ir.Value, bits: int, signed: bool = True) -> ir.Value:
    """An integer value resized to `bits` (truncated, or extended by its C source signedness; an i1
    is always zero-extended)."""
    w = v.type.width
    if w == bits:
        return v
    if w > bits:
        return b.trunc(v, ir.IntType(bits))
    return b.sext(v, ir.IntType(bits)) if signed and w > 1 else b.zext(v, ir.IntType(bits))


def message_for(call_name: str) -> Optional[Message]:
    return MESSAGES.get(call_name)

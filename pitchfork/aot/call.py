"""Binding a compiled pipeline's arguments and calling its kernel (the run-time half of `api.py`).

`bind(...)` turns the user's values (numpy arrays, `hl.Buffer`s, ints) into a `PreparedCall`: the
kernel's argument list (buffer pointers with (min, extent, stride) per dimension, scalar values) and
the output arrays. On x86 the kernel is called in process through ctypes with the arrays' own memory
(zero copy); elsewhere, or with `check=True`, through `pitchfork.backend.run.run_calls` (copies, guard
bytes around outputs, inputs verified unchanged; under qemu for arm64/hvx128).

Invariants that make the kernel's `noalias` promise true for every call made here:
* an input array is copied (once, here) when it is not dense (one block of memory in some axis order:
  C-contiguous, or a transposed view such as an interleaved image's) or not aligned to its element
  size, or when it may share memory with an output; a dense one is passed with its own strides;
* outputs that may share memory with each other are refused (`ValueError`);
* arrays stay referenced by the `PreparedCall` while the kernel can run.

Output arrays are laid out as the statement's stride constraints ask (`output_layout`: an interleaved
output, `f.output_buffer().dim(0).set_stride(3)` and `dim(2).set_stride(1)`, is allocated interleaved,
as Halide's realize allocates it after its bounds query), planar otherwise.

Output arrays of `prog(...)` (no `out=`) are recycled: a fresh multi-megabyte array costs the kernel
a page fault and a zero-fill per page on first touch (blur3x3 at 8192x8192: 2x the kernel's own
time), so the pipeline keeps the output array of its last call and hands it out again when, and only
when, nothing else references it any more (its reference count: a view, a memoryview or any name
the caller still holds keeps it alive and makes the next call allocate a new one). A reused array is
taken out of the pool while a call writes it, so concurrent calls never share one.
"""

from __future__ import annotations

import ctypes
import re
import sys
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Optional, Sequence

import numpy as np

from pitchfork.aot import output_bounds
from pitchfork.backend.harness import dense
from pitchfork.codegen.base import buffer_dtype
from pitchfork.frontend.params import scalar_value

if TYPE_CHECKING:
    from pitchfork.api import CompiledPipeline



@dataclass(frozen=True)
class CallPlan:
    """What binding needs from a compiled pipeline, computed once: per argument ("scalar", name, Halide
    type code, bits) or ("buffer", name, numpy dtype, dimensions); per output (name, dtype, dims)."""

    arguments: tuple[tuple[str, str, Any, int], ...]
    outputs: tuple[tuple[str, np.dtype, int], ...]
    kinds: tuple[str, ...]  # the kernel's parameter kinds ("p", "i32", "i64"), error slot first
    #: per output, its stride constraints (see `output_layout`)
    strides: tuple[dict[int, int | tuple[str, int]], ...] = ()
    #: per output, how to answer Halide's bounds query for it (`_grown`), None where it never grows it
    growth: tuple[Optional[Growth], ...] = ()


@dataclass(frozen=True)
class Growth:
    """How a call answers Halide's bounds query for one output: the query, where each value it needs
    comes from in a bound call (("a", i): the kernel argument i after the error slot; ("min" /
    "extent" / "stride", d): the output's requested region), and the answers so far, by those values
    and the requested region."""

    queries: output_bounds.Queries
    query: output_bounds.OutputQuery
    sources: tuple[tuple[str, int], ...]
    memo: dict[Any, Any] = field(default_factory=dict, compare=False)


def plan_of(prog: CompiledPipeline) -> CallPlan:
    plan = prog._call_plan
    if plan is None:
        cap = prog.captured
        assert cap is not None
        args: list[tuple[str, str, Any, int]] = []
        kinds = ["p"]
        # where each integer value a bounds query may read sits among a bound call's kernel arguments
        # (the position in `kinds` less the error slot)
        where: dict[str, tuple[str, int]] = {}
        for a in cap.arguments:
            if a.kind == "scalar":
                args.append(("scalar", a.name, a.type.code, a.type.bits))
                if not a.type.is_float:
                    where[a.name] = ("a", len(kinds) - 1)
                kinds.append("i64" if a.type.bits == 64 else "i32")
            else:
                args.append(("buffer", a.name, buffer_dtype(a.type.elem), a.dimensions))
                for d in range(a.dimensions):
                    for j, f in enumerate(("min", "extent", "stride")):
                        where[f"{a.name}.{f}.{d}"] = ("a", len(kinds) + 3 * d + j)
                kinds += ["p"] + ["i32"] * (3 * a.dimensions)
        outs = tuple((o.name, buffer_dtype(o.types[0].elem), o.dimensions) for o in cap.output_buffers)
        for oname, _, dims in outs:
            kinds += ["p"] + ["i32"] * (3 * dims)
            where.update({f"{oname}.{f}.{d}": (f, d) for d in range(dims) for f in ("min", "extent", "stride")})
        strides = tuple(stride_constraints(cap.text, o.name) for o in cap.output_buffers)
        plan = prog._call_plan = CallPlan(tuple(args), outs, tuple(kinds), strides, _growth(cap.text, outs, where))
    return plan


def _growth(statement: str, outs: Sequence[tuple[str, np.dtype, int]], where: dict[str, tuple[str, int]]
            ) -> tuple[Optional[Growth], ...]:
    """Per output, how a call answers its bounds query, or None when the query never grows it or needs
    a value a call does not give (a float parameter, say): then the output is allocated as requested."""
    q = output_bounds.queries(statement, tuple((o[0], o[2]) for o in outs))
    growth: list[Optional[Growth]] = []
    for oname, _, _ in outs:
        oq = next((o for o in q.outputs if o.output == oname), None)
        if oq is None or not all(n in where for n in oq.needs):
            growth.append(None)
        else:
            growth.append(Growth(q, oq, tuple(where[n] for n in oq.needs)))
    return tuple(growth)


#: Halide's check of a constant stride constraint: `halide_error_constraint_violated("f.stride.0",
#: f.stride.0, "3", 3)` (the required value printed as text: an integer or another field's name)
_STRIDE_CHECK = re.compile(r'halide_error_constraint_violated\("([^"]+)\.stride\.(\d+)", [^,]+, "([^"]+)"')


def stride_constraints(statement: str, buffer: str) -> dict[int, int | tuple[str, int]]:
    """The stride constraints Halide checks on `buffer` in a captured statement: dimension -> an
    integer, or ("extent", d) for a stride equal to the buffer's extent in dimension d."""
    out: dict[int, int | tuple[str, int]] = {}
    for m in _STRIDE_CHECK.finditer(statement):
        if m.group(1) != buffer:
            continue
        text = m.group(3)
        ext = re.fullmatch(re.escape(buffer) + r"\.extent\.(\d+)", text)
        if re.fullmatch(r"\d+", text):
            out[int(m.group(2))] = int(text)
        elif ext is not None:
            out[int(m.group(2))] = ("extent", int(ext.group(1)))
    return out


def output_layout(constraints: dict[int, int | tuple[str, int]], size: Sequence[int]) -> Optional[list[int]]:
    """The Halide dimensions of an output from innermost to outermost in memory, so that a dense
    array laid out so meets every stride constraint: the dimensions constrained to stride 1 first,
    then the rest in order; None when the planar layout (dimension 0 innermost) does, or when no
    order tried does (the kernel's own check then reports the constraint)."""
    def meets(order: list[int]) -> bool:
        stride, strides = 1, {}
        for d in order:
            strides[d] = stride
            stride *= size[d]
        return all(strides[d] == (size[c[1]] if isinstance(c, tuple) else c) for d, c in constraints.items())

    planar = list(range(len(size)))
    if not constraints or meets(planar):
        return None
    order = [d for d in planar if constraints.get(d) == 1] + [d for d in planar if constraints.get(d) != 1]
    return order if meets(order) else None


def new_output(size: Sequence[int], dtype: Any, order: Optional[list[int]]) -> np.ndarray:
    """A new output array of Halide extents `size` (numpy shape reversed), laid out with the Halide
    dimensions `order` from innermost to outermost (None: planar, C-contiguous)."""
    n = len(size)
    if order is None:
        return np.empty(tuple(reversed(size)), dtype=dtype)
    outer_first = list(reversed(order))
    block = np.empty([size[d] for d in outer_first], dtype=dtype)
    return np.transpose(block, [outer_first.index(n - 1 - i) for i in range(n)])


def _kernel(prog: CompiledPipeline) -> Any:
    """The x86 JIT'd function as a ctypes callable (cached on the pipeline)."""
    fn = prog._kernel_fn
    if fn is None:
        from pitchfork.backend.run import _jit

        assert prog.module is not None
        fn = prog._kernel_fn = _jit([prog.module]).function(prog.name, plan_of(prog).kinds)
    return fn


@dataclass(eq=False)
class PreparedCall:
    """One bound call of a compiled pipeline: `call()` runs the kernel on the bound arrays and returns
    the outputs (the same arrays every time, overwritten). `outputs[i]` is output i (numpy order)."""

    prog: CompiledPipeline
    #: the kernel's arguments after the error slot: ("p", array) | ("i32"/"i64", int)
    args: list[tuple[str, Any]]
    outputs: list[np.ndarray]
    check: bool = False
    #: per output, the window of `outputs[i]` the caller asked for (numpy slices), or None for all of
    #: it: an output grown to the region Halide's bounds query asks for (aot/output_bounds.py)
    crops: Optional[list[Optional[tuple[slice, ...]]]] = None
    _err: np.ndarray = field(default_factory=lambda: np.zeros(1, np.int32))
    #: x86 without checks: (the kernel through a prototype without parameter types, its C arguments,
    #: the error slot as a ctypes int)
    _direct: Optional[tuple[Any, tuple[Any, ...], Any]] = None

    def __post_init__(self) -> None:
        if self.empty:
            return
        if self.prog.target == "x86-avx2" and not self.check:
            # The arguments are converted to C values once, here, and the kernel is called through a
            # prototype without parameter types, so a call only copies them (each by its own ctypes
            # type: the same C types the declared prototype has). Why: a call's Python part runs with
            # cold caches after a kernel that streamed megabytes through them; between two calls of
            # blur's kernel (1536x2560, 2 threads) 27-28 us passed with the declared prototype
            # converting all 15 arguments each time and the error slot read through numpy, 19 us this
            # way (session 16, SCHED_FIFO), and Halide's pool worker goes to sleep in that gap.
            fn = _kernel(self.prog)
            ctype = {"p": ctypes.c_void_p, "i32": ctypes.c_int32, "i64": ctypes.c_int64}
            values: list[Any] = [ctypes.c_void_p(self._err.ctypes.data)]
            values += [ctypes.c_void_p(v.ctypes.data) if k == "p" else ctype[k](v) for k, v in self.args]
            raw = ctypes.CFUNCTYPE(None)(ctypes.cast(fn, ctypes.c_void_p).value)
            # the error slot read back through ctypes (a numpy element read costs more per call)
            self._direct = (raw, tuple(values), ctypes.c_int32.from_buffer(self._err))

    @property
    def empty(self) -> bool:
        """An output with no elements: nothing to compute (and no assertion on sizes), as realize()."""
        return any(o.size == 0 for o in self.results())

    def results(self) -> list[np.ndarray]:
        """The outputs as the caller asked for them (the requested window of a grown output)."""
        if self.crops is None:
            return self.outputs
        return [o if c is None else o[c] for o, c in zip(self.outputs, self.crops)]

    def __call__(self) -> list[np.ndarray]:
        direct = self._direct
        if direct is not None:
            direct[0](*direct[1])
            code = direct[2].value
        elif self.empty:
            return self.results()
        else:
            code = self._run_checked()
        if code != 0:
            self.prog._raise_assertion(code)
        return self.results()

    def _run_checked(self) -> int:
        from pitchfork.backend.run import Buffer, Call, Scalar, run_calls

        assert self.prog.module is not None
        outs = {id(o) for o in self.outputs}
        call_args: list[Any] = [Buffer(np.zeros(1, np.int32), is_output=True)]
        for k, v in self.args:
            if k == "p":
                call_args.append(Buffer(v, is_output=id(v) in outs))
            else:
                call_args.append(Scalar(int(v), 64 if k == "i64" else 32))
        err, *results = run_calls(self.prog.module, self.prog.module.target, [Call(self.prog.name, call_args)])[0]
        for o, r in zip(self.outputs, results):
            o[...] = r
        return int(err[0])


def _as_input(value: Any, name: str, want: np.dtype, dims: int) -> tuple[np.ndarray, list[int]]:
    if isinstance(value, np.ndarray):
        arr, mins = value, [0] * value.ndim
    else:
        import halide as hl

        arr = np.asarray(value)
        mins = [value.dim(d).min() for d in range(value.dimensions())] if isinstance(value, hl.Buffer) else [0] * arr.ndim
    if arr.dtype != want:
        raise TypeError(f"input {name} must be {want}, got {arr.dtype}")
    if arr.ndim != dims:
        raise TypeError(f"input {name} must have {dims} dimensions, got {arr.ndim}")
    if not arr.flags.aligned:
        arr = np.array(arr, order="K", copy=True)  # the one copy a layout needs
    return dense(arr), mins


def _dims(arr: np.ndarray, mins: Sequence[int]) -> list[int]:
    """(min, extent, stride) per Halide dimension (innermost first) of a dense array."""
    out: list[int] = []
    for d, (ext, st) in enumerate(zip(reversed(arr.shape), reversed(arr.strides))):
        out += [int(mins[d]), int(ext), int(st // arr.itemsize)]
    return out


def _spare_output(prog: CompiledPipeline, k: int, shape: tuple[int, ...], dtype: np.dtype) -> np.ndarray:
    """Output `k` of a `prog(...)` call: the array of the last call if the caller has let go of it
    (see the module docstring), else a new one."""
    arr = prog._spare_outputs.pop(k, None)
    # References to `arr` now: this local and getrefcount's argument; any more are the caller's.
    if arr is None or sys.getrefcount(arr) > 2 or arr.shape != shape or arr.dtype != dtype:
        arr = np.empty(shape, dtype=dtype)
    return arr


def bind(prog: CompiledPipeline, inputs: Sequence[Any], size: Optional[Sequence[int]],
         min: Optional[Sequence[int]], out: Any, check: bool, recycle: bool = False) -> PreparedCall:
    """Bind a call (see the module docstring); `recycle`: outputs may reuse a dropped earlier one."""
    import halide as hl

    plan = plan_of(prog)
    if len(inputs) != len(plan.arguments):
        names = ", ".join(a[1] for a in plan.arguments)
        raise TypeError(f"{prog.name} takes {len(plan.arguments)} inputs ({names}), got {len(inputs)}")
    outs = plan.outputs
    given = [] if out is None else list(out) if isinstance(out, (tuple, list)) else [out]
    if given and len(given) != len(outs):
        raise TypeError(f"out must give {len(outs)} arrays, got {len(given)}")
    out_arrays: list[np.ndarray] = []
    out_mins: list[list[int]] = []
    for (oname, want, odims), g in zip(outs, given):
        arr = np.asarray(g)
        if arr.dtype != want or arr.ndim != odims:
            raise TypeError(f"out for {oname} must be a {odims}-d {want} array, got {arr.ndim}-d {arr.dtype}")
        if not (arr.flags.aligned and arr.flags.writeable) or dense(arr) is not arr:
            raise ValueError(f"out for {oname} must be a writeable, aligned array filling one block of memory "
                             "(C-contiguous or a transposed view of one)")
        out_arrays.append(arr)
        out_mins.append([g.dim(d).min() for d in range(g.dimensions())] if isinstance(g, hl.Buffer) else [])
    for i, a in enumerate(out_arrays):
        for b in out_arrays[:i]:
            if np.may_share_memory(a, b):
                raise ValueError(f"{prog.name}: two outputs share memory; pass distinct arrays")
    args: list[tuple[str, Any]] = []
    first_extents: Optional[list[int]] = None
    for (kind, name, t, n), value in zip(plan.arguments, inputs):
        if kind == "scalar":
            if t == "float":  # passed as the bit pattern of the float16/float32/float64 value
                if n not in (16, 32, 64):
                    raise TypeError(f"{name}: float{n} parameters are not supported")
                # (a float16's bits zero-extended to the i32 slot; numpy rounds a Python float to
                # float16 to nearest even from its double, as Halide's float16_t does)
                ft, it = {16: (np.float16, np.uint16), 32: (np.float32, np.int32),
                          64: (np.float64, np.int64)}[n]
                v = int(np.array(value, ft).view(it))
            elif t == "bfloat":  # its bits zero-extended to the i32 slot, the kernel widens them
                v = bfloat16_bits(value)
            else:  # refuse what Halide's Param.set refuses (pitchfork/frontend/params.py)
                v = scalar_value(name, t, n, value)
            args.append(("i64", _signed(v, 64)) if n == 64 else ("i32", _signed(v, 32)))
            continue
        arr, mins = _as_input(value, name, t, n)
        # The kernel's buffers are noalias: an input overlapping an output is read from a copy.
        if out_arrays and any(np.may_share_memory(arr, o) for o in out_arrays):
            arr = arr.copy()
        args.append(("p", arr))
        args += [("i32", v) for v in _dims(arr, mins)]
        if first_extents is None:
            first_extents = list(reversed(arr.shape))
    if out_arrays:
        shape_size = list(reversed(out_arrays[0].shape))
        if size is not None and list(size) != shape_size:
            raise TypeError(f"size {list(size)} does not match the out array's extents {shape_size}")
        size = shape_size
    size = list(size) if size is not None else first_extents
    for oname, _, odims in outs:
        if size is None or len(size) != odims:
            raise TypeError(f"size must give {odims} extents for output {oname}")
    assert size is not None
    if min is not None and len(min) != len(size):
        raise TypeError(f"min must give {len(size)} values, got {len(min)}")
    n_given = len(out_arrays)
    crops: list[Optional[tuple[slice, ...]]] = []
    for k, (oname, want, _) in enumerate(outs):
        mins = list(min) if min is not None else (out_mins[k] if k < len(out_mins) and out_mins[k] else [0] * len(size))
        grown = None if k < n_given else _grown(plan, args, k, size, mins)
        alloc_size, crop = size, None
        if grown is not None:
            mins, alloc_size, crop = grown
        order = output_layout(plan.strides[k], alloc_size) if plan.strides else None
        if k < n_given:
            arr = out_arrays[k]
            if list(reversed(arr.shape)) != size:
                raise TypeError(f"out for {oname} has extents {list(reversed(arr.shape))}, expected {size}")
        elif recycle and order is None and crop is None:
            arr = _spare_output(prog, k, tuple(reversed(size)), want)
            out_arrays.append(arr)
        else:
            arr = new_output(alloc_size, want, order)
            out_arrays.append(arr)
        crops.append(crop)
        args.append(("p", arr))
        args += [("i32", v) for v in _dims(arr, mins)]
    return PreparedCall(prog, args, out_arrays, check, crops if any(c is not None for c in crops) else None)


def _grown(plan: CallPlan, args: list[tuple[str, Any]], k: int,
           size: list[int], mins: list[int]) -> Optional[tuple[list[int], list[int], tuple[slice, ...]]]:
    """Output k grown as Halide's realize grows it after its bounds query (aot/output_bounds.py):
    (the grown mins, the grown extents, the numpy window of the requested region), or None when the
    query asks for no more than requested."""
    growth = plan.growth[k] if plan.growth else None
    if growth is None:
        return None
    stride_of = [1]
    for e in size[:-1]:
        stride_of.append(stride_of[-1] * e)  # realize's buffers are dense
    region_of = {"min": mins, "extent": size, "stride": stride_of}
    values = tuple(int(args[i][1]) if kind == "a" else int(region_of[kind][i]) for kind, i in growth.sources)
    key = (values, tuple(mins), tuple(size))
    memo = growth.memo
    if key in memo:
        return memo[key]
    region = output_bounds.answer(growth.queries, growth.query, values)
    out: Optional[tuple[list[int], list[int], tuple[slice, ...]]] = None
    if region is not None and len(region) == len(size):
        starts = [m - qm for m, (qm, _) in zip(mins, region)]
        inside = all(s >= 0 and s + e <= qe for s, e, (_, qe) in zip(starts, size, region))
        same = all(s == 0 and e == qe for s, e, (_, qe) in zip(starts, size, region))
        if inside and not same:
            crop = tuple(slice(starts[d], starts[d] + size[d]) for d in reversed(range(len(size))))
            out = [qm for qm, _ in region], [qe for _, qe in region], crop
    if len(memo) < 256:
        memo[key] = out
    return out


def bfloat16_bits(value: Any) -> int:
    """The bfloat16 bits of a number, rounded as Halide 21's cast from float64 to bfloat16 rounds
    (codegen/floats_bfloat.py): to float32, then to nearest even by `bits + 0x7fff + ((bits >> 16) & 1)`;
    a NaN stays a quiet NaN of its sign."""
    bits = int(np.array(value, np.float32).view(np.uint32))
    if np.isnan(np.float32(value)):
        return (bits >> 16) | 0x40
    return ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16) & 0xFFFF


def _signed(v: int, w: int) -> int:
    """`v` (already checked against the Param's type) as the signed w-bit value the kernel takes."""
    v &= (1 << w) - 1
    return v - (1 << w) if v >> (w - 1) else v

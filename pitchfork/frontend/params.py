"""Validation of scalar Param values passed to a compiled pipeline (`prog(image, k)`).

Halide's `Param.set` refuses a value that "cannot be losslessly converted" to the Param's type: it
converts the value to the Param's C type and back and refuses it if the round trip changes it. Since
the Python number first becomes *some* C integer type (signed or unsigned), Halide 21 accepts exactly:

* for an integer Param of b bits: integral values in [-2**(b-1), 2**b - 1] (either signedness of that
  width; -1 for a UInt(8) Param is 255 and 255 for an Int(8) Param is -1, as in C), from a Python
  int, a bool, a numpy integer or bool, or a finite float with an integral value (2.0, not 2.7);
* for a Bool Param: 0 and 1 (True/False, 0.0/1.0).

`scalar_value` accepts exactly that and returns the value wrapped to the Param's type, so the
compiled code and Halide's `realize()` see the same number. Where Halide's binding itself gives a
wrong answer, we refuse or give the exact value instead of copying it: None, strings, complex
numbers and arrays are refused (Halide's binding turns None into 0 and 3+0j into 1), and numpy
scalars are read by value (Halide's binding reads np.float32(2.0) for a UInt(8) Param as 1 and
np.uint64(2**64 - 1) as 1), and an integer outside both ranges of the width is refused even when its
bits survive Halide's C round trip (Halide gives -1 for 2**32 - 1 passed to an Int(16) Param). Every
refusal names the parameter.
"""

from __future__ import annotations

import math
import numbers
from typing import Any

import numpy as np

from pitchfork.errors import ParamTypeError, ParamValueError


def _integral(name: str, value: Any, type_name: str) -> int:
    """The exact integer a Python/numpy scalar stands for, or a ParamTypeError/ParamValueError."""
    if isinstance(value, (bool, np.bool_)):
        return int(value)
    if isinstance(value, (numbers.Integral, np.integer)):
        return int(value)
    if isinstance(value, (float, np.floating)):
        f = float(value)
        if not math.isfinite(f) or f != math.floor(f):
            raise ParamValueError(f"parameter {name}: the value {value!r} cannot be losslessly converted to "
                                  f"{type_name} (not an integer)")
        return int(f)
    raise ParamTypeError(f"parameter {name} ({type_name}) needs a number, got {type(value).__name__} {value!r}")


def scalar_value(name: str, code: str, bits: int, value: Any) -> int:
    """Check `value` for the scalar Param `name` of Halide type (code, bits); return it wrapped to the type.

    code is "int" or "uint" (bits == 1 for Bool). Raises ParamTypeError for a value that is not a
    number and ParamValueError for a number the type cannot hold; both name the parameter.
    """
    type_name = "bool" if code == "uint" and bits == 1 else f"{code}{bits}"
    if code not in ("int", "uint"):
        raise ParamTypeError(f"parameter {name} has type {type_name}, which compiled code does not take")
    v = _integral(name, value, type_name)
    lo, hi = (0, 1) if bits == 1 else (-(1 << (bits - 1)), (1 << bits) - 1)
    if not lo <= v <= hi:
        raise ParamValueError(f"parameter {name}: the value {v} cannot be losslessly converted to {type_name} "
                              f"(accepted: {lo} .. {hi})")
    v &= (1 << bits) - 1
    if code == "int" and v >= 1 << (bits - 1):
        v -= 1 << bits
    return v


def halide_scalar_value(param: Any, value: Any) -> Any:
    """`scalar_value` for a halide.Param (the fallback path); float Params take any real number."""
    t = param.type()
    name = param.name()
    if t.is_float():
        if isinstance(value, (bool, np.bool_)) or not isinstance(value, (numbers.Real, np.floating, np.integer)):
            raise ParamTypeError(f"parameter {name} (float{t.bits()}) needs a number, got "
                                 f"{type(value).__name__} {value!r}")
        return float(value)
    code = "uint" if t.is_uint() or t.is_bool() else "int" if t.is_int() else "other"
    v = scalar_value(name, code, t.bits(), value)
    return bool(v) if t.is_bool() else v


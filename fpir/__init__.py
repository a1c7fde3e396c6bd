"""FPIR: a typed, lane-agnostic term language of vector integer ops and fixed-point instructions."""

from fpir.ops import FPIR_OPS, PRIMITIVE_OPS, make
from fpir.opspec import OPS, OpSpec, register, spec
from fpir.term import Term, const, var
from fpir.printer import to_text
from fpir.text import FPIRSyntaxError, parse
from fpir.types import INT_TYPES, USER_TYPES, FPIRTypeError, ScalarType, parse_type

__all__ = ["FPIR_OPS", "OPS", "PRIMITIVE_OPS", "OpSpec", "make", "register", "spec", "Term", "const", "var",
           "FPIRSyntaxError", "parse", "to_text", "INT_TYPES", "USER_TYPES", "FPIRTypeError", "ScalarType",
           "parse_type"]

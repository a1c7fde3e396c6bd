"""FPIR: a typed, lane-agnostic term language of vector integer ops and fixed-point instructions."""

from fpir.ops import FPIR_OPS, OPS, PRIMITIVE_OPS, OpSpec, make, register, spec
from fpir.term import Term, const, var
from fpir.text import FPIRSyntaxError, parse, to_text
from fpir.types import INT_TYPES, USER_TYPES, FPIRTypeError, ScalarType, parse_type

__all__ = ["FPIR_OPS", "OPS", "PRIMITIVE_OPS", "OpSpec", "make", "register", "spec", "Term", "const", "var",
           "FPIRSyntaxError", "parse", "to_text", "INT_TYPES", "USER_TYPES", "FPIRTypeError", "ScalarType",
           "parse_type"]

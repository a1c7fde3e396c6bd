"""docs/FPIR.md is generated from the op table and must be up to date.

Regenerate with `python -m fpir.docs`, or run this test with FPIR_REGEN_DOCS=1 to rewrite the file.
"""

from __future__ import annotations

import os

from fpir import docs
from fpir.ops import template
from fpir.opspec import OPS
from fpir.text import parse


def test_docs_up_to_date() -> None:
    text = docs.render()
    if os.environ.get("FPIR_REGEN_DOCS") == "1":
        docs.DOC_PATH.write_text(text)
    assert docs.DOC_PATH.exists(), "docs/FPIR.md is missing: run `python -m fpir.docs`"
    assert docs.DOC_PATH.read_text() == text, "docs/FPIR.md is stale: run `python -m fpir.docs`"


def test_docs_cover_every_op_and_definitions_parse() -> None:
    text = docs.render()
    for name, s in OPS.items():
        if s.kind not in ("primitive", "fpir") or not s.meta.get("documented", True):
            continue  # reduction factors registered on first use (vector_reduce_add_x3) are not listed
        assert f"\n### {name}\n" in text
        assert s.doc in text
        for inst in docs.representative(s) if s.definition is not None else []:
            call, body = docs.definition_text(name, inst)
            # the printed definition is the template, read back with the placeholders' names
            ts, explicit, rt = inst
            tmpl, names = template(name, ts, rt)
            assert parse(body) is docs._rename(tmpl, dict(zip(names, docs.PLACEHOLDERS)))
            assert f"  {call} =\n      {body}\n" in text


def test_cli_check(tmp_path) -> None:  # type: ignore[no-untyped-def]
    out = tmp_path / "FPIR.md"
    assert docs.main(["--check", "-o", str(out)]) == 1
    assert docs.main(["-o", str(out)]) == 0
    assert docs.main(["--check", "-o", str(out)]) == 0
    assert out.read_text() == docs.render()

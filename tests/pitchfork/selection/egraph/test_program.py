"""pitchfork/selection/egraph/program.py: running egglog text through an `include` of a private
temporary file gives the outputs parse_program + run_program give, and the fallback path (no usable
temporary folder) gives them too."""

from __future__ import annotations

import pytest

from pitchfork.selection.egraph import program
from pitchfork.selection.egraph.engine import _bindings

TEXT = """(datatype E (Num i64) (Add E E))
(ruleset r)
(rewrite (Add a b) (Add b a) :ruleset r)
(let x (Add (Num 1) (Num 2)))
(run r 2)
(check (= x (Add (Num 2) (Num 1))))
(print-size)
"""


def _outputs(out: list) -> list[str]:
    return [type(o).__name__ for o in out]


def test_run_text_matches_parse_and_run() -> None:
    direct = _bindings().EGraph()
    expected = direct.run_program(*direct.parse_program(TEXT))
    eg = _bindings().EGraph()
    got = program.run_text(eg, TEXT, *eg.parse_program("(print-size)"))
    assert _outputs(got) == _outputs(expected) + ["PrintAllFunctionsSize"]
    sizes = dict(got[-1].sizes)
    assert sizes == dict(expected[-1].sizes) and sizes["Add"] == 2


def test_run_text_falls_back_without_a_folder(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(program, "_FOLDER", [None])
    eg = _bindings().EGraph()
    got = program.run_text(eg, TEXT)
    assert dict(got[-1].sizes)["Add"] == 2


def test_run_text_errors_are_raised() -> None:
    eg = _bindings().EGraph()
    with pytest.raises(Exception, match="Unbound|unbound|undefined|Undefined"):
        program.run_text(eg, "(let y (Nope 1))\n")


def test_empty_text_runs_only_the_parsed_commands() -> None:
    eg = _bindings().EGraph()
    program.run_text(eg, TEXT)
    assert [type(o).__name__ for o in program.run_text(eg, "", *eg.parse_program("(print-size)"))] == \
        ["PrintAllFunctionsSize"]


def test_a_shorter_text_after_a_longer_one_runs_alone() -> None:
    """The file is rewritten in place: nothing of an earlier, longer text may remain after the new one."""
    eg = _bindings().EGraph()
    program.run_text(eg, "(datatype E (Num i64))\n" + "".join(f"(let v{i} (Num {i}))\n" for i in range(50)))
    got = program.run_text(eg, "(print-size)\n")
    assert [type(o).__name__ for o in got] == ["PrintAllFunctionsSize"]
    assert dict(got[0].sizes)["Num"] == 50

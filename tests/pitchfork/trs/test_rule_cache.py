"""The on-disk cache of parsed rule files (pitchfork/trs/cache.py): a hit gives the same rules as a
parse without touching the parser, an edited file or a new parser version is a miss, and a corrupt or
unreadable entry is parsed again and rewritten. Also the lazily built lark tables (fpir/diskcache.py)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from fpir import parse
from pitchfork.trs import cache
from pitchfork.trs.rules import RuleSet, load_rule_file, parse_rules
from pitchfork.trs.rewriter import Rewriter

ROOT = Path(__file__).resolve().parents[3]
RULES = "r1: u8(min(u16(x_u8) + u16(y_u8), 255)) -> saturating_add(x_u8, y_u8)\n" \
        "r2: (x_T + y_T) / 2 -> halving_add(x_T, y_T) if is_signed(T) || bits(T) < 64\n"


@pytest.fixture()
def cache_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    d = tmp_path / "cache"
    monkeypatch.setenv("PITCHFORK_CACHE_DIR", str(d))
    return d


def _counting_parse(calls: list[str]):  # a parser that records being called
    def parse_fn(text: str, source: str) -> list:
        calls.append(source)
        return parse_rules(text, source)

    return parse_fn


def test_hit_returns_equal_rules_without_parsing(cache_dir: Path) -> None:
    calls: list[str] = []
    first = cache.parse_rules_cached(RULES, "a.rules", _counting_parse(calls))
    second = cache.parse_rules_cached(RULES, "a.rules", _counting_parse(calls))
    assert calls == ["a.rules"]  # the second call was served from disk
    assert [r.text() for r in second] == [r.text() for r in first]
    assert [(r.source, r.line) for r in second] == [(r.source, r.line) for r in first]
    assert second[0].patterns == first[0].patterns and second[0].rhs_raw == first[0].rhs_raw
    assert len(list((cache_dir / "rules").glob("*.pickle"))) == 1
    # the cached rules rewrite exactly like freshly parsed ones
    t = parse("i16(u8(min(u16(a_u8) + u16(b_u8), 255))) + (c_i16 + d_i16) / 2")
    out = Rewriter(RuleSet(second)).rewrite(t)
    assert out is Rewriter(RuleSet(first)).rewrite(t)
    assert str(out) == "i16(saturating_add(a_u8, b_u8)) + halving_add(c_i16, d_i16)"


def test_changed_text_source_or_parser_is_a_miss(cache_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[str] = []
    cache.parse_rules_cached(RULES, "a.rules", _counting_parse(calls))
    edited = RULES.replace("255", "255 ")  # same rules, other bytes: a new key
    cache.parse_rules_cached(edited, "a.rules", _counting_parse(calls))
    cache.parse_rules_cached(RULES, "b.rules", _counting_parse(calls))  # errors name the source
    assert calls == ["a.rules", "a.rules", "b.rules"]
    monkeypatch.setattr(cache, "parser_version", lambda: "another parser")
    cache.parse_rules_cached(RULES, "a.rules", _counting_parse(calls))
    assert calls[-1] == "a.rules" and len(calls) == 4


def test_edited_rule_file_is_reparsed(cache_dir: Path, tmp_path: Path) -> None:
    f = tmp_path / "x.rules"
    f.write_text(RULES)
    assert [r.name for r in load_rule_file(f)] == ["r1", "r2"]
    f.write_text(RULES + "r3: x_u8 - x_u8 -> u8(0)\n")
    assert [r.name for r in load_rule_file(f)] == ["r1", "r2", "r3"]


@pytest.mark.parametrize("damage", ["truncate", "garbage", "empty", "directory", "wrong_type"])
def test_corrupt_entry_is_rebuilt(cache_dir: Path, damage: str) -> None:
    calls: list[str] = []
    good = cache.parse_rules_cached(RULES, "a.rules", _counting_parse(calls))
    entry = cache.entry_path(RULES, "a.rules")
    assert entry is not None and entry.exists()
    data = entry.read_bytes()
    if damage == "truncate":
        entry.write_bytes(data[: len(data) // 2])
    elif damage == "garbage":
        entry.write_bytes(b"\x80\x05garbage" * 10)
    elif damage == "empty":
        entry.write_bytes(b"")
    elif damage == "directory":
        entry.unlink()
        entry.mkdir()
    else:  # a well-formed pickle of something that is not a rule list
        cache.store_entry(entry, {"not": "rules"})
    again = cache.parse_rules_cached(RULES, "a.rules", _counting_parse(calls))
    assert calls == ["a.rules", "a.rules"]
    assert [r.text() for r in again] == [r.text() for r in good]
    if damage != "directory":  # rewritten whole: the next call is a hit
        cache.parse_rules_cached(RULES, "a.rules", _counting_parse(calls))
        assert len(calls) == 2


def test_errors_are_not_cached(cache_dir: Path) -> None:
    bad = "r1: x_u8 + -> x_u8\n"
    for _ in range(2):
        with pytest.raises(Exception) as e:
            cache.parse_rules_cached(bad, "bad.rules", parse_rules)
        assert "bad.rules:1:" in str(e.value)
    assert not list(cache_dir.glob("rules/*.pickle"))


def test_unwritable_directory_still_parses(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    monkeypatch.setenv("PITCHFORK_CACHE_DIR", str(blocker / "cache"))  # cannot be created
    assert [r.name for r in cache.parse_rules_cached(RULES, "a.rules", parse_rules)] == ["r1", "r2"]


def test_off_switch_and_default_location(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("PITCHFORK_CACHE_DIR", "off")
    assert cache.cache_dir() is None and cache.entry_path(RULES, "a") is None
    assert [r.name for r in cache.parse_rules_cached(RULES, "a.rules", parse_rules)] == ["r1", "r2"]
    monkeypatch.delenv("PITCHFORK_CACHE_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert cache.cache_dir() == tmp_path / "xdg" / "pitchfork"
    monkeypatch.delenv("XDG_CACHE_HOME")
    d = cache.cache_dir()
    assert d is not None and ROOT not in d.parents  # never inside the source tree


def test_cli_lift_uses_and_fills_the_cache(tmp_path: Path) -> None:
    """A cold `pitchfork lift` fills the cache (parsing the rule files with lark); the next one loads the
    rules from it and prints the same thing, without importing numpy, z3, llvmlite, Halide or lark (the
    expression itself is parsed by fpir.text's own parser, `_fast_raw`)."""
    env = {**os.environ, "PITCHFORK_CACHE_DIR": str(tmp_path / "c"), "PYTHONPATH": str(ROOT)}
    probe = ("import sys; from pitchfork.cli import main; rc = main(['lift', sys.argv[1]]); "
             "print(sorted(m for m in ('numpy', 'z3', 'llvmlite', 'halide', 'lark') if m in sys.modules)); "
             "sys.exit(rc)")
    outs = [subprocess.run([sys.executable, "-c", probe, "u8(min(u16(a_u8) + u16(b_u8), 255))"], env=env,
                           capture_output=True, text=True, cwd=tmp_path) for _ in range(2)]
    for o in outs:
        assert o.returncode == 0, o.stderr
    assert outs[0].stdout == "saturating_add(a_u8, b_u8)\n['lark']\n"
    assert outs[1].stdout == "saturating_add(a_u8, b_u8)\n[]\n"
    assert list((tmp_path / "c" / "rules").glob("*.pickle"))
    assert (tmp_path / "c" / "lark" / "fpir-text.pickle").exists()


@pytest.mark.parametrize("enabled", [True, False])
def test_loading_an_entry_leaves_the_collector_as_it_was(cache_dir: Path, enabled: bool) -> None:
    """load_entry pauses the cyclic collector while unpickling and gives it back in the state it found."""
    import gc

    cache.parse_rules_cached(RULES, "a.rules", parse_rules)  # stores the entry
    was = gc.isenabled()
    try:
        gc.enable() if enabled else gc.disable()
        assert [r.name for r in cache.load_entry(cache.entry_path(RULES, "a.rules"))] == ["r1", "r2"]  # type: ignore[union-attr]
        assert gc.isenabled() is enabled
    finally:
        gc.enable() if was else gc.disable()


def test_patterns_pickle_as_constructor_calls_into_equal_objects() -> None:
    """The patterns of the lifting rules (hand-written and synthesized: every pattern class occurs) come
    back from a pickle round trip equal, field by field, and of the same classes (pitchfork/trs/pattern.py
    pickles them as constructor calls)."""
    import pickle

    from pitchfork.selection.lift import lift_rules
    from pitchfork.trs import pattern as P

    rules = lift_rules().rules
    back = pickle.loads(pickle.dumps(rules, protocol=pickle.HIGHEST_PROTOCOL))
    assert back == rules
    kinds: set[type] = set()

    def same(a: object, b: object) -> None:
        assert type(a) is type(b) and a == b
        if isinstance(a, (P.PApp, P.PWild, P.PConst, P.PLit, P.TypeExpr)):
            kinds.add(type(a))
            for name in a.__slots__:
                same(getattr(a, name), getattr(b, name))
        elif isinstance(a, tuple):
            for x, y in zip(a, b):  # type: ignore[call-overload]
                same(x, y)

    for r, s in zip(rules, back):
        same(r.patterns, s.patterns)
    assert kinds == {P.PApp, P.PWild, P.PConst, P.PLit, P.TypeExpr}


def test_generated_matchers_are_made_once_through_the_cache(cache_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The generated matchers (pitchfork/trs/matchgen.py) of a set of patterns are generated and compiled
    once: the next process with the same patterns reads the module from disk (here: the same call
    again); a damaged entry is generated again; either way the matchers give the same matches."""
    from pitchfork.selection.lift import lift_rules
    from pitchfork.trs import matchgen
    from pitchfork.trs.compiled import compile_pattern

    made: list[int] = []
    real = matchgen._generate

    def counting(patterns, source_name):  # type: ignore[no-untyped-def]
        made.append(len(patterns))
        return real(patterns, source_name)

    monkeypatch.setattr(matchgen, "_generate", counting)
    patterns = [p for r in lift_rules().rules for p in r.patterns if p.op == "add"][:20]
    t = parse("(a_u16 + b_u16) + 1")
    want = [compile_pattern(p)(t, {}, {}) for p in patterns]
    for _ in range(2):
        ms = matchgen.generate_matchers(patterns, [compile_pattern(p) for p in patterns], "add")
        assert [m(t, {}, {}) for m in ms] == want
    assert made == [len(patterns)]
    entries = list((cache_dir / "matchers").glob("*.pickle"))
    assert len(entries) == 1
    entries[0].write_bytes(b"garbage")
    ms = matchgen.generate_matchers(patterns, [compile_pattern(p) for p in patterns], "add")
    assert [m(t, {}, {}) for m in ms] == want and made == [len(patterns)] * 2

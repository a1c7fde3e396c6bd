"""Alpha-renaming (pitchfork/selection/egraph/canon.py): canonical names round-trip, and `rename_all`
(the seed's renaming, one memo for many terms) agrees with `rename` term by term."""

from __future__ import annotations

from fpir.text import parse
from pitchfork.selection.egraph.canon import canonical, rename, rename_all


def test_canonical_round_trips_and_rename_all_agrees() -> None:
    t = parse("u8((u16(x_u8) + u16(y_u8) * 2 + u16(x_u8)) >> 2)")
    canon, back = canonical(t)
    assert rename(canon, back) is t
    assert {v.name for v in canon.variables()} == {"_v0", "_v1"}
    forward = {v: k for k, v in back.items()}
    subs = [s for s in t.walk() if s.args]
    assert rename_all(subs, forward) == [rename(s, forward) for s in subs]
    assert rename_all([], forward) == []


def test_canonical_is_the_naming_walk_then_rename() -> None:
    """canonical() names and rebuilds in one walk: the same as naming every variable in first-visit
    order (post-order) and then renaming, with broadcast-named variables (c0, k1) and flags kept."""
    from fpir.term import intern

    for text in ("u8((u16(x_u8) + u16(y_u8) * 2 + u16(x_u8)) >> 2)",
                 "add.nsw(mul.nsw(i32(a_u8), i32(c0_u8)), mul.nsw(i32(b_u8), i32(a_u8)))",
                 "max(min(k1_i16 + z_i16, z_i16), w_i16)"):
        t = parse(text)
        forward, n = {}, 0
        for x in t.walk():
            if x.op == "var" and x not in forward:
                if x.name[0] in "ck" and x.name[1:].isdigit():
                    forward[x] = x
                else:
                    forward[x] = intern("var", x.type, (), (f"_v{n}",) + tuple(x.attrs[1:]))
                    n += 1
        canon, back = canonical(t)
        assert canon is rename(t, forward)
        assert back == {v: k for k, v in forward.items()}

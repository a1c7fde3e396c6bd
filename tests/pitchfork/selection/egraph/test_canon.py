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

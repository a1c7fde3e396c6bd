"""Leave-one-out after a synthesis run that writes rules: regenerate the ablation, withdraw regressions.

The ablation (benchmarks/harness/ablation.py, the paper's Figure 7) compiles each benchmark on each
ISA with the hand-written rules only and with the synthesized rules too, less those learned from the
benchmark itself, and compares the harness's static estimates (llvm-mca cycles on x86 and AArch64,
VLIW packets on Hexagon). Here it is run on the synthesis run's own rules: the compiler processes it
starts read the output folder merged with rules/synthesized/ (synth/rulesnap.py, handed over by the
PITCHFORK_SYNTH_DIR environment variable). Every synthesized rule that fired in a cell whose static
estimate got worse (gain < 1.0; on x86 the static gain, not the timed one) under the primary model
AND under the second one beside it (`second_gain`: apple-m1 on AArch64, hvx_cycles on Hexagon,
haswell on x86, `benchmarks.harness.static.SECOND_ON_REQUEST`; no second figure, no withdrawal) is
withdrawn: named in the output folder's withdrawn.txt with the benchmark, ISA and both models'
figures, and removed from its rule
file (the loader and the writer skip withdrawn names, so the next run does not write it again). The
regressing cells are then measured again, until none regresses or `rounds` are spent.

Attribution is by firing: all synthesized rules that fired in a regressing cell are withdrawn
together (measuring each alone would multiply the harness runs); the reason says so.
"""

from __future__ import annotations

import os
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator, Optional, Sequence


def static_gain(cell: dict[str, Any]) -> Optional[float]:
    """The cell's gain under the static estimate (hand cost / synthesized cost), or None."""
    if cell.get("status") == "same-code":
        return 1.0
    if cell.get("status") != "measured":
        return None
    if cell.get("isa") == "x86-avx2":
        return cell.get("static_gain")
    return cell.get("gain")


def second_gain(cell: dict[str, Any]) -> Optional[float]:
    """The cell's gain under the second model of the static estimate (hand / synthesized), or None."""
    if cell.get("status") == "same-code":
        return 1.0
    alt = cell.get("static_alt") or {}
    return alt["hand"] / alt["synth"] if cell.get("status") == "measured" and alt.get("hand") and alt.get("synth") else None


def regressions(data: dict[str, Any]) -> dict[str, str]:
    """Synthesized rule -> why it is withdrawn, for every cell with a static gain below 1.0 under
    both models (module doc)."""
    out: dict[str, str] = {}
    for cell in data.get("cells", []):
        g, g2 = static_gain(cell), second_gain(cell)
        if g is None or g >= 1.0 or g2 is None or g2 >= 1.0:
            continue
        alt = cell["static_alt"]
        fired = sorted(cell.get("compile", {}).get("synth", {}).get("synth_fired", {}))
        figures = cell.get("static_total") or {
            cfg: r.get("pitchfork", {}).get("static", {}).get("total") for cfg, r in cell.get("rows", {}).items()
        }
        for name in fired:
            out.setdefault(
                name,
                f"leave-one-out: {cell['bench']} on {cell['isa']} static estimate {figures.get('hand')} -> "
                f"{figures.get('synth')} ({g:.3f}x), second model {alt['hand']} -> {alt['synth']} ({g2:.3f}x), "
                f"with the synthesized rules that fired there ({', '.join(fired)}) (synth/loo.py)",
            )
    return out


def withdraw(out_dir: Path, reasons: dict[str, str]) -> list[str]:
    """Name the rules in out_dir/withdrawn.txt (with their reasons) and remove them from the output
    folder's rule files; returns the names newly withdrawn."""
    from pitchfork.selection.synthesized import withdrawn

    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    have = withdrawn(out_dir)
    new = [n for n in sorted(reasons) if n not in have]
    if new:
        with (out_dir / "withdrawn.txt").open("a") as f:
            for n in new:
                f.write(f"{n}  # {reasons[n]}\n")
    for path in sorted(out_dir.glob("*.rules")):
        lines = path.read_text().splitlines()
        kept = [ln for ln in lines if ln.split(":", 1)[0].strip() not in reasons or ln.startswith("#")]
        if len(kept) != len(lines):
            path.write_text("\n".join(kept) + "\n")
    return new


@contextmanager
def compiler_rules(out_dir: Path) -> Iterator[Path]:
    """PITCHFORK_SYNTH_DIR pointing at the run's rules (output folder merged with rules/synthesized/)
    for the processes started inside the block."""
    from synth.rulesnap import materialize, take

    d = materialize(take(out_dir))
    prev = os.environ.get("PITCHFORK_SYNTH_DIR")
    os.environ["PITCHFORK_SYNTH_DIR"] = str(d)
    try:
        yield d
    finally:
        if prev is None:
            os.environ.pop("PITCHFORK_SYNTH_DIR", None)
        else:
            os.environ["PITCHFORK_SYNTH_DIR"] = prev


def ablate_and_withdraw(
    out_dir: Path, benches: Sequence[str], isas: Sequence[str], rounds: int = 3, timeout: float = 1800.0,
) -> tuple[dict[str, Any], dict[str, str]]:
    """Run the ablation on the run's rules, withdraw the rules of regressing cells, measure those
    cells again; writes ablation.json / RESULTS_ABLATION.md / ablation.png into out_dir. Returns the
    final ablation data (every cell, the re-measured ones replaced) and every withdrawal."""
    from benchmarks.harness import ablation

    with compiler_rules(out_dir):
        data = ablation.run(list(benches), list(isas), quick=True, reps=1, timeout=timeout, progress=False)
    gone: dict[str, str] = {}
    for _ in range(rounds):
        bad = regressions(data)
        if not bad:
            break
        withdraw(out_dir, bad)
        gone.update(bad)
        again = {(c["bench"], c["isa"]) for c in data["cells"] if (static_gain(c) or 1.0) < 1.0}
        with compiler_rules(out_dir):
            fresh = {}
            for b, isa in sorted(again):
                for c in ablation.run([b], [isa], quick=True, reps=1, timeout=timeout, progress=False)["cells"]:
                    fresh[(c["bench"], c["isa"])] = c
        data["cells"] = [fresh.get((c["bench"], c["isa"]), c) for c in data["cells"]]
    data.setdefault("meta", {})["withdrawn"] = gone
    ablation.write(data, out_dir)
    return data, gone

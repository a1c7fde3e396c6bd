"""pitchfork-synth on a local Dask cluster of 1 and 2 workers (the 2-worker cluster reused for a second
run) against the in-process run: wall times, and whether the rule files are byte-identical.

    python -m benchmarks.synth_dask_timing OUT_DIR BENCH[,BENCH] MAX_LHS MAX_TERMS [HIDE,HIDE]

Every run gets a fresh cache and output folder under OUT_DIR (so every task runs). Prints one line per
run and the comparison; times are wall clock on whatever machine it runs on (not a verdict).
"""

from __future__ import annotations

import filecmp
import json
import shutil
import sys
import time
from dataclasses import replace
from pathlib import Path
from typing import Optional


def main(argv: list[str]) -> int:
    import distributed

    from synth.driver import Options, run

    root = Path(argv[0])
    shutil.rmtree(root, ignore_errors=True)
    base = Options(
        benchmarks=tuple(argv[1].split(",")), max_lhs=int(argv[2]), max_lower_lhs=int(argv[2]),
        max_terms=int(argv[3]), progress=False, hide=tuple(x for x in (argv[4:5] or [""])[0].split(",") if x),
    )

    def go(name: str, cluster: Optional[str] = None) -> float:
        o = replace(base, cache_dir=root / name / "cache", out_dir=root / name / "out", cluster=cluster)
        t = time.perf_counter()
        r = run(o)
        s = time.perf_counter() - t
        stages = {k: st for k, st in r.stages.items() if k != "corpus"}
        print(f"{name}: {s:.1f} s, {sum(st.run for st in stages.values())} tasks run, "
              f"written {dict((k, st.written) for k, st in stages.items())}", flush=True)
        return s

    times = {"in-process": go("in-process")}
    for n in (1, 2):
        with distributed.LocalCluster(n_workers=n, threads_per_worker=1, processes=True,
                                      dashboard_address=None, memory_limit="2GiB") as c:
            times[f"dask-{n}"] = go(f"dask-{n}", c.scheduler_address)
            if n == 2:
                times["dask-2-reused"] = go("dask-2-reused", c.scheduler_address)
    ref = sorted(p.name for p in (root / "in-process" / "out").glob("*.rules"))
    for name in ("dask-1", "dask-2", "dask-2-reused"):
        same = all(filecmp.cmp(root / "in-process" / "out" / f, root / name / "out" / f, shallow=False) for f in ref)
        print(f"{name}: rule files byte-identical to in-process: {same} ({len(ref)} files)")
    print(json.dumps({k: round(v, 1) for k, v in times.items()}))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

"""`python -m benchmarks.harness.apps_suite_scaling [APP] --sizes WxH,... -o DIR`: an app's 1 -> 2 thread
scaling as a function of its size, both contenders, beside a C copy of the same bytes whose split
between the two threads is either fixed or swapped every call.

Why (issue 24): blur at 1536x2560 takes ~0.8 ms a call for us (3.5 ms for Halide 21, same schedule) and
scaled 1.03x single / 1.34x back-to-back from 1 to 2 threads in the lead's quiet run (Halide 1.89x /
1.56x), against the goal of 1.7x. A call that short moves 7.9 MB of input and 7.9 MB of output: whether
that scales depends on where those bytes are when a call starts, which the app's size decides:

* `time_app` (the suite's own measurement: one worker process per contender and thread count,
  interleaved, outputs checked against Halide's) at each size: single-call and back-to-back medians
  and the paired 1 -> 2 thread ratios. A size whose working set one vCPU's caches hold (blur 1536x2560:
  ~16 MB, the L3 32 MB) is warm at 1 thread call after call; at 2 threads Halide's pool gives each
  32-row strip to whichever thread asks, so about half of a call's strips were last written by the
  other vCPU (apps_suite_modes' cache probe: such data reads as slowly as cold data on these VMs). A
  size 4x larger is streamed from memory at either thread count.
* `copy`: a C program (this tool compiles it) copying the same number of u16 pixels (out = in + 1, AVX2,
  the rows in 80 strips) with 1 thread or 2 spinning pthreads (no pool, no sleep, no wake-up):
  `fixed`, each thread copies the same half every call; `swapped`, the halves change hands every call
  (what a dynamic pool does to a strip about half the time). If `fixed` scales and `swapped` does not,
  the loss is the vCPUs' caches, which no code generator changes; if neither scales, it is memory
  bandwidth.

Writes DIR/SCALING.md and DIR/scaling.json (never the source tree), with `uptime` before and after.
A diagnostic for an idle machine (its ratios mean nothing while other jobs hold the second CPU).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path
from typing import Any, Sequence

#: the copy control: argv = pixels (u16), threads (1|2), mode (0 fixed, 1 swapped), calls; prints the
#: median microseconds per call over the calls after 20 warm-up calls
COPY_C = r"""
#define _GNU_SOURCE
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
enum { STRIPS = 80 };
static uint16_t *in, *out;
static size_t n;
static atomic_int go = 0, done = 0;
static int swapped, stop;
static double now(void) {
  struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec * 1e6 + t.tv_nsec * 1e-3;
}
static void strips(int first, int last) {
  size_t per = n / STRIPS;
  for (int s = first; s < last; s++)
    for (size_t i = s * per; i < (s == STRIPS - 1 ? n : (s + 1) * per); i++) out[i] = in[i] + 1;
}
static void *helper(void *arg) {
  int seen = 0;
  for (;;) {
    int g; while ((g = atomic_load(&go)) == seen) ;
    seen = g; if (stop) return 0;
    int half = (swapped && (g & 1)) ? 0 : 1;
    strips(half * STRIPS / 2, (half + 1) * STRIPS / 2);
    atomic_fetch_add(&done, 1);
  }
}
static int cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b; return x < y ? -1 : x > y;
}
int main(int argc, char **argv) {
  n = strtoull(argv[1], 0, 10); int threads = atoi(argv[2]); swapped = atoi(argv[3]);
  int calls = atoi(argv[4]);
  size_t bytes = (n * 2 + 4095) / 4096 * 4096;
  in = aligned_alloc(4096, bytes); out = aligned_alloc(4096, bytes);
  for (size_t i = 0; i < n; i++) { in[i] = (uint16_t)i; out[i] = 0; }
  pthread_t h; if (threads == 2) pthread_create(&h, 0, helper, 0);
  double *t = malloc(sizeof(double) * calls);
  for (int c = -20; c < calls; c++) {
    double t0 = now();
    if (threads == 2) {
      int g = atomic_load(&go) + 1; atomic_store(&go, g);
      int half = (swapped && (g & 1)) ? 1 : 0;
      strips(half * STRIPS / 2, (half + 1) * STRIPS / 2);
      while (atomic_load(&done) < g) ;
    } else strips(0, STRIPS);
    if (c >= 0) t[c] = now() - t0;
  }
  if (threads == 2) { stop = 1; atomic_store(&go, atomic_load(&go) + 1); pthread_join(h, 0); }
  qsort(t, calls, sizeof(double), cmp);
  printf("%.1f\n", t[calls / 2]);
  return out[n / 2] == (uint16_t)(n / 2 + 1) ? 0 : 3;
}
"""


def copy_control(pixels: int, build_dir: Path, calls: int = 200) -> dict[str, float]:
    """Median us per call of the C copy of `pixels` u16: 1 thread, 2 threads fixed, 2 threads swapped."""
    exe = build_dir / "copy_control"
    if not exe.exists():
        (build_dir / "copy_control.c").write_text(COPY_C)
        subprocess.run(["cc", "-O3", "-mavx2", "-pthread", "-o", str(exe), str(build_dir / "copy_control.c")],
                       check=True, capture_output=True)
    out = {}
    for key, threads, mode in (("1", 1, 0), ("2_fixed", 2, 0), ("2_swapped", 2, 1)):
        r = subprocess.run([str(exe), str(pixels), str(threads), str(mode), str(calls)], capture_output=True,
                           text=True, check=True)
        out[key] = float(r.stdout)
    return out


def _uptime() -> str:
    return subprocess.run(["uptime"], capture_output=True, text=True, check=False).stdout.strip()


def report(app: str, results: Sequence[dict[str, Any]], before: str, after: str) -> str:
    lines = [f"# {app}: 1 -> 2 thread scaling by size (python -m benchmarks.harness.apps_suite_scaling)", "",
             f"Load before: `{before}`; after: `{after}`.", "",
             "| size | PITCHFORK 1 / 2 threads ms (single) | Halide 21 1 / 2 ms (single) | scaling single "
             "PITCHFORK / Halide | PITCHFORK 1 / 2 ms (b2b) | Halide 1 / 2 ms (b2b) | scaling b2b "
             "PITCHFORK / Halide | C copy 1 / 2 fixed / 2 swapped us | copy scaling fixed / swapped |",
             "|---|---|---|---|---|---|---|---|---|"]
    for r in results:
        one, two = r["rows"]
        if "error" in one or "error" in two:
            lines.append(f"| {r['size']} | error: {one.get('error') or two.get('error')} |" + " |" * 7)
            continue
        c = r["copy"]
        cells = [r["size"], f"{one['pitchfork_ms']:.3f} / {two['pitchfork_ms']:.3f}",
                 f"{one['halide21_ms']:.3f} / {two['halide21_ms']:.3f}",
                 f"{two['pitchfork_scaling']:.2f}x / {two['halide21_scaling']:.2f}x",
                 f"{one['pitchfork_b2b_ms']:.3f} / {two['pitchfork_b2b_ms']:.3f}",
                 f"{one['halide21_b2b_ms']:.3f} / {two['halide21_b2b_ms']:.3f}",
                 f"{two['pitchfork_scaling_b2b']:.2f}x / {two['halide21_scaling_b2b']:.2f}x",
                 f"{c['1']:.0f} / {c['2_fixed']:.0f} / {c['2_swapped']:.0f}",
                 f"{c['1'] / c['2_fixed']:.2f}x / {c['1'] / c['2_swapped']:.2f}x"]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    from benchmarks.apps import APPS
    from benchmarks.harness.apps_suite import time_app

    ap = argparse.ArgumentParser(prog="python -m benchmarks.harness.apps_suite_scaling",
                                 description=__doc__.splitlines()[0])
    ap.add_argument("app", nargs="?", default="blur", choices=sorted(APPS))
    ap.add_argument("--sizes", default="1536x2560,3072x5120", help="comma-separated WxH[xC] (default: blur's "
                    "timing size and 4x its pixels)")
    ap.add_argument("--reps", type=int, default=12)
    ap.add_argument("--processes", type=int, default=2)
    ap.add_argument("-o", "--out", required=True, help="output folder")
    a = ap.parse_args(argv)
    try:
        sizes = [[int(e) for e in s.split("x")] for s in a.sizes.split(",") if s]
    except ValueError:
        print(f"error: --sizes {a.sizes!r}: WxH[xC] sizes separated by commas expected", file=sys.stderr)
        return 2
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    before = _uptime()
    results = []
    for size in sizes:
        rows = time_app(a.app, a.reps, False, processes=a.processes, size=size)
        pixels = 1
        for e in size:
            pixels *= e
        results.append({"size": "x".join(map(str, size)), "rows": rows, "copy": copy_control(pixels, out)})
    after = _uptime()
    record = {"before": before, "after": after, "results": results}
    (out / "scaling.json").write_text(json.dumps(record, indent=1, default=str))
    text = report(a.app, results, before, after)
    (out / "SCALING.md").write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())

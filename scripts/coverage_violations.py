"""List docs/COVERAGE.md rows that break issue 11's rule: the reference (ISA_INTRINSICS.md section 2,
`pitchfork.selection.coverage.REFERENCE`) names an instruction for the op x type x ISA, we emit the generic
expansion, and `pitchfork.selection.coverage.REASONS` gives no reason. Also counts the explained ones.

    PYTHONPATH=. python3 scripts/coverage_violations.py      # exit 1 if any row violates
"""

from __future__ import annotations

import sys

from pitchfork.selection import coverage


def main() -> int:
    table = coverage.rows()
    explained = [f"{isa}: {row.inst.label}: {why}" for row in table
                 for isa, (em, ref, why) in zip(coverage.ISAS, row.cells)
                 if ref is not None and em.kind == "generic" and why is not None]
    bad = coverage.violations(table)
    for line in bad:
        print("VIOLATION", line)
    for line in explained:
        print("explained", line)
    print(f"{len(bad)} violations, {len(explained)} generic rows with a reason, {len(table)} rows x "
          f"{len(coverage.ISAS)} ISAs")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())

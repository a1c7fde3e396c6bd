"""The generated sections of benchmarks/variants/RESULTS.md: `--write-results` of
`python3 -m benchmarks.variants` and of `python3 -m benchmarks.variants.selection` replaces its own
section (a `## ` heading ending in "(generated)") with the tables of that run; nothing else in the file
is touched, and without the flag neither harness writes into the source tree."""

from __future__ import annotations

from pathlib import Path

RESULTS = Path(__file__).resolve().parent / "RESULTS.md"


def write_section(title: str, md: str, results: Path = RESULTS) -> None:
    """Replace the section headed `## {title}` of `results` with `md` (which starts with that heading),
    or append it; the file is made if missing."""
    head = f"## {title}"
    assert md.startswith(head + "\n"), md[:80]
    text = results.read_text() if results.exists() else ""
    start = text.find(head + "\n")
    if start < 0:
        results.write_text((text.rstrip() + "\n\n" if text.strip() else "") + md.rstrip() + "\n")
        return
    end = text.find("\n## ", start + len(head))
    rest = text[end + 1:] if end >= 0 else ""
    results.write_text(text[:start] + md.rstrip() + "\n" + ("\n" + rest if rest else ""))

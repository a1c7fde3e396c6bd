"""Fail loudly unless the llvmlite Python imports is the one scripts/install.sh builds: linked to Debian's
release libLLVM-22 (`llvm-config-22`), not the PyPI wheel's assertion-enabled static LLVM.

    python3 scripts/check_llvmlite.py      # exit status 0 and one line saying what was found, else 1

Checked: llvmlite is dynamically linked; the libLLVM it loads is the one `llvm-config-22 --libdir` names;
its version is `llvm-config-22 --version`; that LLVM reports assertions off (`llvm-config-22
--assertion-mode`) and llvmlite agrees (`pitchfork.backend.machine.llvm_assertions_enabled`).
docs/LLVMLITE.md says why the project uses this build.
"""

from __future__ import annotations

import os
import subprocess
import sys


def problems() -> tuple[list[str], str]:
    """(what is wrong, a one-line description of what was found)."""
    import llvmlite
    import llvmlite.binding as llvm

    from pitchfork.backend.machine import llvm_assertions_enabled

    def config(flag: str) -> str:
        return subprocess.run(["llvm-config-22", flag], capture_output=True, text=True, check=True).stdout.strip()

    wrong: list[str] = []
    lib = llvm.ffi.lib._lib  # the loaded libllvmlite (a ctypes CDLL)
    path = str(getattr(lib, "_name", ""))
    linkage = "dynamic" if llvm.config.llvm_assertions_state == "unknown" else "static"
    if linkage != "dynamic":
        wrong.append(f"llvmlite links LLVM statically (assertions {llvm.config.llvm_assertions_state}): "
                     "the PyPI wheel, not a build against libLLVM-22")
    version = ".".join(map(str, llvm.llvm_version_info))
    if version != config("--version"):
        wrong.append(f"llvmlite's LLVM is {version}, llvm-config-22 says {config('--version')}")
    if config("--assertion-mode") != "OFF":
        wrong.append("llvm-config-22 reports an assertion-enabled LLVM")
    if llvm_assertions_enabled():
        wrong.append("llvmlite's LLVM has assertions (ABI-breaking checks) enabled")
    # the file llvm-config-22's libLLVM.so resolves to (Debian: a symlink into /usr/lib/<triple>/)
    want = os.path.realpath(os.path.join(config("--libdir"), "libLLVM.so"))
    with open("/proc/self/maps") as f:
        loaded = sorted({ln.split()[-1] for ln in f if "libLLVM" in ln and "/" in ln})
    if not any(os.path.realpath(p) == want for p in loaded):
        wrong.append(f"{want} is not loaded (loaded: {', '.join(loaded) or 'no separate libLLVM'})")
    found = (f"llvmlite {llvmlite.__version__} ({path}), LLVM {version}, {linkage} linkage, "
             f"libLLVM {', '.join(loaded) or 'not loaded separately'}")
    return wrong, found


def main() -> int:
    wrong, found = problems()
    if wrong:
        print(f"check_llvmlite: WRONG llvmlite build: {found}", file=sys.stderr)
        for w in wrong:
            print(f"  - {w}", file=sys.stderr)
        print("  rebuild it as scripts/install.sh does (docs/LLVMLITE.md)", file=sys.stderr)
        return 1
    print(f"check_llvmlite: ok: {found}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""Prints the PTX held by the gpu.binary ops of an MLIR module (stdin)."""

import re
import sys

ESCAPE = re.compile(r"\\([0-9A-Fa-f]{2})|\\(.)")


def unescape(s: str) -> str:
    return ESCAPE.sub(
        lambda m: chr(int(m.group(1), 16)) if m.group(1) else m.group(2), s)


def main() -> int:
    text = sys.stdin.read()
    found = False
    for m in re.finditer(r'assembly = "((?:[^"\\]|\\.)*)"', text):
        sys.stdout.write(unescape(m.group(1)))
        found = True
    if not found:
        print("extract-ptx: no gpu.binary with PTX (assembly) in the input",
              file=sys.stderr)
    return 0 if found else 1


if __name__ == "__main__":
    sys.exit(main())

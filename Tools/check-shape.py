#!/usr/bin/env python3
"""Checks the shape the library keeps (docs/ARCHITECTURE.md, "Modules"), which the compiler
cannot see inside one module:

  1. the engine's internals stay in Sources/BlobCache/Engine: no file elsewhere extends
     CacheState, Engine, DirectorySharing, CacheReader or CacheWriter, names CacheState or
     DirectorySharing in code, or reaches through an access value to the state
     (`$0.state`, `writer.state`, `reader.state`); the rest of the library asks the engine
     for operations (`Engine.set`, `Engine.read`, `Engine.write`, ...);
  2. whoever may write says so in its type: no run-time lock flag (`holdsLock`) and no
     error thrown to mean "run again under the lock" (`NeedsLock`) anywhere in Sources;
  3. no Swift file under Sources/BlobCache is longer than 400 lines.

Comments are not code: lines starting with `//` are skipped. Prints one `FILE:LINE: message`
per problem and exits 1; exits 0 with a summary when clean.

    python3 Tools/check-shape.py
"""

import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LIBRARY = os.path.join("Sources", "BlobCache")
ENGINE = os.path.join(LIBRARY, "Engine") + os.sep
MAX_LINES = 400

ENGINE_TYPES = r"(CacheState|Engine|DirectorySharing|CacheReader|CacheWriter)"
EXTENDS_ENGINE = re.compile(r"^\s*extension\s+" + ENGINE_TYPES + r"\b")
NAMES_INTERNALS = re.compile(r"\b(CacheState|DirectorySharing)\b|(\$0|\bwriter|\breader)\.state\b")
FLAGS = re.compile(r"\b(holdsLock|NeedsLock)\b")


def swift_files(folder):
    for directory, _, names in os.walk(os.path.join(ROOT, folder)):
        for name in sorted(names):
            if name.endswith(".swift"):
                path = os.path.join(directory, name)
                yield os.path.relpath(path, ROOT), path


def main():
    problems = []
    files = 0
    for relative, path in swift_files("Sources"):
        files += 1
        with open(path, encoding="utf-8") as handle:
            lines = handle.read().split("\n")
        in_library = relative.startswith(LIBRARY + os.sep)
        in_engine = relative.startswith(ENGINE)
        if in_library and len(lines) - (lines[-1] == "") > MAX_LINES:
            problems.append(f"{relative}:1: {len(lines) - 1} lines, more than {MAX_LINES}: split it, one idea per file")
        for number, line in enumerate(lines, 1):
            code = line.strip()
            if code.startswith("//"):
                continue
            if FLAGS.search(code):
                problems.append(f"{relative}:{number}: a run-time lock flag or lock-retry error; hand out a CacheReader or CacheWriter")
            if in_library and not in_engine:
                if EXTENDS_ENGINE.search(code):
                    problems.append(f"{relative}:{number}: extends an engine type outside Sources/BlobCache/Engine")
                elif NAMES_INTERNALS.search(code):
                    problems.append(f"{relative}:{number}: reaches into the engine's internals; call an Engine operation")
    for problem in problems:
        print(problem)
    if problems:
        print(f"check-shape: {len(problems)} problem(s)", file=sys.stderr)
        return 1
    print(f"check-shape: {files} Swift files, engine internals stay in Engine/, none over {MAX_LINES} lines")
    return 0


if __name__ == "__main__":
    sys.exit(main())

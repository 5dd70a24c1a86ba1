"""The loop the format readers' `check` commands share (Scripts/logreader.py,
Scripts/storereader.py): every folder under VECTORS that holds an
expected.json is compared, one `ok` or `FAIL` line each, then a count.

Python 3 standard library only.
"""

import json
import os


def check_vectors(vectors, compare, noun):
    """Calls `compare(folder, expected)` for each vector, which returns the
    disagreements as lines of text (none when it agrees). Returns the exit
    status: 1 if any vector disagrees or there is none, else 0."""
    names = sorted(n for n in os.listdir(vectors) if os.path.isfile(os.path.join(vectors, n, "expected.json")))
    failures = 0
    for name in names:
        with open(os.path.join(vectors, name, "expected.json")) as f:
            expected = json.load(f)
        problems = compare(os.path.join(vectors, name), expected)
        print(("FAIL " if problems else "ok   ") + name)
        for problem in problems:
            print("    " + problem)
        failures += bool(problems)
    print(f"{len(names) - failures} of {len(names)} {noun} agree")
    return 1 if failures or not names else 0

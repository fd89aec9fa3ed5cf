"""How the host's answer readers scale with the length of a hostile reply (issue #32).

    python benchmarks/extract_scaling.py

``extract_code`` and ``extract_written`` run on the event loop of every sweep cell, so their time
must grow linearly with the reply. For each attack (unclosed code fences, ``\\[`` openers,
``<think>`` tags, repeated "The answer is", a 40 K run of blank lines after a fence) this prints
the time for a 20 KB and an 80 KB reply and their ratio: about 4 is linear, 16 quadratic. (Before
the fix, 40 KB of unclosed fences took 24-31 s.)"""

from __future__ import annotations

import time

from physlab.grading.extract import extract_code, extract_written

ATTACKS = {
    "unclosed ```python fences": "```python\n",
    "unclosed \\[": "\\[",
    "unclosed <think>": "<think>",
    "'The answer is' repeated": "The answer is ",
    "blank lines after a fence": "\n",
}


def _time(text: str) -> float:
    best = float("inf")
    for _ in range(5):
        start = time.perf_counter()
        extract_code(text)
        extract_written(text)
        best = min(best, time.perf_counter() - start)
    return best


def main() -> None:
    print(f"{'attack':32} {'20 KB':>9} {'80 KB':>9} {'ratio':>6}")
    for name, unit in ATTACKS.items():
        prefix = "```\n" if name.startswith("blank") else ""
        small, large = (prefix + unit * (size // len(unit)) for size in (20_000, 80_000))
        a, b = _time(small), _time(large)
        print(f"{name:32} {a * 1000:8.1f}ms {b * 1000:8.1f}ms {b / max(a, 1e-9):6.1f}")


if __name__ == "__main__":
    main()

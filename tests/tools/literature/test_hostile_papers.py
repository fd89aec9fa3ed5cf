"""Papers made to stop the lab: an e-print that \\input's itself (its text would grow as the square of
its inputs), environments opened forty thousand times and never closed (a regex that scans to the end
for each), read through arXiv or a corpus folder. Their text is extracted in linear time from capped
input, in a child process with CPU and memory limits, while the event loop goes on."""

from __future__ import annotations

import asyncio
import json
import os
import stat
import subprocess

import pytest

from physlab.tools.literature.fulltext import PdfLimits, paper_text
from physlab.tools.literature.standin import eprint_gzip
from tests.capped import run_capped

# k self-inputs in S bytes: inlined naively, k^2 * S bytes (here 120^2 * 150 kB = 2.2 GB) from a few
# hundred gzipped bytes; the inputs sit after \end{document}, so the paper still compiles.
SELF_INPUT = ("\\documentclass{article}\\begin{document}The toric code has distance L.\\end{document}\n"
              + "\\input{main}\n" * 120 + "x" * 150_000 + "\n")
UNCLOSED = ("\\documentclass{article}\\begin{document}Before the figures.\n\\iffalse\n"
            + "\\begin{figure}\n" * 40_000 + "\\fi\nAfter them, the threshold is one percent.\n\\end{document}\n")

VICTIM_EPRINT = """
import asyncio, json, sys
from physlab.tools.literature.fulltext import PdfLimits, paper_text
text = asyncio.run(paper_text(sys.stdin.buffer.read(), max_unpacked=20_000_000, max_chars=400_000, pdf=PdfLimits()))
print(json.dumps({"chars": len(text.text), "text": text.text[:2000]}))
"""

VICTIM_CORPUS = """
import asyncio, json, sys
from pathlib import Path
from physlab.tools.literature.corpus import CorpusIndex
index = CorpusIndex(Path(sys.argv[1] if len(sys.argv) > 1 else "notes"), Path("cache/corpus.sqlite"))
report = asyncio.run(index.update())
print(json.dumps({"indexed": report.indexed, "failed": report.failed,
                  "hits": [h.key for h in index.search("toric code distance")]}))
"""


def test_an_eprint_that_inputs_itself_is_read_once_within_the_memory_cap():
    done = run_capped(VICTIM_EPRINT, memory_mb=1024, stdin=eprint_gzip(SELF_INPUT))
    assert done.returncode == 0, done.stderr.decode()[-600:]
    got = json.loads(done.stdout)
    assert "The toric code has distance L." in got["text"]
    assert got["chars"] <= 400_000


def test_a_corpus_note_that_inputs_itself_is_indexed_within_the_memory_cap(tmp_path):
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "main.tex").write_text(SELF_INPUT)
    done = run_capped(VICTIM_CORPUS, memory_mb=1024, cwd=tmp_path)
    assert done.returncode == 0, done.stderr.decode()[-600:]
    got = json.loads(done.stdout)
    assert got["indexed"] == ["main.tex"] and got["hits"] == ["corpus:main.tex"]


class Heartbeat:
    """A task beating every 20 ms on the loop: the longest gap between beats is how long the loop was
    held by someone else."""

    def __init__(self) -> None:
        self.longest = 0.0
        self.beats = 0

    async def run(self) -> None:
        loop = asyncio.get_running_loop()
        last = loop.time()
        while True:
            await asyncio.sleep(0.02)
            now = loop.time()
            self.longest, last = max(self.longest, now - last), now
            self.beats += 1


async def _while_beating(coro):
    beat = Heartbeat()
    task = asyncio.create_task(beat.run())
    try:
        return await coro, beat
    finally:
        task.cancel()


async def test_forty_thousand_unclosed_figures_do_not_hold_the_event_loop():
    text, beat = await _while_beating(paper_text(eprint_gzip(UNCLOSED), max_unpacked=20_000_000, max_chars=400_000,
                                                 pdf=PdfLimits()))
    assert "Before the figures." in text.text and "threshold is one percent" in text.text
    # every other role's requests go on meanwhile (the old stripping held the loop for the whole scan)
    assert beat.longest < 2.0, f"the event loop was held {beat.longest:.1f} s"


async def test_unclosed_figures_in_a_corpus_note_do_not_hold_the_event_loop(tmp_path):
    from physlab.tools.literature.corpus import CorpusIndex

    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "figures.tex").write_text(UNCLOSED)
    index = CorpusIndex(tmp_path / "notes", tmp_path / "cache" / "corpus.sqlite")
    try:
        report, beat = await _while_beating(index.update())
        assert report.indexed == ["figures.tex"]
        assert [h.key for h in index.search("threshold one percent")] == ["corpus:figures.tex"]
    finally:
        index.close()
    assert beat.longest < 2.0, f"the event loop was held {beat.longest:.1f} s"


# ---- special files in a corpus folder -------------------------------------------------------------

VICTIM_SPECIAL = """
import asyncio, json
from pathlib import Path
from physlab.tools.literature.corpus import CorpusIndex
index = CorpusIndex(Path("notes"), Path("cache/corpus.sqlite"))
report = asyncio.run(index.update())
print(json.dumps({"indexed": report.indexed, "failed": report.failed, "skipped": report.skipped,
                  "hits": [h.key for h in index.search("grant proposal")]}))
"""


def _fifo(path):
    os.mkfifo(path)


def _zero(path):
    try:
        os.mknod(path, 0o666 | stat.S_IFCHR, os.makedev(1, 5))  # what /dev/zero is
    except PermissionError:
        pytest.skip("making a character device needs root")


def _loop(path):
    path.symlink_to(path.name)


@pytest.mark.parametrize("name, make", [("paper.md", _fifo), ("zero.md", _zero), ("loop.md", _loop)],
                         ids=["a FIFO", "a character device", "a link to itself"])
def test_a_special_file_in_the_corpus_is_skipped_and_the_rest_indexed(tmp_path, name, make):
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "mine.md").write_text("# Mine\n\nthe grant proposal draft")
    make(notes / name)
    try:
        done = run_capped(VICTIM_SPECIAL, memory_mb=1024, cwd=tmp_path, timeout=60)
    except subprocess.TimeoutExpired:
        pytest.fail(f"indexing a folder with {name} in it did not end")
    assert done.returncode == 0, done.stderr.decode()[-600:]
    got = json.loads(done.stdout)
    assert got["indexed"] == ["mine.md"] and got["hits"] == ["corpus:mine.md"]
    (said,) = got["skipped"]
    assert said.startswith(f"{name}: ") and ("not a regular file" in said or "link" in said)

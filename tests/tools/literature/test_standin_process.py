"""The stand-in runs on its own (`python -m physlab.tools.literature.standin`) for offline demos."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from physlab.tools.literature import Library, LiteratureSettings


@pytest.mark.slow
async def test_standin_process_serves_both_apis_until_stdin_closes(tmp_path):
    proc = subprocess.Popen([sys.executable, "-m", "physlab.tools.literature.standin"], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None and proc.stdin is not None
        base = proc.stdout.readline().strip()
        assert base.startswith("http://127.0.0.1:")
        async with Library(LiteratureSettings().for_standin(base), cache_dir=tmp_path) as lib:
            res = await lib.search_literature("toric code anyons")
            paper = await lib.read_paper("quant-ph/9707021", query="stabilizers")
        proc.stdin.close()
        summary = json.loads(proc.stdout.readline())
        assert proc.wait(timeout=10) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
    # found by both services: one hit with both identities
    assert [(h.key, h.inspire_recid, h.citation_count) for h in res.hits] == [("arXiv:quant-ph/9707021", 448893, 1)]
    assert paper.text_from == "latex source" and "\\sigma^x_j" in paper.passages[0].text
    assert summary["requests"]["arxiv"] >= 2 and summary["requests"]["inspire"] == 1

"""A source that cannot be asked is one 'unavailable: …' line in the tool's result, never a traceback;
replies are capped and a stalled server is given up on."""

from __future__ import annotations

import secrets
import socket
import time

from physlab.tools.literature import Library, LiteratureSettings
from physlab.tools.literature.standin import LiteratureStandin, StandinPaper, eprint_tar


def closed_port() -> int:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


async def test_unreachable_services_are_one_line_each(tmp_path):
    settings = LiteratureSettings().for_standin(f"http://127.0.0.1:{closed_port()}")
    async with Library(settings.model_copy(update={"arxiv_retries": 0}), cache_dir=tmp_path) as lib:
        res = await lib.search_literature("toric code")
        paper = await lib.read_paper("INSPIRE:451647")
        cites = await lib.citations("hep-th/9711200")
    assert res.hits == []
    port = settings_port(settings)
    assert sorted(res.unavailable) == [f"unavailable: INSPIRE: cannot reach 127.0.0.1:{port}: connection refused",
                                       f"unavailable: arXiv: cannot reach 127.0.0.1:{port}: connection refused"]
    assert paper.unavailable[0].startswith("unavailable: INSPIRE: cannot reach")
    assert cites.unavailable[0].startswith("unavailable: INSPIRE: cannot reach") and cites.hits == []
    for line in res.unavailable + paper.unavailable + cites.unavailable:
        assert "\n" not in line and "Traceback" not in line


def settings_port(s: LiteratureSettings) -> int:
    return int(s.inspire_api_url.rsplit(":", 1)[1].split("/")[0])


async def test_a_stalled_server_is_given_up_after_the_timeout(standin, tmp_path):
    standin.inject("stall", path="/api/query")
    standin.inject("stall", path="/api/literature")
    t0 = time.monotonic()
    async with Library(standin.settings(timeout_s=0.5, arxiv_retries=0), cache_dir=tmp_path) as lib:
        res = await lib.search_literature("toric")
        again = await lib.search_literature("toric", source="arxiv")
    assert time.monotonic() - t0 < 10
    assert sorted(res.unavailable) == [
        f"unavailable: INSPIRE: no answer from {standin.base_url[7:]} within 0.5 s",
        f"unavailable: arXiv: no answer from {standin.base_url[7:]} within 0.5 s"]
    # the stalled request was given up, not its source: the next search is answered
    assert again.unavailable == [] and again.hits[0].arxiv_id == "quant-ph/9707021"


async def test_a_dropped_connection_or_server_error_is_one_line(standin, tmp_path):
    standin.inject("server_error", path="/api/literature")
    standin.inject("drop", times=2, path="/api/query")
    async with Library(standin.settings(arxiv_retries=1), cache_dir=tmp_path) as lib:
        res = await lib.search_literature("toric")
    assert sorted(res.unavailable) == [
        f"unavailable: INSPIRE: {standin.base_url[7:]} answered HTTP 500",
        f"unavailable: arXiv: cannot reach {standin.base_url[7:]}: connection closed without an answer"]


async def test_a_download_larger_than_the_cap_is_refused(tmp_path):
    big = StandinPaper("2101.00002", "Big", ["A B"], "short abstract about gauge theory", "2021-01-01",
                       eprint=eprint_tar({"main.tex": "\\documentclass{article}\\begin{document}"
                                                     + secrets.token_hex(20_000) + "\\end{document}"}))
    with LiteratureStandin([big]) as srv:
        async with Library(srv.settings(max_download_bytes=2_000), cache_dir=tmp_path) as lib:
            paper = await lib.read_paper("2101.00002")
    # the abstract is still there to read; the text was not taken
    assert paper.text_from == "abstract" and paper.passages[0].text == "short abstract about gauge theory"
    assert len(paper.unavailable) == 1 and "larger than the 2,000-byte cap" in paper.unavailable[0]


async def test_inspire_maintenance_page_is_not_json(standin, tmp_path):
    standin.inject("not_json", path="/api/literature")
    async with Library(standin.settings(), cache_dir=tmp_path) as lib:
        res = await lib.search_literature("toric", source="inspire")
    assert res.unavailable == [f"unavailable: INSPIRE: {standin.base_url[7:]} sent a reply that is not JSON"]


async def test_a_feed_with_a_broken_date_is_unreadable_not_unreachable(tmp_path):
    bad = StandinPaper("2101.00003", "Bad date", ["A B"], "abstract", "2021-13-45")
    with LiteratureStandin([bad]) as srv:
        host = srv.base_url[len("http://"):]
        async with Library(srv.settings(), cache_dir=tmp_path) as lib:
            res = await lib.search_literature("bad date", source="arxiv")
    assert res.unavailable == [f"unavailable: arXiv: {host} sent a feed that cannot be read (ValueError)"]

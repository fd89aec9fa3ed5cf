"""No literature tool reaches a non-loopback address in the tests: the guard every test here runs
under really stops (and reports) one that tries."""

from __future__ import annotations

from physlab.tools.literature import Library, LiteratureSettings


async def test_default_settings_point_at_the_real_services():
    s = LiteratureSettings()
    assert (s.arxiv_api_url, s.arxiv_site_url, s.inspire_api_url) == (
        "https://export.arxiv.org/api/query", "https://arxiv.org", "https://inspirehep.net/api")
    assert (s.arxiv_delay_s, s.inspire_max_requests, s.inspire_window_s) == (3.0, 15, 5.0)


async def test_the_guard_stops_a_library_left_at_its_defaults(network_guard, tmp_path):
    settings = LiteratureSettings(arxiv_delay_s=0, arxiv_retries=0, inspire_window_s=0)
    async with Library(settings, cache_dir=tmp_path) as lib:
        res = await lib.search_literature("toric code")
        paper = await lib.read_paper("1207.7214")
    assert sorted(res.unavailable) == ["unavailable: INSPIRE: cannot reach inspirehep.net: host name not resolved",
                                       "unavailable: arXiv: cannot reach export.arxiv.org: host name not resolved"]
    assert paper.unavailable == ["unavailable: arXiv: cannot reach export.arxiv.org: host name not resolved"]
    assert set(network_guard.attempts) == {"resolve export.arxiv.org", "resolve inspirehep.net"}
    network_guard.attempts.clear()  # seen and expected: the fixture checks the rest of the test

"""Paper keys as models write them, and the source records a role cites."""

from __future__ import annotations

import pytest

from physlab.tools.literature import BadKey, Library, Source, format_reference, parse_key
from physlab.tools.literature.models import SearchHit


@pytest.mark.parametrize("text, key", [
    ("1207.7214", "arXiv:1207.7214"),
    ("arXiv:2101.01234v2", "arXiv:2101.01234v2"),
    ("  arxiv:hep-th/9711200 ", "arXiv:hep-th/9711200"),
    ("https://arxiv.org/abs/1207.7214v1", "arXiv:1207.7214v1"),
    ("https://arxiv.org/pdf/2101.01234.pdf", "arXiv:2101.01234"),
    ("<https://arxiv.org/abs/math.GT/0309136>", "arXiv:math.GT/0309136"),
    ("inspire:451647", "INSPIRE:451647"),
    ("INSPIRE:0451647", "INSPIRE:451647"),
    ("https://inspirehep.net/literature/451647", "INSPIRE:451647"),
    ("doi:10.1103/PhysRevLett.19.1264", "DOI:10.1103/PhysRevLett.19.1264"),
    ("10.1016/S0003-4916(02)00018-0", "DOI:10.1016/S0003-4916(02)00018-0"),
    ("https://doi.org/10.1023/A:1026654312961", "DOI:10.1023/A:1026654312961"),
    ("corpus:notes/./lindblad.md", "corpus:notes/lindblad.md"),
])
def test_keys_as_written(text, key):
    assert str(parse_key(text)) == key


@pytest.mark.parametrize("text", [
    "", "12345", "1207.72", "1207.7214x", "hep-th/97112", "arXiv:../../etc/passwd", "inspire:abc", "inspire:",
    "doi:11.1000/x", "doi:10.1000/has space", "corpus:../secret.md", "corpus:/etc/passwd", "corpus:", "x" * 400,
    "javascript:alert(1)", "Witten 1998",
])
def test_hard_negatives_are_one_line(text):
    with pytest.raises(BadKey) as err:
        parse_key(text)
    assert "\n" not in str(err.value) and "expected" in str(err.value)


def test_versions_are_one_paper():
    assert parse_key("1207.7214v2").canonical() == parse_key("arXiv:1207.7214").canonical() == "arXiv:1207.7214"


def hit(**kw) -> SearchHit:
    base = dict(key="arXiv:hep-th/9711200", title="The Large N limit of superconformal field theories and supergravity",
                authors=["Juan Martin Maldacena"], year=1997, url="https://arxiv.org/abs/hep-th/9711200",
                arxiv_id="hep-th/9711200", doi="10.1023/A:1026654312961", origin="arxiv",
                summary="We show that the large N limit of certain conformal field theories includes supergravity.")
    return SearchHit(**{**base, **kw})


def test_a_source_is_its_key_and_passage():
    a, b = hit().cite(), hit().cite()
    assert a == b and a.id.startswith("src-") and len(a.id) == 14
    assert hit(summary="another passage").cite().id != a.id
    assert Source.model_validate_json(a.model_dump_json()) == a  # what the ResearchState stores reads back


def test_reference_list_entry():
    assert format_reference(hit().cite(), 1) == (
        "[1] Juan Martin Maldacena, “The Large N limit of superconformal field theories and supergravity” (1997), "
        "arXiv:hep-th/9711200, doi:10.1023/A:1026654312961. <https://arxiv.org/abs/hep-th/9711200>")
    many = hit(key="INSPIRE:1", authors=["A", "B", "C", "D"], year=None, url=None, doi=None, arxiv_id=None)
    assert format_reference(many.cite()) == "A et al., “The Large N limit of superconformal field theories and " \
                                            "supergravity”, INSPIRE:1."
    two = hit(authors=["Dennis, Eric", "et al."], title="Topological *quantum* [memory]", url="javascript:alert(1)")
    assert format_reference(two.cite()) == ("Dennis, Eric et al., “Topological \\*quantum\\* \\[memory]” (1997), "
                                            "arXiv:hep-th/9711200, doi:10.1023/A:1026654312961.")


async def test_source_for_accepts_only_what_a_tool_showed(standin, tmp_path):
    async with Library(standin.settings(), cache_dir=tmp_path) as lib:
        paper = await lib.read_paper("quant-ph/9707021", query="stabilizers")
        shown = paper.passages[0].text
        quote = "On an $L \\times L$ torus the code has $k=2$ logical\n qubits"
        src = lib.source_for("arXiv:quant-ph/9707021v1", quote)
        assert src is not None and src.key == "arXiv:quant-ph/9707021" and src.title.startswith("Fault-tolerant")
        assert " ".join(quote.split()).split("$k=2$")[0] in " ".join(shown.split())
        # a quote no tool gave, or from another paper, is not a source
        assert lib.source_for("arXiv:quant-ph/9707021", "the code has k=7 logical qubits") is None
        assert lib.source_for("hep-th/9711200", "On an $L \\times L$ torus") is None
        assert lib.source_for("not a key", quote) is None

"""Full text from hostile bytes: e-print archives read in memory with caps, PDFs parsed in a child
process with limits."""

from __future__ import annotations

import io
import tarfile
import zlib

import pytest

from physlab.tools.literature.fulltext import FulltextError, PdfLimits, latex_files, paper_text, pdf_text
from physlab.tools.literature.standin import eprint_gzip, eprint_tar, minimal_pdf, pdf_document


async def test_pdf_pages_beyond_the_limit_are_not_read():
    pdf = minimal_pdf([[f"page {i} text"] for i in range(1, 6)])
    text = await pdf_text(pdf, PdfLimits(max_pages=2))
    assert "page 2 text" in text.text and "page 3" not in text.text


@pytest.mark.parametrize("data, why", [
    (b"<html>arXiv is down</html>", "not a PDF"),
    (b"%PDF-1.4\n1 0 obj garbage", "unreadable PDF"),
])
async def test_bytes_that_are_not_a_readable_pdf_are_one_line(data, why):
    with pytest.raises(FulltextError) as err:
        await pdf_text(data, PdfLimits())
    assert str(err.value).startswith(why) and "\n" not in str(err.value)


async def test_a_decompression_bomb_in_a_pdf_is_stopped():
    bomb = zlib.compress(b"0" * 150_000_000, 9)  # 150 MB of page content from ~150 kB
    body = pdf_document([b"<< /Type /Catalog /Pages 2 0 R >>", b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
                         b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R >>",
                         b"<< /Length %d /Filter /FlateDecode >>\nstream\n" % len(bomb) + bomb + b"\nendstream"])
    with pytest.raises(FulltextError) as err:
        await pdf_text(body, PdfLimits(memory_mb=512))
    assert "limit" in str(err.value) or "no text" in str(err.value)


def test_a_gzip_bomb_eprint_is_stopped_at_the_cap():
    bomb = eprint_gzip("\\documentclass{article}" + " " * 5_000_000)
    with pytest.raises(FulltextError, match="unpacks to more than 1,000,000 bytes"):
        latex_files(bomb, max_unpacked=1_000_000)


def test_archive_members_are_only_names_never_paths(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        for name, data in (("../../escape.tex", b"\\documentclass{article}\\begin{document}hi\\end{document}"),
                           ("/abs/path.tex", b"x")):
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
        link = tarfile.TarInfo("link.tex")
        link.type, link.linkname = tarfile.SYMTYPE, "/etc/passwd"
        tar.addfile(link)
    files = latex_files(buf.getvalue(), max_unpacked=1_000_000)
    assert set(files) == {"escape.tex", "abs/path.tex"}  # the link is not followed
    assert list(tmp_path.iterdir()) == [] and not (tmp_path.parent / "escape.tex").exists()


async def test_every_eprint_shape_arxiv_serves():
    tex = "\\documentclass{article}\\begin{document}\\section{Result}$E = mc^2$\\end{document}"
    for data in (eprint_tar({"a.tex": tex}), eprint_gzip(tex), tex.encode()):
        text = await paper_text(data, max_unpacked=10**6, max_chars=10**5, pdf=PdfLimits())
        assert text.kind == "latex source" and "$E = mc^2$" in text.text and "Result" in text.text
    with pytest.raises(FulltextError, match="no LaTeX and no PDF"):
        await paper_text(eprint_tar({"figure.eps": "%!PS"}), max_unpacked=10**6, max_chars=10**5, pdf=PdfLimits())

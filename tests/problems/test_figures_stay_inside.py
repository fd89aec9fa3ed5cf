"""A problem's figures are sent to the model's provider: a problem file (or a dataset) must not be
able to name a file outside its own directory — an absolute path, ``../``, or a link that points
out — nor pass off a file that is not an image. Each is refused with one line; an importer copies
no such file into the stored suite."""

from __future__ import annotations

import json
import os
import shutil

import pytest

from physlab.cli import main
from physlab.problems import load_file
from physlab.problems.suites import BUILTIN_DIR

PNG = b"\x89PNG\r\n\x1a\n" + b"\0" * 16
KEY = b"-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\n-----END OPENSSH PRIVATE KEY-----\n"


@pytest.fixture
def home_key(tmp_path):
    """A private key outside the problem's directory, as ~/.ssh/id_rsa would be."""
    secret = tmp_path / "home" / ".ssh" / "id_rsa"
    secret.parent.mkdir(parents=True)
    secret.write_bytes(KEY)
    return secret


def one_line_error(path, capsys) -> str:
    with pytest.raises(SystemExit) as exc:
        main(["problems", "show", str(path)])
    err = capsys.readouterr().err
    assert exc.value.code == 2 and "Traceback" not in err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and str(path) in lines[0], err
    return lines[0]


def problem_dir(tmp_path):
    d = tmp_path / "suite"
    (d / "figs").mkdir(parents=True)
    return d


def test_an_absolute_figure_path_outside_the_problems_directory_is_refused(tmp_path, home_key, capsys):
    d = problem_dir(tmp_path)
    p = d / "p.yaml"
    p.write_text(f"problem: Read the figure.\nimages: [{home_key}]\n")
    line = one_line_error(p, capsys)
    assert "field 'images'" in line and "outside the problem's directory" in line, line


def test_a_figure_path_that_climbs_out_with_dotdot_is_refused(tmp_path, home_key, capsys):
    d = problem_dir(tmp_path)
    p = d / "p.yaml"
    p.write_text("problem: Read the figure.\nimages: [figs/../../home/.ssh/id_rsa]\n")
    line = one_line_error(p, capsys)
    assert "field 'images'" in line and "outside the problem's directory" in line, line


def test_a_figure_that_is_a_link_out_of_the_directory_is_refused(tmp_path, home_key, capsys):
    d = problem_dir(tmp_path)
    (d / "figs" / "circuit.png").symlink_to(home_key)
    p = d / "p.yaml"
    p.write_text("problem: Read the figure.\nimages: [figs/circuit.png]\n")
    line = one_line_error(p, capsys)
    assert "field 'images'" in line and "figs/circuit.png" in line and "link" in line, line


def test_a_link_out_in_a_hipho_file_is_refused_too(tmp_path, home_key, capsys):
    d = problem_dir(tmp_path)
    (d / "figs" / "f.png").symlink_to(home_key)
    p = d / "exam.json"
    p.write_text(json.dumps([{"information": "sheet"}, {"id": "H1", "context": "c", "question": "q", "marking": [],
                                                        "answer": ["\\boxed{1}"], "image_question": ["figs/f.png"]}]))
    line = one_line_error(p, capsys)
    assert "field '[1].image_question'" in line and "link" in line, line


def test_a_figure_that_is_not_an_image_is_refused(tmp_path, capsys):
    d = problem_dir(tmp_path)
    (d / "figs" / "plot.png").write_bytes(KEY)  # a key renamed .png, inside the directory
    p = d / "p.yaml"
    p.write_text("problem: Read the plot.\nimages: [figs/plot.png]\n")
    line = one_line_error(p, capsys)
    assert "field 'images'" in line and "figs/plot.png" in line and "not a PNG, JPEG, GIF or WebP image" in line


def test_figures_inside_the_directory_still_load_links_within_it_included(tmp_path):
    d = problem_dir(tmp_path)
    (d / "figs" / "a.png").write_bytes(PNG)
    (d / "figs" / "b.jpg").write_bytes(b"\xff\xd8\xff\xe0" + b"\0" * 16)
    (d / "figs" / "same.png").symlink_to("a.png")  # a link that stays inside
    p = d / "p.yaml"
    p.write_text(f"problem: q\nimages: [figs/a.png, {d / 'figs' / 'b.jpg'}, figs/same.png]\n")
    (prob,) = load_file(p)
    assert prob.images == [(d / "figs" / n).resolve() for n in ("a.png", "b.jpg", "a.png")]


def test_a_problem_named_relative_to_the_working_directory_finds_its_figures(tmp_path, monkeypatch, capsys):
    d = problem_dir(tmp_path)
    (d / "figs" / "a.png").write_bytes(PNG)
    (d / "p.yaml").write_text("problem: q\nimages: [figs/a.png, ./figs/../figs/a.png]\n")
    monkeypatch.chdir(d)
    (prob,) = load_file("p.yaml")
    assert prob.images == [(d / "figs" / "a.png").resolve()] * 2
    monkeypatch.chdir(d / "figs")
    assert load_file("../p.yaml")[0].images == prob.images


def test_nothing_outside_reaches_a_prompt(tmp_path, home_key):
    """What the provider would get: the problem does not load, so no part of the key is sent."""
    from physlab.errors import UserError

    d = problem_dir(tmp_path)
    (d / "figs" / "circuit.png").symlink_to(home_key)
    p = d / "p.yaml"
    p.write_text("problem: q\nimages: [figs/circuit.png]\n")
    with pytest.raises(UserError):
        load_file(p)


# ---------------------------------------------------------------- importers


def hipho_dataset(tmp_path):
    d = tmp_path / "HiPhO"
    shutil.copytree(BUILTIN_DIR / "hipho_sample", d / "data", ignore=shutil.ignore_patterns("README.md", "LICENSE"))
    (d / "README.md").write_text("---\nlicense: mit\n---\n# HiPhO\n")
    return d


def run(argv, capsys):
    with pytest.raises(SystemExit) as exc:
        main(argv)
    out = capsys.readouterr()
    return exc.value.code, out.out, out.err


def stored_files(tmp_path):
    root = tmp_path / "home" / "suites"
    return [p for p in root.rglob("*") if p.is_file()] if root.exists() else []


def test_the_hub_importer_does_not_follow_a_figure_link_out_of_the_dataset(tmp_path, home_key, capsys):
    d = hipho_dataset(tmp_path)
    figure = next((d / "data" / "image_question").iterdir())
    figure.unlink()
    figure.symlink_to(home_key)
    code, _, err = run(["problems", "import", "hipho", str(d)], capsys)
    assert code == 2 and "Traceback" not in err and len(err.strip().splitlines()) == 1, err
    assert figure.name in err and "link" in err, err
    assert not any(KEY in f.read_bytes() for f in stored_files(tmp_path))


def test_the_hub_importer_does_not_copy_a_license_that_links_out(tmp_path, home_key, capsys):
    d = hipho_dataset(tmp_path)
    (d / "LICENSE").symlink_to(home_key)
    code, _, err = run(["problems", "import", "hipho", str(d)], capsys)
    assert code == 2 and "Traceback" not in err and len(err.strip().splitlines()) == 1, err
    assert "LICENSE" in err and "link" in err, err
    assert not any(KEY in f.read_bytes() for f in stored_files(tmp_path))


def test_the_hub_importer_does_not_read_a_data_file_that_links_out(tmp_path, capsys):
    d = hipho_dataset(tmp_path)
    outside = tmp_path / "elsewhere" / "exam.json"
    outside.parent.mkdir()
    shutil.move(next((d / "data").glob("*.json")), outside)
    (d / "data" / "exam.json").symlink_to(outside)
    code, _, err = run(["problems", "import", "hipho", str(d)], capsys)
    assert code == 2 and len(err.strip().splitlines()) == 1 and "link" in err, err


def test_a_hub_cache_snapshot_whose_files_link_into_its_blobs_still_imports(tmp_path, capsys):
    """huggingface_hub's cache: snapshots/<rev>/<file> are links to ../../blobs/<hash>, inside the
    dataset's own cache folder. Those are the dataset's files, not links out."""
    src = hipho_dataset(tmp_path)
    repo = tmp_path / "hub" / "datasets--SciYu--HiPhO"
    snap = repo / "snapshots" / "abc123"
    (repo / "blobs").mkdir(parents=True)
    for i, f in enumerate(sorted(p for p in src.rglob("*") if p.is_file())):
        blob = repo / "blobs" / f"{i:04x}"
        shutil.copy2(f, blob)
        link = snap / f.relative_to(src)
        link.parent.mkdir(parents=True, exist_ok=True)
        link.symlink_to(os.path.relpath(blob, link.parent))
    code, out, err = run(["problems", "import", "hipho", str(snap), "--name", "HiPhO"], capsys)
    assert code == 0, err
    assert "imported 5 hipho problems" in out


def test_importing_a_plain_exam_file_does_not_copy_a_license_that_links_out(tmp_path, home_key, capsys):
    d = tmp_path / "exam"
    shutil.copytree(BUILTIN_DIR / "hipho_sample", d, ignore=shutil.ignore_patterns("README.md", "LICENSE"))
    (d / "LICENSE").symlink_to(home_key)
    exam = next(d.glob("*.json"))
    code, _, err = run(["problems", "import", "hipho", str(exam)], capsys)
    assert code == 2 and len(err.strip().splitlines()) == 1 and "LICENSE" in err and "link" in err, err
    assert not any(KEY in f.read_bytes() for f in stored_files(tmp_path))

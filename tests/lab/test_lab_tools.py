"""The lab's tools beyond Python (issue 37): which role gets which tool, the computer settling a step
in FORM for real, the surveyor citing the physicist's own notes, and the cited source in the
ResearchState, RESEARCH_STATE.md and ANSWER.md's references."""

from __future__ import annotations

import pytest

from physlab.lab.answer import final_markdown, references_markdown
from physlab.lab.roles._base import LabEnv
from physlab.lab.scenarios.dirac import dirac_problem, write_corpus
from physlab.lab.state import transitions as T
from physlab.lab.state.models import ResearchState, SourceUse
from physlab.lab.state.render import render_state
from physlab.lab.tools import LabTools
from physlab.tools import cas
from physlab.tools.choice import ToolChoice
from physlab.tools.literature import Source
from tests.lab.helpers import solve, state_of


def _needs(language: str) -> None:
    status = cas.system_status(language)
    if not status.available:
        pytest.skip(status.reason)


class _Ctx:
    sandbox = None


def _env() -> LabEnv:
    return LabEnv(ctx=_Ctx())  # type: ignore[arg-type]


async def test_each_role_gets_the_tools_its_work_needs(tmp_path):
    _needs("form")
    corpus = write_corpus(tmp_path / "notes")
    async with LabTools(ToolChoice(cas=True, corpus=str(corpus)), _env(), tmp_path / "cache") as tools:
        names = {role: [t.name for t in tools.tools(role)] for role in
                 ("surveyor", "planner", "orchestrator", "researcher", "computer", "reviewer", "critic",
                  "adjudicator", "formatter")}
        assert names["computer"] == names["adjudicator"] == ["execute"]
        assert names["reviewer"] == ["execute", "search_literature", "read_paper", "search_corpus", "cite_source"]
        for role in ("surveyor", "researcher", "critic"):
            assert names[role] == ["search_literature", "read_paper", "search_corpus", "cite_source"], role
        assert names["planner"] == names["orchestrator"] == names["formatter"] == []
        execute = tools.tools("computer")[0]
        # the description carries each installed system's tested example, so a model sees a correct one
        assert "Trace4, 1;" in execute.description and "T = 4*p.q;" in execute.description
        assert "cite_source" in tools.guide("surveyor") and tools.guide("computer") == ""
        assert any(n.startswith("literature: corpus: 1 indexed") for n in tools.notices), tools.notices
    async with LabTools(ToolChoice.parse("none"), _env(), tmp_path / "cache") as tools:
        assert all(tools.tools(r) == [] for r in ("computer", "surveyor", "reviewer"))


async def test_a_quote_no_tool_showed_is_not_cited(tmp_path):
    corpus = write_corpus(tmp_path / "notes")
    async with LabTools(ToolChoice(cas=False, corpus=str(corpus)), _env(), tmp_path / "cache") as tools:
        cite = next(t for t in tools.tools("critic") if t.name == "cite_source")
        said = await cite.function(key="corpus:dirac-notes.md", quote="the trace of four gamma matrices is 8",
                                   used_for="a made-up number")
        assert said.startswith("not cited") and tools.take_cited() == []


def _source(n: int) -> Source:
    return Source(id=f"src-000000000{n}", key="corpus:dirac-notes.md", title="Notes on Dirac traces",
                  passage=f"the trace of four gamma matrices, passage {n}", origin="corpus")


def test_cited_sources_are_kept_once_with_every_use_and_shown_in_the_state_and_the_answer():
    s = ResearchState(problem_id="p")
    s = T.cite_sources(s, [(_source(1), SourceUse(role="surveyor", purpose="the expected form"))])
    s = T.cite_sources(s, [(_source(1), SourceUse(role="reviewer", purpose="checked c")),
                           (_source(1), SourceUse(role="surveyor", purpose="the expected form")),
                           (_source(2), SourceUse(role="critic"))])
    assert [x.id for x in s.sources] == ["src-0000000001", "src-0000000002"]
    assert [u.role for u in s.sources[0].uses] == ["surveyor", "reviewer"]
    md = render_state(s)
    assert "## Sources" in md and "used by the reviewer (it. 0): checked c" in md
    refs = references_markdown(s)
    assert refs.startswith("## References (verified)") and "[1] `src-0000000001` “Notes on Dirac traces”" in refs
    assert "[2] `src-0000000002`" in refs and "used by: surveyor (the expected form); reviewer (checked c)" in refs
    assert refs in final_markdown(s, "c = 4", sources=[], complete=False)
    assert references_markdown(ResearchState()) == ""


async def test_a_lab_run_computes_in_form_and_its_answer_cites_the_corpus(tmp_path):
    """The scripted lab with --tools cas,corpus=DIR: FORM really runs in the sandbox (the coefficient
    in the answer is the one it printed), and the passage the surveyor cites from the physicist's
    notes is a source in the state, in RESEARCH_STATE.md and in ANSWER.md's references."""
    _needs("form")
    corpus = write_corpus(tmp_path / "notes")
    ws = tmp_path / "run"
    record = await solve(ws, "scripted:lab-dirac", problem=dirac_problem(), tools=f"cas,corpus={corpus}",
                         max_iterations=6)
    assert record.status == "complete", record.stop_reason
    assert record.verdict is not None and record.verdict.verdict == "correct"
    s = state_of(ws)
    form_runs = [x for ev in s.evidence for x in ev.scripts if x.language == "form"]
    assert form_runs and "Trace4" in form_runs[0].code
    assert "4*d_(mu,nu)*d_(rho,sigma)" in form_runs[0].output           # FORM's own output, kept as evidence
    (source,) = s.sources
    assert source.key == "corpus:dirac-notes.md" and source.origin == "corpus"
    assert "trace of four gamma matrices is" in source.passage and source.uses[0].role == "surveyor"
    answer = (ws / "ANSWER.md").read_text()
    assert "## References" in answer and "Notes on Dirac traces" in answer and "corpus:dirac-notes.md" in answer
    assert "## Sources" in (ws / "RESEARCH_STATE.md").read_text()
    assert record.details.get("workspace") and not (ws / "error.log").exists()
    assert ".cache" not in _tracked(ws)           # the corpus index stays out of the run's history


def _tracked(ws) -> str:
    import subprocess

    return subprocess.run(["git", "ls-files"], cwd=ws, capture_output=True, text=True, check=True).stdout


async def test_without_tools_the_same_scenario_runs_python_only_and_cites_nothing(tmp_path):
    ws = tmp_path / "run"
    record = await solve(ws, "scripted:lab-dirac", problem=dirac_problem(), tools="none", max_iterations=3)
    s = state_of(ws)
    assert s.sources == [] and "## References" not in ((ws / "ANSWER.md").read_text()
                                                       if (ws / "ANSWER.md").exists() else "")
    assert record.status in ("partially_complete", "no_answer", "complete")


async def test_the_tooled_run_replays_offline_to_the_same_answer(tmp_path):
    """What the tools returned is the same from run to run (FORM's own timings are left out), so a
    recorded run with its tools replays exactly."""
    _needs("form")
    corpus = write_corpus(tmp_path / "notes")
    tools = f"cas,corpus={corpus}"
    first = await solve(tmp_path / "a", "scripted:lab-dirac", problem=dirac_problem(), tools=tools, max_iterations=6)
    again = await solve(tmp_path / "b", f"replay:{tmp_path / 'a' / 'calls.jsonl'}", problem=dirac_problem(),
                        tools=tools, max_iterations=6)
    assert again.status == first.status == "complete" and again.answer_code == first.answer_code
    assert state_of(tmp_path / "b").sources == state_of(tmp_path / "a").sources
    import json
    recorded = json.loads((tmp_path / "a" / "run.json").read_text())["options"]["tools"]
    assert recorded["cas"] is True and recorded["corpus"] == str(corpus.resolve()) and recorded["literature"] is False


async def test_web_search_reaches_the_literature_roles_agents_only_when_asked(tmp_path):
    from physlab.lab.roles import surveyor
    from physlab.llm.scripted import final_answer
    from tests.lab.direct import make_ctx
    from tests.lab.mini import mini_problem

    seen: list[list[str]] = []

    def survey(messages, info):
        seen.append([t.kind for t in info.model_request_parameters.native_tools])
        return final_answer(info, {"background": "arithmetic"})

    for web in (True, False):
        (tmp_path / str(web)).mkdir()
        env = LabEnv(make_ctx(tmp_path / str(web), {"surveyor": survey}, mini_problem()))
        async with LabTools(ToolChoice(cas=False, web=web), env, tmp_path / "cache") as tools:
            env.toolbox = tools
            await surveyor.run(env)
            assert tools.capabilities("computer", env.model("surveyor")) == []      # not a literature role
    assert seen == [["web_search"], []]


async def test_a_corpus_folder_gone_since_the_run_began_is_a_notice_not_a_failure(tmp_path):
    gone = write_corpus(tmp_path / "notes")
    choice = ToolChoice(cas=False, corpus=str(gone))
    for f in gone.iterdir():
        f.unlink()
    gone.rmdir()
    async with LabTools(choice, _env(), tmp_path / "cache") as tools:
        assert tools.tools("surveyor") == []
        assert any("could not be indexed" in n and "notes" in n for n in tools.notices), tools.notices

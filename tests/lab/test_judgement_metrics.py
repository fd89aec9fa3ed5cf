"""The lab's judgement at work, counted as the seed counts it (issue 33; seed §5: 234 critiques,
15 % on established results, 60 % of those upheld, output tokens on review against work): a pure
function of the state and the output tokens by role, written into metrics.json by every lab run."""

from __future__ import annotations

import json

import pytest

from physlab.lab.judgement import judgement
from physlab.lab.state import transitions as T
from tests.lab.helpers import solve
from tests.lab.mini import mini_problem, register
from tests.lab.test_rulings_and_gates import established


def test_judgement_is_counted_from_the_state_as_the_seed_counts_it():
    s, rq, ev, wh, er = established()
    s, up = T.file_critique(s, target_type="ER", target=er, text="wrong factor")
    s = T.rule_on_critique(s, up, "uphold", "yes, a factor 2")
    s, ev2 = T.add_evidence(s, target=wh, role="computer", findings="value = 42 again")
    s, _ = T.record_review(s, wh, "VERIFIED")
    er2 = s.wh(wh).er
    s, dis = T.file_critique(s, target_type="ER", target=er2, text="sign")
    s = T.rule_on_critique(s, dis, "dismiss", "no")
    s, ne = T.file_critique(s, target_type="ER", target=er2, text="only one route")
    s = T.rule_on_critique(s, ne, "needs_evidence", "undecided", scope="a second route")
    for text in ("stale plan", "termination"):
        s, _ = T.file_critique(s, target_type="strategy", text=text)
    s, _ = T.file_critique(s, target_type="strategy", text="from the physicist", source="human")
    tokens = {"reviewer": 300, "critic": 100, "adjudicator": 100, "computer": 400, "researcher": 100,
              "orchestrator": 250, "formatter": 50}
    j = judgement(s, tokens)
    assert (j.critiques_raised, j.on_established, j.upheld, j.dismissed, j.needs_evidence) == (5, 3, 1, 1, 1)
    assert j.share_on_established == pytest.approx(3 / 5) and j.share_upheld == pytest.approx(1 / 3)
    assert j.from_physicist == 1
    assert (j.review_output_tokens, j.work_output_tokens, j.output_tokens) == (500, 500, 1300)
    assert j.review_output_share == pytest.approx(500 / 1300) and j.work_output_share == pytest.approx(500 / 1300)
    empty = judgement(T.begin_iteration(s.model_copy(update={"critiques": []})), {})
    assert empty.share_on_established is None and empty.share_upheld is None and empty.review_output_share is None


async def test_every_lab_run_writes_its_judgement_into_metrics_json(tmp_path):
    attempt = await solve(tmp_path / "r", register("lab-mini-judgement"), problem=mini_problem())
    metrics = json.loads((tmp_path / "r" / "metrics.json").read_text())
    j = metrics["details"]["judgement"]
    assert j == attempt.details["judgement"]
    assert j["output_tokens"] == sum(u.output_tokens for u in attempt.usage_by_role.values())
    assert {"critiques_raised", "share_on_established", "share_upheld", "needs_evidence",
            "review_output_share", "work_output_share"} <= set(j)

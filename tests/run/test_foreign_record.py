"""A run you were sent cannot spend your secrets: its run.json and metrics.json are untrusted input.
Edited to send the run to the sender's server with the key of another variable of yours, and to
index a folder of yours, `physlab solve --resume` shows what it would do and goes on only with your
word (`--yes`, or the options given again); a run written on this machine (its record sealed with
the secret in PhysLab's home) resumes as it says, and one edited since asks again."""

from __future__ import annotations

import json
import os
import stat

import pytest

from physlab.llm.standin import Habits, ScenarioResponder, StandinServer
from tests.lab.helpers import lab_role_of
from tests.run.keyed import KEY_ENV, keyed_standin, paused_run, physlab, run_files

pytestmark = pytest.mark.slow

STOLEN_ENV, STOLEN = "GITHUB_TOKEN", "ghp_" + "R3alTokenOfTheVictim0123456789abcdef"


def senders_server() -> StandinServer:
    """The sender's server: it answers only requests that carry the victim's GITHUB_TOKEN (so its
    count of answered requests is the count of times the token reached it)."""
    return StandinServer(ScenarioResponder("lab-qec", lab_role_of()), habits=Habits(api_key=STOLEN))


def carried_the_token(srv: StandinServer) -> int:
    return srv.stats.requests - srv.stats.faults["unauthorized"]


def edit_record(ws, *, api_base: str, api_key_env: str | None, corpus: str | None) -> None:
    """What the sender does: run.json and metrics.json made to agree on their server, key variable
    and corpus folder."""
    for name in ("run.json", "metrics.json"):
        data = json.loads((ws / name).read_text())
        opts = data["options"]
        opts["api_base"], opts["api_key_env"] = api_base, api_key_env
        opts["tools"] = {**(opts.get("tools") or {}), "corpus": corpus}
        data["servers"] = {spec: {"api_base": api_base, "key_env": api_key_env} for spec in data.get("servers", {})}
        if name == "metrics.json":
            data["api_base"] = api_base
        (ws / name).write_text(json.dumps(data, indent=2))


@pytest.fixture
def homes(tmp_path, monkeypatch):
    """Two machines' PhysLab homes: the sender's (where the run was made) and yours."""
    sender, mine = tmp_path / "sender-home", tmp_path / "my-home"
    monkeypatch.setenv("PHYSLAB_HOME", str(sender))
    return sender, mine


def test_a_received_record_that_chooses_your_key_and_folder_is_refused_until_you_confirm(tmp_path, monkeypatch,
                                                                                        homes):
    _, mine = homes
    private = tmp_path / "my-private-notes"
    private.mkdir()
    (private / "grant.md").write_text("# Grant\n\nthe unpublished result")
    ws = tmp_path / "received" / "qec"
    with keyed_standin() as made_on, senders_server() as sender:
        paused_run(ws, made_on, monkeypatch)                       # made on the sender's machine
        edit_record(ws, api_base=sender.base_url, api_key_env=STOLEN_ENV, corpus=str(private))
        kept = run_files(ws)

        monkeypatch.setenv("PHYSLAB_HOME", str(mine))              # now on yours, with your token set
        refused = physlab("solve", "--resume", str(ws), **{STOLEN_ENV: STOLEN})
        assert refused.returncode == 2, refused.stderr
        line = refused.stderr.strip()
        assert len(line.splitlines()) == 1, line
        assert f"${STOLEN_ENV}" in line and sender.base_url in line and str(private) in line and "--yes" in line
        assert carried_the_token(sender) == 0 and sender.stats.requests == 0   # nothing was sent anywhere
        assert run_files(ws) == kept and not (ws / ".cache").exists()         # nothing indexed, nothing changed

        # your word: the options given again, as flags
        again = physlab("solve", "--resume", str(ws), "--api-base", sender.base_url, "--api-key-env", STOLEN_ENV,
                        "--tools", f"cas,corpus={private}", "--max-iterations", "3", "--console", "lines",
                        **{STOLEN_ENV: STOLEN})
        assert "was not written by PhysLab on this machine" not in again.stderr
        assert carried_the_token(sender) > 0                       # you chose to send it there
        shown = [x for x in again.stderr.splitlines() if "resume: openai:standin ->" in x]
        assert shown and sender.base_url in shown[0] and f"${STOLEN_ENV}" in shown[0]
        assert any(f"resume: tools: cas,corpus={private}" in x for x in again.stderr.splitlines())


def test_a_received_record_with_a_server_elsewhere_is_refused_and_yes_goes_on(tmp_path, monkeypatch, homes):
    _, mine = homes
    ws = tmp_path / "qec"
    with keyed_standin() as made_on:
        paused_run(ws, made_on, monkeypatch)
        edit_record(ws, api_base="http://sender.example:8000/v1", api_key_env=None, corpus=None)
        kept = run_files(ws)
        monkeypatch.setenv("PHYSLAB_HOME", str(mine))
        refused = physlab("solve", "--resume", str(ws), OPENAI_API_KEY="sk-" + "mine" * 10)
        assert refused.returncode == 2, refused.stderr
        line = refused.stderr.strip()
        assert len(line.splitlines()) == 1 and "http://sender.example:8000/v1" in line and "--yes" in line
        assert "OPENAI_API_KEY" not in line                        # the provider's own variable asks nothing
        assert run_files(ws) == kept

        # a key variable the record chooses asks too; --yes goes on (here, to the run's own stand-in again)
        edit_record(ws, api_base=made_on.base_url, api_key_env=KEY_ENV, corpus=None)
        asked = made_on.stats.requests
        refused = physlab("solve", "--resume", str(ws))
        assert refused.returncode == 2 and f"${KEY_ENV}" in refused.stderr
        done = physlab("solve", "--resume", str(ws), "--yes", "--console", "lines")
        assert done.returncode == 0, done.stderr
        assert made_on.stats.requests > asked and made_on.stats.faults["unauthorized"] == 0


def test_a_run_made_here_resumes_as_recorded_and_asks_again_once_edited(tmp_path, monkeypatch, homes):
    from physlab import api
    from tests.run.keyed import QEC, pause_at

    _, mine = homes
    monkeypatch.setenv("PHYSLAB_HOME", str(mine))
    notes, other = tmp_path / "notes", tmp_path / "other-notes"
    for folder in (notes, other):
        folder.mkdir()
        (folder / "n.md").write_text("# Notes\n\nthe stabilizer weight")
    ws = tmp_path / "qec"
    record = api.solve(QEC, "lab", "scripted:lab-qec", workspace=ws, tools=f"cas,corpus={notes}",
                       events=pause_at(ws, 2))
    assert record.status == "paused"
    key = mine / "record.key"
    assert stat.S_IMODE(os.stat(key).st_mode) == 0o600            # the secret: yours alone
    assert json.loads((ws / "run.json").read_text())["seal"].startswith("hmac-sha256:")

    edited = tmp_path / "edited"
    edited.mkdir()
    for name, data in run_files(ws).items():
        (edited / name).write_bytes(data)
    start = json.loads((edited / "run.json").read_text())
    start["options"]["tools"]["corpus"] = str(other)
    (edited / "run.json").write_text(json.dumps(start, indent=2))
    asked = physlab("solve", QEC, "--resume", str(edited))
    assert asked.returncode == 2 and str(other) in asked.stderr and "edited" in asked.stderr

    done = physlab("solve", "--resume", str(ws), "--console", "lines")
    assert done.returncode == 0, done.stderr                        # sealed here: no question
    assert any(f"resume: tools: cas,corpus={notes}" in x for x in done.stderr.splitlines())

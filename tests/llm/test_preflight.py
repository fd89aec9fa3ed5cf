"""`physlab models check MODEL` before a five-hour run: in a handful of tiny requests through the
runs' own model seam, one line per finding, and a non-zero exit when a lab run would fail. Each
test is the stand-in playing a real server's habit (vLLM without a tool parser, a small context
window, a proxy's 401, no usage in the replies, a model that ignores tools)."""

from __future__ import annotations

import json
import re
import socket

import pytest

from physlab.cli import main
from physlab.llm.standin import EchoResponder, Habits, ModelResponder, StandinServer

STATUS = re.compile(r"^(ok|warn|FAIL|skip) +([a-z ]+): (.*)$")


@pytest.fixture(autouse=True)
def _no_ambient_key(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("PHYSLAB_MODELS_CONFIG", raising=False)


def check(capsys, *args: str) -> tuple[int, dict[str, tuple[str, str]], str]:
    """Run `physlab models check ARGS`: the exit code, each finding as label -> (status, text), stdout."""
    with pytest.raises(SystemExit) as exc:
        main(["models", "check", *args])
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err
    findings = {}
    for line in out.splitlines():
        if m := STATUS.match(line):
            assert m.group(2) not in findings, f"two lines for {m.group(2)}"
            findings[m.group(2)] = (m.group(1), m.group(3))
    return exc.value.code, findings, out + err


def test_a_server_that_does_everything_a_lab_needs_passes_every_check(capsys):
    habits = Habits(prefix_cache=True, context_window=131_072)  # vLLM's: the window, no cap of its own
    with StandinServer(ModelResponder(), habits=habits) as srv:
        url = srv.base_url
        code, f, out = check(capsys, "openai:gpt-4o", "--api-base", url)
    assert code == 0, out
    assert f["reachable"][0] == "ok" and url in f["reachable"][1]
    for label in ("tool calling", "native output", "prompted output", "streaming", "usage", "cached tokens"):
        assert f[label][0] == "ok", (label, f[label])
    assert f["output mode"] == ("ok", f["output mode"][1]) and "--output-mode tool" in f["output mode"][1]
    status, text = f["context window"]
    assert status == "ok" and "131,072" in text and "discovered" in text
    assert f["output cap"] == ("ok", "none of its own: a reply may use what the window leaves")
    # what PhysLab will charge: genai-prices' price for gpt-4o, and a lab run at that price
    assert f["price"] == ("ok", "$2.50 in / $10.00 out per million tokens (genai-prices)")
    estimate = f["estimate"][1]
    assert "600K tokens" in estimate and "28 calls" in estimate and "seed 000" in estimate and "$" in estimate
    # a handful of tiny requests
    assert srv.stats.requests <= 24 and srv.stats.total_tokens < 20_000


def test_an_openai_style_cap_is_discovered_and_an_unsaid_window_is_a_warning(capsys):
    with StandinServer(ModelResponder(), habits=Habits(max_output_tokens=16_384)) as srv:
        code, f, out = check(capsys, "openai:gpt-4o", "--api-base", srv.base_url)
    assert code == 0, out
    assert f["output cap"] == ("ok", "16,384 tokens (discovered)")
    status, text = f["context window"]
    assert status == "warn" and "not said by the server" in text and "context_window" in text


def test_vllm_without_a_tool_parser_names_the_flag_and_the_output_mode_that_works(capsys):
    with StandinServer(ModelResponder(), habits=Habits(refuse_tools=True)) as srv:
        code, f, out = check(capsys, "openai:qwen3-32b", "--api-base", srv.base_url)
    assert code == 0, out  # a lab run can go, in another output mode
    status, text = f["tool calling"]
    assert status == "warn" and "refused" in text
    assert "--enable-auto-tool-choice --tool-call-parser" in text and "--reasoning-parser" in text
    assert f["native output"][0] == "ok" and f["prompted output"][0] == "ok"
    assert "--output-mode native" in f["output mode"][1]
    assert f["price"][0] == "warn" and "unpriced" in f["price"][1]


def test_a_context_window_too_small_for_the_labs_prompts_fails(capsys):
    with StandinServer(ModelResponder(), habits=Habits(context_window=2048)) as srv:
        code, f, out = check(capsys, "openai:tiny", "--api-base", srv.base_url,
                             "--problem", "examples/quantum_error_correction_main")
    assert code == 1, out
    status, text = f["context window"]
    assert status == "FAIL" and "2,048" in text and "lab" in text
    assert f["lab prompts"][0] == "ok" and "quantum_error_correction_main" in f["lab prompts"][1]


def test_a_window_the_registry_tells_is_used_when_the_server_says_nothing(capsys, tmp_path):
    reg = tmp_path / "models.yaml"
    reg.write_text('models:\n  "openai:local":\n    context_window: 1500\n    truncation_max_output_tokens: 512\n')
    with StandinServer(ModelResponder()) as srv:
        code, f, out = check(capsys, "openai:local", "--api-base", srv.base_url, "--models-config", str(reg))
    assert code == 1, out
    status, text = f["context window"]
    assert status == "FAIL" and "1,500" in text and "registry" in text
    assert "512" in f["output cap"][1] and "registry" in f["output cap"][1]


def test_a_proxy_that_wants_a_key_fails_at_the_first_line_and_passes_with_the_key(capsys, monkeypatch):
    with StandinServer(ModelResponder(), habits=Habits(api_key="sk-proxy")) as srv:
        code, f, out = check(capsys, "openai:gpt-4o", "--api-base", srv.base_url)
        assert code == 1, out
        status, text = f["reachable"]
        assert status == "FAIL" and "credentials" in text and "--api-key-env" in text
        assert all(status == "skip" for label, (status, _) in f.items() if label not in ("reachable", "price",
                                                                                          "lab prompts", "estimate"))
        assert srv.stats.faults["unauthorized"] == 1  # nothing else was sent
        monkeypatch.setenv("PROXY_KEY", "sk-proxy")
        code, f, out = check(capsys, "openai:gpt-4o", "--api-base", srv.base_url, "--api-key-env", "PROXY_KEY")
    assert code == 0, out
    assert f["reachable"][0] == "ok"


def test_a_server_that_reports_no_usage_is_a_warning_that_budgets_cannot_hold(capsys):
    with StandinServer(ModelResponder(), habits=Habits(report_usage=False)) as srv:
        code, f, out = check(capsys, "openai:gpt-4o", "--api-base", srv.base_url)
    assert code == 0, out
    status, text = f["usage"]
    assert status == "warn" and "no usage" in text and "--max-tokens" in text and "--max-cost" in text
    assert f["cached tokens"][0] == "warn"


def test_a_proxy_that_states_its_costs_is_what_physlab_charges(capsys):
    with StandinServer(ModelResponder(), habits=Habits(usd_per_mtok=(1.0, 4.0))) as srv:  # LiteLLM's cost header
        code, f, out = check(capsys, "openai:qwen3-32b", "--api-base", srv.base_url)
    assert code == 0, out
    status, text = f["price"]
    assert status == "ok" and "states each reply's cost" in text and "x-litellm-response-cost" in text
    cost = float(re.search(r"about \$([\d.]+) \(", f["estimate"][1]).group(1))
    assert 0.6 <= cost <= 2.4  # 600K tokens at what the proxy charged per token (between $1 and $4 per million)


def test_a_model_that_ignores_tools_and_schemas_has_no_usable_output_mode(capsys):
    with StandinServer(EchoResponder()) as srv:  # answers every request with text
        code, f, out = check(capsys, "openai:chatty", "--api-base", srv.base_url)
    assert code == 1, out
    assert f["reachable"][0] == "ok"
    assert [f[k][0] for k in ("tool calling", "native output", "prompted output")] == ["FAIL"] * 3
    assert f["output mode"][0] == "FAIL" and "no output mode" in f["output mode"][1]


def test_a_server_nobody_listens_at_is_unreachable(capsys):
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()  # nothing listens there now
    code, f, out = check(capsys, "openai:gpt-4o", "--api-base", f"http://127.0.0.1:{port}/v1")
    assert code == 1, out
    assert f["reachable"][0] == "FAIL" and "could not be reached" in f["reachable"][1]


def test_json_gives_every_finding_and_the_output_mode(capsys):
    with StandinServer(ModelResponder(), habits=Habits(refuse_tools=True, context_window=65_536)) as srv, \
            pytest.raises(SystemExit) as exc:
        main(["models", "check", "openai:gpt-4o", "--api-base", srv.base_url, "--json"])
    data = json.loads(capsys.readouterr().out)
    assert exc.value.code == 0 and data["ok"] is True
    assert data["output_mode"] == "native" and data["context_window"] == 65_536
    assert data["price"]["input_usd_per_mtok"] == 2.5 and data["price"]["source"] == "genai-prices"
    assert {x["check"] for x in data["findings"]} >= {"reachable", "tool calling", "native output",
                                                     "prompted output", "context window", "estimate"}
    assert data["estimate"]["tokens"] == 600_000 and data["estimate"]["cost_usd"] > 0


def test_bad_input_is_one_line_and_exit_2(capsys, tmp_path):
    for args, needle in ((["openai-gpt-4o"], "provider:model"),
                         (["openai:gpt-4o", "--api-base", "localhost:8000"], "--api-base"),
                         (["openai:gpt-4o", "--api-base", "http://127.0.0.1:9/v1", "--api-key-env", "NO_SUCH_VAR_X"],
                          "NO_SUCH_VAR_X"),
                         (["openai:gpt-4o", "--problem", str(tmp_path / "missing.yaml")], "missing.yaml")):
        with pytest.raises(SystemExit) as exc:
            main(["models", "check", *args])
        err = capsys.readouterr().err.strip()
        assert exc.value.code == 2 and err.startswith("error: ") and needle in err and "\n" not in err, (args, err)


def test_physlab_models_still_lists_the_strategies_and_scripted_models(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["models"])
    out = capsys.readouterr().out
    assert exc.value.code == 0
    assert out.startswith("strategies: lab, ") and "scripted models (--model scripted:NAME):" in out

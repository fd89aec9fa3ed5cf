"""Computer algebra in the sandbox: FORM, Cadabra2, Maxima and the Wolfram Language each run a real
computation under both backends, and the number is checked; the API the lab uses
(``physlab.tools.cas``) and ``physlab sandbox run FILE`` pick the system and record it."""

from __future__ import annotations

import json
import math
import re
import subprocess
import sys
from fractions import Fraction

import pytest

from physlab.errors import UserError
from physlab.sandbox import SandboxLimits
from physlab.tools import cas

LIMITS = SandboxLimits(timeout_s=120)  # Mathics3 alone takes seconds to start on a busy machine


def needs(language: str):
    """Skip, with the system's own one-line reason, where it is not installed here."""
    st = cas.system_status(language)
    return pytest.mark.skipif(not st.available, reason=st.reason)


@pytest.fixture(params=["bwrap", "rlimit"])
def box(request):
    return request.getfixturevalue("sb" if request.param == "bwrap" else "rl")


def one_line(text: str) -> str:
    return re.sub(r"\s+", "", text)


# ---------------------------------------------------------------- a real computation in each system
DIRAC = """\
* Tr(g^mu g^nu g^rho g^sigma), and the same trace contracted: g^mu..g_mu..
Indices mu, nu, rho, sigma;
Local T = g_(1, mu, nu, rho, sigma);
Local N = g_(1, mu, nu, mu, nu);
Trace4, 1;
Print;
.end
"""


@needs("form")
def test_form_takes_the_dirac_trace_of_four_gamma_matrices(box):
    res = cas.execute_sync(DIRAC, "form", box, LIMITS)
    assert res.exit_code == 0, res.stdout + res.stderr
    assert res.language == "form" and res.backend == box.backend
    flat = one_line(res.stdout)
    trace = re.search(r"T=(.*?);", flat).group(1)
    terms = set(re.findall(r"[+-]?[^+-]+", trace))
    # 4 (g^{mu nu} g^{rho sigma} - g^{mu rho} g^{nu sigma} + g^{mu sigma} g^{nu rho})
    assert {t.lstrip("+") for t in terms} == {"4*d_(mu,nu)*d_(rho,sigma)", "-4*d_(mu,rho)*d_(nu,sigma)",
                                              "4*d_(mu,sigma)*d_(nu,rho)"}, res.stdout
    assert re.search(r"N=(.*?);", flat).group(1) == "-32"  # 4 (4 - 16 + 4)


@needs("form")
def test_form_fits_a_small_memory_limit(sb):
    """FORM's own 64-bit defaults reserve over 2 GB of buffers: a run sizes them to its limit."""
    res = cas.execute_sync(DIRAC, "form", sb, SandboxLimits(timeout_s=60, memory_mb=256))
    assert res.exit_code == 0, res.stdout + res.stderr
    assert "N=-32;" in one_line(res.stdout)


RIEMANN = """\
{a,b,c,d,e,f}::Indices(vector).
R_{a b c d}::RiemannTensor.
bianchi:= R_{a b c d} + R_{a c d b} + R_{a d b c}.
young_project_tensor(bianchi, modulo_monoterm=True)
canonicalise(bianchi)
print(bianchi)
pair:= R_{a b c d} - R_{c d a b}.
canonicalise(pair)
print(pair)
sum:= R_{a b c d} + R_{c d a b}.
canonicalise(sum)
print(sum)
"""


@needs("cadabra2")
def test_cadabra2_knows_the_symmetries_of_the_riemann_tensor(box):
    res = cas.execute_sync(RIEMANN, "cadabra2", box, LIMITS)
    assert res.exit_code == 0, res.stdout + res.stderr
    assert res.language == "cadabra2"
    bianchi, pair, total = res.stdout.strip().splitlines()
    assert bianchi.strip() == "0"  # the first Bianchi identity
    assert pair.strip() == "0"  # pair symmetry
    assert one_line(total) == "2R_{abcd}"  # and not everything is zero


SCHWARZSCHILD = r"""
{t,r,\theta,\phi}::Coordinate.
{\mu,\nu,\rho,\sigma,\lambda,\kappa}::Indices(values={t,r,\theta,\phi}, position=fixed).
\partial{#}::PartialDerivative.
g_{\mu\nu}::Metric.
g^{\mu\nu}::InverseMetric.
ss:= { g_{t t} = -(1-2 M/r), g_{r r} = 1/(1-2 M/r), g_{\theta\theta} = r**2, g_{\phi\phi} = r**2 \sin(\theta)**2 }.
complete(ss, $g^{\mu\nu}$)
ch:= \Gamma^{\mu}_{\nu\rho} = 1/2 g^{\mu\sigma} ( \partial_{\rho}{g_{\nu\sigma}} + \partial_{\nu}{g_{\rho\sigma}} - \partial_{\sigma}{g_{\nu\rho}} ).
evaluate(ch, ss, rhsonly=True)
rm:= R^{\rho}_{\sigma\mu\nu} = \partial_{\mu}{\Gamma^{\rho}_{\nu\sigma}} - \partial_{\nu}{\Gamma^{\rho}_{\mu\sigma}} + \Gamma^{\rho}_{\mu\lambda} \Gamma^{\lambda}_{\nu\sigma} - \Gamma^{\rho}_{\nu\lambda} \Gamma^{\lambda}_{\mu\sigma}.
substitute(rm, ch)
evaluate(rm, ss, rhsonly=True)
rc:= R_{\sigma\nu} = R^{\rho}_{\sigma\rho\nu}.
substitute(rc, rm)
evaluate(rc, ss, rhsonly=True)
print(rc)
tt:= R^{t}_{r t r}.
substitute(tt, rm)
evaluate(tt, ss, rhsonly=True)
print(tt)
"""


@pytest.mark.slow
@needs("cadabra2")
def test_cadabra2_finds_the_schwarzschild_metric_ricci_flat_but_not_flat(sb):
    res = cas.execute_sync(SCHWARZSCHILD, "cadabra2", sb, LIMITS)
    assert res.exit_code == 0, res.stdout + res.stderr
    ricci, riemann = res.stdout.strip().splitlines()
    assert ricci.replace(" ", "").endswith("=0"), ricci
    assert riemann.strip() not in ("0", ""), riemann  # curved: R^t_{rtr} = 2M/(r^2 (r - 2M)) != 0
    assert "M" in riemann


GAUSS = """\
integrate(exp(-x^2), x, minf, inf);
integrate(x^4*exp(-x^2), x, minf, inf);
float(%);
"""


@needs("maxima")
def test_maxima_does_a_gaussian_integral(box):
    res = cas.execute_sync(GAUSS, "maxima", box, LIMITS)
    assert res.exit_code == 0, res.stdout + res.stderr
    assert res.language == "maxima"
    lines = [ln.strip() for ln in res.stdout.splitlines()]
    assert "sqrt(%pi)" in lines
    assert "3*sqrt(%pi)/4" in lines or "(3*sqrt(%pi))/4" in lines, res.stdout
    value = float(lines[-1])
    assert math.isclose(value, 3 * math.sqrt(math.pi) / 4, rel_tol=1e-12)


SERIES = """\
Series[Cos[x], {x, 0, 6}]
s = Normal[Series[Exp[x], {x, 0, 10}]];
N[s /. x -> 1, 20]
"""


@needs("wolfram")
def test_the_wolfram_language_expands_a_series(box):
    res = cas.execute_sync(SERIES, "wolfram", box, LIMITS)
    assert res.exit_code == 0, res.stdout + res.stderr
    assert res.language == "wolfram"
    assert res.notice and ("Mathics3" in res.notice or "Wolfram Engine" in res.notice)
    cos, value = [ln for ln in res.stdout.splitlines() if ln.strip()]
    assert one_line(cos) == "SeriesData[x,0,{1,0,-1/2,0,1/24,0,-1/720},0,7,1]", cos
    exact = sum(Fraction(1, math.factorial(k)) for k in range(11))
    assert math.isclose(float(value.split("`")[0]), float(exact), rel_tol=1e-15), value
    assert not math.isclose(float(value.split("`")[0]), math.e, rel_tol=1e-9)  # the truncated series


# ---------------------------------------------------------------- the examples the lab's prompts will show
@pytest.mark.parametrize("language", sorted(cas.SYSTEMS))
def test_each_systems_example_runs_and_prints_what_it_says(sb, language):
    system = cas.SYSTEMS[language]
    st = cas.system_status(language)
    if not st.available:
        pytest.skip(st.reason)
    res = cas.execute_sync(system.example.code, language, sb, LIMITS)
    assert res.exit_code == 0, res.stdout + res.stderr
    for expected in system.example.prints:
        assert one_line(expected) in one_line(res.stdout), (expected, res.stdout)


def test_every_system_is_described_for_the_prompts():
    assert set(cas.SYSTEMS) == {"form", "cadabra2", "maxima", "wolfram"}
    for system in cas.SYSTEMS.values():
        assert system.good_for and system.example.code and system.example.prints and system.extensions


# ---------------------------------------------------------------- errors are the system's, in its own words
@needs("form")
def test_a_form_syntax_error_fails_the_run(sb):
    res = cas.execute_sync("Symbols x;\nLocal F = (x + y)^2;\nPrint;\n.end\n", "form", sb, LIMITS)
    assert res.exit_code not in (0, None)
    assert "main.frm" in res.stdout + res.stderr


@needs("maxima")
def test_a_maxima_error_fails_the_run_and_stops_it(sb):
    res = cas.execute_sync("x: 1/0;\nprint(\"after\")$\n", "maxima", sb, LIMITS)
    assert res.exit_code == 1
    assert "0 to a negative exponent" in res.stdout + res.stderr
    assert "after" not in res.stdout.replace('print("after")', "")


@needs("maxima")
def test_a_maxima_question_is_an_error_not_a_hang(sb):
    res = cas.execute_sync("integrate(x^n, x);\n", "maxima", sb, SandboxLimits(timeout_s=60))
    assert not res.timed_out and res.exit_code == 1, res
    out = res.stdout + res.stderr
    assert "Is n equal to -1?" in out and "assume(" in out  # what it asked, and what to do about it
    assert out.count("Is n equal to -1?") == 1 and len(out) < 2000  # asked once, not until the stack overflows
    fixed = cas.execute_sync("assume(n > 0)$\nintegrate(x^n, x);\n", "maxima", sb, SandboxLimits(timeout_s=60))
    assert fixed.exit_code == 0 and "x^(n+1)/(n+1)" in fixed.stdout, fixed.stdout


@needs("cadabra2")
def test_a_cadabra2_exception_shows_the_cdb_file(sb):
    res = cas.execute_sync("x = 1\ny = x / 0\n", "cadabra2", sb, LIMITS)
    assert res.exit_code == 1
    assert "ZeroDivisionError" in res.stderr and "main.cdb" in res.stderr
    assert "cadabra2_defaults" not in res.stderr and "physlab" not in res.stderr, res.stderr


@needs("wolfram")
def test_wolfram_messages_and_prints_appear_in_order_and_a_syntax_error_fails(sb):
    res = cas.execute_sync('Print["first"];\n1/0\nx = 2;\nx^10\n', "wolfram", sb, LIMITS)
    assert res.exit_code == 0, res.stdout + res.stderr
    lines = [ln for ln in res.stdout.splitlines() if ln.strip()]
    assert lines[0] == "first" and "Power::infy" in lines[1] and lines[-1] == "1024", lines
    bad = cas.execute_sync("f[x_ := x\n", "wolfram", sb, LIMITS)
    assert bad.exit_code == 1 and "Syntax" in bad.stdout + bad.stderr


# ---------------------------------------------------------------- what is installed, and what is not
def test_available_systems_names_every_system_and_why_one_is_missing():
    statuses = {s.language: s for s in cas.available_systems()}
    assert set(statuses) == set(cas.SYSTEMS)
    for st in statuses.values():
        if st.available:
            assert st.interpreter and not st.reason
        else:
            assert st.reason and "\n" not in st.reason


def test_a_missing_system_is_one_line_that_says_how_to_install_it(monkeypatch, sb):
    monkeypatch.setattr(cas.detect, "RUN_PATH", "/nonexistent")
    cas.detect.refresh()
    try:
        st = cas.system_status("form")
        assert not st.available and "form" in st.reason and "bootstrap.sh --with-cas" in st.reason
        with pytest.raises(cas.SystemUnavailable) as err:
            cas.execute_sync("Print;\n.end\n", "form", sb)
        assert isinstance(err.value, UserError) and "\n" not in str(err.value)
    finally:
        monkeypatch.undo()
        cas.detect.refresh()


def test_wolfram_falls_back_to_mathics3_and_says_so(monkeypatch):
    monkeypatch.setattr(cas.detect, "RUN_PATH", "/nonexistent")  # no wolframscript, no WolframKernel
    cas.detect.refresh()
    try:
        st = cas.system_status("wolfram")
        if st.available:
            assert st.interpreter.startswith("Mathics3") and "Mathics3" in st.notice
            assert "Wolfram Engine" in st.notice  # ... and that no Wolfram Engine was found
        else:
            assert "Mathics3" in st.reason and "Wolfram Engine" in st.reason
    finally:
        monkeypatch.undo()
        cas.detect.refresh()


def test_the_prompt_text_shows_each_installed_systems_example_and_names_the_missing_ones(monkeypatch):
    statuses = cas.available_systems()
    text = cas.describe(statuses)
    for st in statuses:
        if st.available:
            assert cas.SYSTEMS[st.language].example.code.strip() in text and st.interpreter in text
        else:
            assert st.reason in text
    monkeypatch.setattr(cas.detect, "RUN_PATH", "/nonexistent")
    cas.detect.refresh()
    try:
        text = cas.describe()
        assert "Not available on this machine" in text and "FORM: no `form`" in text
        assert "Local T = g_(1, p, q);" not in text  # no example of a system the lab cannot use
    finally:
        monkeypatch.undo()
        cas.detect.refresh()


def test_an_unknown_language_is_a_user_error(sb):
    with pytest.raises(UserError, match="expected one of"):
        cas.execute_sync("1+1", "mathematica", sb)


@pytest.mark.parametrize("name, language", [("a.frm", "form"), ("b.cdb", "cadabra2"), ("c.mac", "maxima"),
                                            ("d.wl", "wolfram"), ("e.m", "wolfram"), ("f.py", "python"),
                                            ("g.txt", "python"), ("H.FRM", "form")])
def test_the_language_follows_the_extension(name, language):
    assert cas.language_for_path(name) == language


def test_python_through_the_same_door_is_recorded_as_python(sb):
    res = cas.execute_sync("print(6 * 7)", "python", sb)
    assert res.stdout == "42\n" and res.language == "python" and res.notice == ""


# ---------------------------------------------------------------- physlab sandbox run FILE
def physlab(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", "from physlab.cli import main; main()", *args],
                          capture_output=True, text=True, timeout=300)


@needs("form")
def test_cli_picks_form_from_the_extension_and_adds_the_language_to_the_json(tmp_path):
    script = tmp_path / "trace.frm"
    script.write_text(DIRAC)
    out = physlab("sandbox", "run", str(script), "--json")
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    assert {"exit_code", "stdout", "stderr", "timed_out", "duration_s", "truncated"} <= set(data)
    assert data["language"] == "form" and "N=-32;" in one_line(data["stdout"])


@needs("maxima")
def test_cli_lang_overrides_the_extension(tmp_path):
    script = tmp_path / "integral.txt"
    script.write_text(GAUSS)
    out = physlab("sandbox", "run", str(script), "--lang", "maxima")
    assert out.returncode == 0, out.stderr
    assert "sqrt(%pi)" in out.stdout


def test_cli_python_json_records_python(tmp_path):
    script = tmp_path / "s.py"
    script.write_text("print(1)\n")
    out = physlab("sandbox", "run", str(script), "--json")
    assert out.returncode == 0 and json.loads(out.stdout)["language"] == "python"


@pytest.mark.parametrize("args", [["{dir}/x.py", "--lang", "cobol"]])
def test_cli_bad_language_is_one_line_exit_2(tmp_path, args):
    (tmp_path / "x.py").write_text("print(1)\n")
    out = physlab("sandbox", "run", *[a.format(dir=tmp_path) for a in args])
    assert out.returncode == 2 and "Traceback" not in out.stderr
    assert len(out.stderr.strip().splitlines()) == 1 and "--lang" in out.stderr


def test_cli_missing_system_is_one_line_exit_2(tmp_path):
    script = tmp_path / "x.frm"
    script.write_text("Print;\n.end\n")
    env_code = ("import physlab.tools.cas.detect as d; d.RUN_PATH = '/nonexistent'; "
                "from physlab.cli import main; main()")
    out = subprocess.run([sys.executable, "-c", env_code, "sandbox", "run", str(script)],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 2 and "Traceback" not in out.stderr, out.stderr
    assert len(out.stderr.strip().splitlines()) == 1 and "FORM" in out.stderr

"""Fixtures for the literature tools: the arXiv/INSPIRE stand-in on 127.0.0.1, and a guard that fails
any test in which a tool tried to reach an address that is not loopback."""

from __future__ import annotations

import ipaddress
import socket

import pytest

from physlab.tools.literature.standin import LiteratureStandin, StandinPaper, eprint_tar, minimal_pdf


class NetworkGuard:
    """Refuses (and records) every connection or name lookup that is not loopback."""

    def __init__(self) -> None:
        self.attempts: list[str] = []

    @staticmethod
    def _loopback(host: object) -> bool:
        if host in (None, "localhost", b"localhost"):
            return True
        try:
            return ipaddress.ip_address(host.decode() if isinstance(host, bytes) else str(host)).is_loopback
        except ValueError:
            return False

    def install(self, monkeypatch: pytest.MonkeyPatch) -> None:
        real_connect, real_connect_ex = socket.socket.connect, socket.socket.connect_ex
        real_getaddrinfo = socket.getaddrinfo
        guard = self

        def check(sock: socket.socket, address: object) -> None:
            if sock.family in (socket.AF_INET, socket.AF_INET6) and not guard._loopback(address[0]):  # type: ignore[index]
                guard.attempts.append(f"connect {address}")
                raise ConnectionRefusedError(111, f"test network guard: {address} is not loopback")

        def connect(sock, address):
            check(sock, address)
            return real_connect(sock, address)

        def connect_ex(sock, address):
            check(sock, address)
            return real_connect_ex(sock, address)

        def getaddrinfo(host, *args, **kwargs):
            if not guard._loopback(host):
                guard.attempts.append(f"resolve {host.decode() if isinstance(host, bytes) else host}")
                raise socket.gaierror(socket.EAI_NONAME, f"test network guard: {host} is not loopback")
            return real_getaddrinfo(host, *args, **kwargs)

        monkeypatch.setattr(socket.socket, "connect", connect)
        monkeypatch.setattr(socket.socket, "connect_ex", connect_ex)
        monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)


@pytest.fixture(autouse=True)
def network_guard(monkeypatch):
    """Every test here: no tool reaches a non-loopback address (and the test fails if one tried)."""
    guard = NetworkGuard()
    guard.install(monkeypatch)
    yield guard
    assert not guard.attempts, f"a literature tool tried to reach the network: {guard.attempts}"


TORIC_TEX = r"""\documentclass{article}
\usepackage{amsmath}
\title{Fault-tolerant quantum computation by anyons}
\begin{document}
\maketitle
\begin{abstract}
A two-dimensional lattice of spins with local stabilizer checks stores qubits topologically.
\end{abstract}
\section{Introduction}
Quantum memories must be protected from local noise. % a comment the reader never sees: SECRET-COMMENT
\input{sections/stabilizers}
\section{Anyons}
Violated checks are quasiparticles; moving an $e$ particle around an $m$ particle gives the phase $e^{i\pi} = -1$.
\begin{figure}\caption{FIGURE-CAPTION-DROPPED}\end{figure}
\bibliography{refs}
\end{document}
"""
STABILIZERS_TEX = r"""\section{The toric code}
On an $L \times L$ torus the code has $k=2$ logical qubits and distance $d=L$. The stabilizers are
\begin{equation}
A_v = \prod_{j \in \mathrm{star}(v)} \sigma^x_j, \qquad B_p = \prod_{j \in \partial p} \sigma^z_j .
\end{equation}
"""


def papers() -> list[StandinPaper]:
    """Papers written here in the shape the services serve them: a LaTeX e-print (with an \\input
    file), a PDF-only submission, and records INSPIRE links by citation."""
    return [
        StandinPaper("quant-ph/9707021", "Fault-tolerant quantum computation by anyons", ["A. Yu. Kitaev"],
                     "A two-dimensional quantum system with anyonic excitations can be considered as a "
                     "quantum computer; the toric code stores qubits in topological degrees of freedom.",
                     "1997-07-09", recid=448893, doi="10.1016/S0003-4916(02)00018-0",
                     eprint=eprint_tar({"toric.tex": TORIC_TEX, "sections/stabilizers.tex": STABILIZERS_TEX}),
                     primary_category="quant-ph"),
        StandinPaper("hep-th/9711200", "The Large N limit of superconformal field theories and supergravity",
                     ["Juan Martin Maldacena"],
                     "We show that the large N limit of certain conformal field theories includes a sector "
                     "describing supergravity on anti-de Sitter space.", "1997-11-27", recid=451647,
                     doi="10.1023/A:1026654312961", references=[448893],
                     pdf=minimal_pdf([["The Large N limit of superconformal field theories and supergravity",
                                       "Juan Maldacena"],
                                      ["The near-horizon geometry of N D3-branes is AdS5 x S5.",
                                       "The 't Hooft coupling is lambda = g_YM^2 N."]], title="The Large N limit")),
        StandinPaper("1802.00001", "Holographic codes and the surface code", ["Ada Lovelace", "Emmy Noether",
                     "Paul Dirac", "Lise Meitner", "Enrico Fermi", "Chien-Shiung Wu", "Satyendra Bose"],
                     "We relate the anti-de Sitter holographic dictionary to the toric code threshold.",
                     "2018-02-01", recid=1650000, references=[451647, 448893],
                     eprint=eprint_tar({"main.tex": "\\documentclass{article}\\begin{document}"
                                                    "Holography meets the toric code.\\end{document}"})),
    ]


@pytest.fixture
def standin():
    with LiteratureStandin(papers()) as srv:
        yield srv

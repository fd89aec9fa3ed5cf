"""Exact post-selected logical fidelity of the [[4,2,2]] |00>_AB preparation circuit.

Self-contained (numpy + sympy only): this is the script the scripted Computer submits to the
sandbox in the `lab-qec` demo. Pauli errors are tracked in the symplectic (x|z) representation;
CNOTs are Clifford, so an error injected after gate g is pushed through the later gates and the
final error is the XOR of the pushed single-gate errors. All 16^5 configurations are enumerated
at once with numpy broadcasting, classified, and the fidelity assembled exactly as a rational
function of p (sympy). A second, independent route (dense state-vector simulation of a sample of
configurations) cross-checks the classification.
"""
import itertools
import json

import numpy as np
import sympy as sp

NQ = 5                                   # data qubits 0..3, ancilla 4
GATES = [(1, 2), (1, 0), (2, 3), (3, 4), (0, 4)]   # time order (right-to-left in the product)


def cnot_sym(vec, c, t):
    """Conjugate the Pauli (x,z bit vector, x in bits 0..4, z in bits 5..9) by CNOT_ct."""
    x = [(vec >> q) & 1 for q in range(NQ)]
    z = [(vec >> (NQ + q)) & 1 for q in range(NQ)]
    x[t] ^= x[c]
    z[c] ^= z[t]
    return sum(b << q for q, b in enumerate(x)) | sum(b << (NQ + q) for q, b in enumerate(z))


def pauli_on(c, t, a, b):
    """Two-qubit Pauli a⊗b on qubits (c, t); a,b in 0..3 = I,X,Y,Z."""
    v = 0
    for q, s in ((c, a), (t, b)):
        if s in (1, 2):
            v |= 1 << q
        if s in (2, 3):
            v |= 1 << (NQ + q)
    return v


def propagated(g):
    """The 16 two-qubit Paulis after gate g pushed to the end of the circuit (index 0 = identity)."""
    out = []
    c, t = GATES[g]
    for a, b in itertools.product(range(4), range(4)):
        v = pauli_on(c, t, a, b)
        for c2, t2 in GATES[g + 1:]:
            v = cnot_sym(v, c2, t2)
        out.append(v)
    return np.array(out, dtype=np.int64)


def symp(vec, px, pz):
    """Symplectic product of error vectors with the Pauli (px, pz) given as bit masks."""
    x = vec & 0x1F
    z = (vec >> NQ) & 0x1F
    w = (x & pz) ^ (z & px)
    return np.array([bin(int(v)).count("1") & 1 for v in range(32)], dtype=np.int8)[w]


def mask(s):
    return sum(1 << q for q, ch in enumerate(s) if ch != "I")


# Stabilizers and checks (qubits 0..4, ancilla last).
XXXX = (mask("XXXXI"), 0)
ZZZZ = (0, mask("ZZZZI"))
Z_ANC = (0, mask("IIIIZ"))
Z_A = (0, mask("ZZIII"))
Z_B = (0, mask("ZIZII"))

tables = [propagated(g) for g in range(len(GATES))]
final = np.zeros(1, dtype=np.int64)
weight = np.zeros(1, dtype=np.int64)        # number of faulty gates in the configuration
for tab in tables:
    final = (final[:, None] ^ tab[None, :]).ravel()
    weight = (weight[:, None] + (np.arange(16) > 0)[None, :]).ravel()
assert final.size == 16 ** len(GATES)

accepted = (symp(final, *Z_ANC) == 0) & (symp(final, *XXXX) == 0) & (symp(final, *ZZZZ) == 0)
good = accepted & (symp(final, *Z_A) == 0) & (symp(final, *Z_B) == 0)
n_acc = np.bincount(weight[accepted], minlength=6)
n_good = np.bincount(weight[good], minlength=6)

# Independent route: dense 32-dim state-vector simulation for a sample of configurations.
I2 = np.eye(2); X = np.array([[0, 1], [1, 0]]); Z = np.diag([1, -1]); Y = 1j * X @ Z
PAULI = [I2, X, Y, Z]


def op_on(mats):
    out = np.array([[1.0 + 0j]])
    for q in range(NQ):            # qubit 0 is the most significant factor
        out = np.kron(out, mats.get(q, I2))
    return out


def cnot_dense(c, t):
    dim = 2 ** NQ
    m = np.zeros((dim, dim))
    for i in range(dim):
        bits = [(i >> (NQ - 1 - q)) & 1 for q in range(NQ)]
        if bits[c]:
            bits[t] ^= 1
        j = sum(b << (NQ - 1 - q) for q, b in enumerate(bits))
        m[j, i] = 1
    return m


H = np.array([[1, 1], [1, -1]]) / np.sqrt(2)
psi0 = np.zeros(2 ** NQ, dtype=complex); psi0[0] = 1
psi0 = op_on({1: H}) @ psi0


CNOTS = [cnot_dense(c, t) for c, t in GATES]
FAULTS = [[op_on({c: PAULI[a], t: PAULI[b]}) for a in range(4) for b in range(4)] for c, t in GATES]


def run_dense(config):
    psi = psi0.copy()
    for g, k in enumerate(config):
        psi = FAULTS[g][k] @ (CNOTS[g] @ psi)
    return psi


ideal = run_dense([0] * len(GATES))
proj_anc0 = op_on({4: np.diag([1, 0])})
proj_code = (np.eye(32) + op_on({q: X for q in range(4)})) / 2 @ ((np.eye(32) + op_on({q: Z for q in range(4)})) / 2)
rng = np.random.default_rng(7)
checked = 0
for _ in range(400):
    config = [int(rng.integers(0, 16)) if rng.random() < 0.5 else 0 for _ in GATES]
    idx = 0
    for k in config:
        idx = idx * 16 + k
    psi = proj_code @ proj_anc0 @ run_dense(config)
    acc_dense = np.linalg.norm(psi) > 1e-9
    assert acc_dense == bool(accepted[idx]), config
    if acc_dense:
        good_dense = abs(abs(np.vdot(ideal, psi)) / np.linalg.norm(psi) - 1) < 1e-9
        assert good_dense == bool(good[idx]), config
    checked += 1

p = sp.symbols("p")
w = [(1 - p) ** (len(GATES) - k) * (p / 15) ** k for k in range(len(GATES) + 1)]
P_acc = sum(int(n) * wk for n, wk in zip(n_acc, w))
P_good = sum(int(n) * wk for n, wk in zip(n_good, w))
F = sp.factor(sp.cancel(P_good / P_acc))
num, den = sp.fraction(sp.cancel(F))
series = sp.series(F, p, 0, 3).removeO()

print("configurations:", final.size, "dense cross-check:", checked, "ok")
print("accepted counts by number of faulty gates:", n_acc.tolist())
print("good counts by number of faulty gates:", n_good.tolist())
print("F(0) =", F.subs(p, 0), " F(3/4) =", sp.nsimplify(F.subs(p, sp.Rational(3, 4))))
print("small-p expansion:", sp.expand(series))
print("RESULT_JSON", json.dumps({"F_logical": sp.srepr(F), "F_text": str(F),
                                 "n_acc": n_acc.tolist(), "n_good": n_good.tolist()}))

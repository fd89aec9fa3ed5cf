"""Noiseless check of the [[4,2,2]] preparation circuit by dense state-vector simulation.

Self-contained (numpy only). Applies H_1, CNOT_12, CNOT_10, CNOT_23, CNOT_34, CNOT_04 to |00000>
(qubit 4 = ancilla) and prints the expectation value of each stabilizer of the target state
|00>_AB (x) |0>_ancilla; all must be +1. An independent route (symplectic propagation of the
initial stabilizers Z_i, with X_1 after the Hadamard) must give the same group.
"""
import numpy as np

N = 5
I2 = np.eye(2); X = np.array([[0, 1], [1, 0]]); Z = np.diag([1.0, -1.0])
H = np.array([[1, 1], [1, -1]]) / np.sqrt(2)


def op(mats):
    out = np.array([[1.0]])
    for q in range(N):
        out = np.kron(out, mats.get(q, I2))
    return out


def cnot(c, t):
    m = np.zeros((2 ** N, 2 ** N))
    for i in range(2 ** N):
        bits = [(i >> (N - 1 - q)) & 1 for q in range(N)]
        if bits[c]:
            bits[t] ^= 1
        m[sum(b << (N - 1 - q) for q, b in enumerate(bits)), i] = 1
    return m


psi = np.zeros(2 ** N); psi[0] = 1
psi = op({1: H}) @ psi
for c, t in [(1, 2), (1, 0), (2, 3), (3, 4), (0, 4)]:
    psi = cnot(c, t) @ psi

checks = {"XXXX": op({q: X for q in range(4)}), "ZZZZ": op({q: Z for q in range(4)}),
          "Z_A=ZZII": op({0: Z, 1: Z}), "Z_B=ZIZI": op({0: Z, 2: Z}), "Z_ancilla": op({4: Z})}
values = {k: float(psi @ m @ psi) for k, m in checks.items()}
for k, v in values.items():
    print(f"<{k}> = {v:+.6f}")

# Independent route: propagate the stabilizer generators of the initial state symbolically.
def conj(p, c, t):                 # p = (xbits, zbits) as lists
    x, z = list(p[0]), list(p[1])
    x[t] ^= x[c]; z[c] ^= z[t]
    return (x, z)


gens = [([0] * N, [1 if q == i else 0 for q in range(N)]) for i in range(N)]
gens[1] = ([0, 1, 0, 0, 0], [0] * N)        # H_1 turns Z_1 into X_1
for c, t in [(1, 2), (1, 0), (2, 3), (3, 4), (0, 4)]:
    gens = [conj(g, c, t) for g in gens]
rows = np.array([g[0] + g[1] for g in gens]) % 2
targets = np.array([[1, 1, 1, 1, 0] + [0] * 5, [0] * 5 + [1, 1, 1, 1, 0], [0] * 5 + [1, 1, 0, 0, 0],
                    [0] * 5 + [1, 0, 1, 0, 0], [0] * 5 + [0, 0, 0, 0, 1]])


def rank2(m):
    m = m.copy() % 2; r = 0
    for col in range(m.shape[1]):
        piv = next((i for i in range(r, len(m)) if m[i, col]), None)
        if piv is None:
            continue
        m[[r, piv]] = m[[piv, r]]
        for i in range(len(m)):
            if i != r and m[i, col]:
                m[i] ^= m[r]
        r += 1
    return r


same_group = rank2(rows) == rank2(np.vstack([rows, targets])) == 5
ok = all(abs(v - 1) < 1e-12 for v in values.values()) and same_group
print("symplectic route spans the same stabilizer group:", same_group)
print("ideal-state check:", "PASS" if ok else "FAIL")

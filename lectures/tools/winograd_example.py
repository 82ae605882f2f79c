#!/usr/bin/env python3
"""Reproduces every number of chapter 8's Winograd example (lectures/08-conv-algorithms.md, section 5).

Plain Python, no numpy: exact arithmetic with fractions.Fraction, so every intermediate printed
here is the exact value the chapter shows. It checks

  1. the 1-D F(2, 3) with its four products m1..m4 against the direct 1-D correlation;
  2. the 2-D F(2x2, 3x3) on the chapter's 4x4 tile d and 3x3 filter g, printing
     U = G g G^T, V = B^T d B, M = U (element-wise) V and Y = A^T M A, against direct correlation;
  3. F(4x4, 3x3) (Lavin and Gray's matrices with the points 0, +-1, +-2 and infinity) against direct
     correlation on random integer tiles, exactly;
  4. the multiply counts per output tile and the additions of the transforms;
  5. how the rounding error grows with the tile: FP32 emulated by rounding after every operation
     (struct 'f'), direct, F(2x2, 3x3) and F(4x4, 3x3) against the exact result, on random tiles.

Usage: python3 lectures/tools/winograd_example.py   (exit status 1 if any check fails)
"""
import random
import struct
import sys
from fractions import Fraction as Fr

# ---- small exact matrix helpers -------------------------------------------------------------


def matmul(a, b, rnd=lambda v: v):
    """a @ b; rnd rounds every product and every partial sum (identity: exact)."""
    out = []
    for i in range(len(a)):
        row = []
        for j in range(len(b[0])):
            s = None
            for k in range(len(b)):
                p = rnd(a[i][k] * b[k][j])
                s = p if s is None else rnd(s + p)
            row.append(s)
        out.append(row)
    return out


def transpose(a):
    return [list(r) for r in zip(*a)]


def hadamard(a, b, rnd=lambda v: v):
    return [[rnd(x * y) for x, y in zip(ra, rb)] for ra, rb in zip(a, b)]


def correlate(d, g, rnd=lambda v: v):
    """Direct 2-D cross-correlation, no padding, stride 1 (what CNN layers call convolution)."""
    m, r = len(d) - len(g) + 1, len(g)
    out = []
    for p in range(m):
        row = []
        for q in range(m):
            s = None
            for i in range(r):
                for j in range(r):
                    t = rnd(d[p + i][q + j] * g[i][j])
                    s = t if s is None else rnd(s + t)
            row.append(s)
        out.append(row)
    return out


def fmt(v):
    v = Fr(v)
    return str(v.numerator) if v.denominator == 1 else f"{v.numerator}/{v.denominator}"


def show(name, a):
    width = max(len(fmt(v)) for r in a for v in r)
    print(f"{name} =")
    for r in a:
        print("   [ " + "  ".join(fmt(v).rjust(width) for v in r) + " ]")


# ---- F(2x2, 3x3) ------------------------------------------------------------------------------
BT2 = [[1, 0, -1, 0], [0, 1, 1, 0], [0, -1, 1, 0], [0, 1, 0, -1]]
G2 = [[1, 0, 0], [Fr(1, 2), Fr(1, 2), Fr(1, 2)], [Fr(1, 2), Fr(-1, 2), Fr(1, 2)], [0, 0, 1]]
AT2 = [[1, 1, 1, 0], [0, 1, -1, -1]]

# ---- F(4x4, 3x3): Lavin and Gray (2016), points 0, 1, -1, 2, -2, infinity ---------------------
BT4 = [[4, 0, -5, 0, 1, 0],
       [0, -4, -4, 1, 1, 0],
       [0, 4, -4, -1, 1, 0],
       [0, -2, -1, 2, 1, 0],
       [0, 2, -1, -2, 1, 0],
       [0, 4, 0, -5, 0, 1]]
G4 = [[Fr(1, 4), 0, 0],
      [Fr(-1, 6), Fr(-1, 6), Fr(-1, 6)],
      [Fr(-1, 6), Fr(1, 6), Fr(-1, 6)],
      [Fr(1, 24), Fr(1, 12), Fr(1, 6)],
      [Fr(1, 24), Fr(-1, 12), Fr(1, 6)],
      [0, 0, 1]]
AT4 = [[1, 1, 1, 1, 1, 0],
       [0, 1, -1, 2, -2, 0],
       [0, 1, 1, 4, 4, 0],
       [0, 1, -1, 8, -8, 1]]


def winograd(d, g, BT, G, AT, rnd=lambda v: v):
    U = matmul(matmul(G, g, rnd), transpose(G), rnd)   # filter transform
    V = matmul(matmul(BT, d, rnd), transpose(BT), rnd)  # input transform
    M = hadamard(U, V, rnd)                             # the only multiplications that count
    Y = matmul(matmul(AT, M, rnd), transpose(AT), rnd)  # inverse (output) transform
    return U, V, M, Y


# The chapter's example: a 4x4 input tile and a 3x3 filter of small integers.
D = [[1, 2, 0, 1],
     [0, 1, 3, 2],
     [2, 1, 0, 1],
     [1, 0, 2, 3]]
GF = [[1, 0, -1],
      [2, 1, 0],
      [0, 1, 1]]


def adds_of(a):
    """Additions to apply matrix `a` (entries 0, +-1, constants) to a vector: per row, nonzeros - 1."""
    return sum(max(sum(1 for v in row if v != 0) - 1, 0) for row in a)


def fp32(v):
    return struct.unpack("f", struct.pack("f", float(v)))[0]


def main():
    ok = True

    print("== 1. F(2, 3) in one dimension ==")
    dd, gg = [1, 2, 0, 1], [2, 1, 1]
    m1 = (dd[0] - dd[2]) * gg[0]
    m2 = (dd[1] + dd[2]) * Fr(gg[0] + gg[1] + gg[2], 2)
    m3 = (dd[2] - dd[1]) * Fr(gg[0] - gg[1] + gg[2], 2)
    m4 = (dd[1] - dd[3]) * gg[2]
    y = [m1 + m2 + m3, m2 - m3 - m4]
    want = [sum(dd[i + j] * gg[j] for j in range(3)) for i in range(2)]
    print(f"d = {dd}, g = {gg}: m1..m4 = {', '.join(fmt(v) for v in (m1, m2, m3, m4))}; "
          f"y = [{fmt(y[0])}, {fmt(y[1])}], direct = {want}")
    ok &= y == want

    print("\n== 2. F(2x2, 3x3) on the chapter's tile ==")
    show("d", D)
    show("g", GF)
    Gg = matmul(G2, GF)
    show("G g (4x3)", Gg)
    U, V, M, Y = winograd(D, GF, BT2, G2, AT2)
    show("U = G g G^T (4x4)", U)
    BTd = matmul(BT2, D)
    show("B^T d (4x4)", BTd)
    show("V = B^T d B (4x4)", V)
    show("M = U (.) V (4x4)", M)
    ATM = matmul(AT2, M)
    show("A^T M (2x4)", ATM)
    show("Y = A^T M A (2x2)", Y)
    direct = correlate(D, GF)
    show("direct correlation (2x2)", direct)
    ok &= Y == direct
    print("Winograd == direct:", Y == direct)

    print("\n== 3. F(4x4, 3x3), exact, on random integer tiles ==")
    rng = random.Random(8)
    trials = 200
    good = 0
    for _ in range(trials):
        d = [[rng.randint(-9, 9) for _ in range(6)] for _ in range(6)]
        g = [[rng.randint(-9, 9) for _ in range(3)] for _ in range(3)]
        good += winograd(d, g, BT4, G4, AT4)[3] == correlate(d, g)
    print(f"{good} of {trials} random 6x6 tiles equal direct correlation exactly")
    ok &= good == trials
    good = 0
    for _ in range(trials):
        d = [[rng.randint(-9, 9) for _ in range(4)] for _ in range(4)]
        g = [[rng.randint(-9, 9) for _ in range(3)] for _ in range(3)]
        good += winograd(d, g, BT2, G2, AT2)[3] == correlate(d, g)
    print(f"{good} of {trials} random 4x4 tiles equal direct correlation exactly (F(2x2, 3x3))")
    ok &= good == trials

    print("\n== 4. Counts per output tile (one input channel, one filter) ==")
    for name, m, BT, AT in (("F(2x2, 3x3)", 2, BT2, AT2), ("F(4x4, 3x3)", 4, BT4, AT4)):
        a = m + 2
        direct_mults, wino_mults = m * m * 9, a * a
        # input transform B^T d B: B^T on a columns, then on a rows; output A^T M A likewise
        in_adds = adds_of(BT) * a * 2
        out_adds = adds_of(AT) * a + adds_of(AT) * m
        big = max(abs(Fr(v)) for mat in (BT, AT) for r in mat for v in r)
        print(f"{name}: tile {a}x{a}, {direct_mults} direct multiplies vs {wino_mults} "
              f"element-wise ({Fr(direct_mults, wino_mults)} = {direct_mults / wino_mults:.2f}x fewer); "
              f"additions: input transform {in_adds}, output transform {out_adds} "
              f"(multiplications by constants other than +-1 not counted); largest |coefficient| in B^T and A^T: {fmt(big)}")

    print("\n== 5. Rounding error in emulated FP32 (every operation rounded), inputs uniform in [-1, 1] ==")
    rng = random.Random(2016)
    trials = 2000
    tiles = []  # the same tiles for every method: 6x6 inputs, 3x3 filters, 4x4 outputs
    for _ in range(trials):
        d32 = [[fp32(rng.uniform(-1, 1)) for _ in range(6)] for _ in range(6)]
        g32 = [[fp32(rng.uniform(-1, 1)) for _ in range(3)] for _ in range(3)]
        exact = correlate([[Fr(v) for v in r] for r in d32], [[Fr(v) for v in r] for r in g32])
        tiles.append((d32, g32, exact))
    for name, m, BT, G, AT in (("direct", None, None, None, None), ("F(2x2, 3x3)", 2, BT2, G2, AT2),
                               ("F(4x4, 3x3)", 4, BT4, G4, AT4)):
        worst = total = 0.0
        count = 0
        for d32, g32, exact in tiles:
            if m is None:
                got = correlate(d32, g32, fp32)
            else:
                # cover the 4x4 output with four F(2x2) tiles, or with one F(4x4) tile
                Gf = [[fp32(v) for v in r] for r in G]
                got = [[0.0] * 4 for _ in range(4)]
                for p0 in range(0, 4, m):
                    for q0 in range(0, 4, m):
                        tile = [row[q0:q0 + m + 2] for row in d32[p0:p0 + m + 2]]
                        y = winograd(tile, g32, BT, Gf, AT, fp32)[3]
                        for i in range(m):
                            for j in range(m):
                                got[p0 + i][q0 + j] = y[i][j]
            for i in range(4):
                for j in range(4):
                    e = abs(float(Fr(got[i][j]) - exact[i][j]))
                    worst = max(worst, e)
                    total += e
                    count += 1
        print(f"{name:12s}: mean |error| {total / count:.2e}, largest {worst:.2e} "
              f"({trials} tiles of 4x4 outputs)")

    print("\nall checks passed" if ok else "\nA CHECK FAILED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())

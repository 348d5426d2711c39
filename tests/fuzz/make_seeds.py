#!/usr/bin/env python3
"""make_seeds.py - writes the seed corpus (tests/fuzz/corpus): one input per situation the target decodes."""
import os
import struct

HERE = os.path.dirname(os.path.abspath(__file__))
# Row kinds and flags as fuzz_layernorm.c / fuzz_check.h decode them.
NORMAL, OFFSET, CONST, RAW, SPECIAL, TINY, HUGE, BURN, ALT = range(9)
NO_GAMMA, NO_BETA, NO_STATS, NO_DX, NO_DGAMMA, NO_DBETA, IN_PLACE, GUARD_BEFORE = (1 << i for i in range(8))


def seed(rows_byte, cols_word, pad, eps_byte, flags, cap, split, rng, rows, tail=(0, 0, 0), raw_eps=None):
    b = struct.pack("<BHBB", rows_byte, cols_word, pad, eps_byte)
    if raw_eps is not None:
        b += struct.pack("<f", raw_eps)
    b += struct.pack("<BBBI", flags, cap, split, rng)
    for kind, param, *raw in rows:
        b += struct.pack("<BB", kind, param)
        if kind == RAW:
            b += struct.pack("<16f", *(raw[0] + [0.0] * 16)[:16])
    return b + bytes(tail)


SEEDS = {
    "normal_768": seed(3, 0x8000 | 767, 0, 0, 0, 2, 1, 1, [(NORMAL, 0)] * 4, (0, 1, 2)),
    "offset_rows": seed(4, 100, 3, 0, 0, 1, 2, 2, [(OFFSET, 1), (OFFSET, 2), (OFFSET, 3), (OFFSET, 4), (OFFSET, 5)]),
    "constant_rows": seed(7, 33, 0, 2, 0, 0, 3, 3, [(CONST, k) for k in range(8)]),
    "constant_eps0": seed(1, 16, 0, 1, 0, 2, 0, 4, [(CONST, 7), (CONST, 10)]),
    "burn_5607": seed(0, 15, 0, 0, 0, 2, 0, 5, [(BURN, 0)]),
    "onnx_40000": seed(0, 3, 0, 0, 0, 2, 0, 6, [(RAW, 0, [40000.0, 40001.0, 40002.0, 40003.0])]),
    "nan_inf_rows": seed(5, 57, 1, 0, 0, 2, 2, 7, [(SPECIAL, 0), (NORMAL, 0), (SPECIAL, 1), (SPECIAL, 2), (NORMAL, 0), (SPECIAL, 3)], (1, 5, 4)),
    "tiny_subnormal": seed(3, 40, 0, 4, 0, 2, 1, 8, [(TINY, 0), (TINY, 1), (TINY, 0), (CONST, 4)]),
    "huge": seed(3, 20, 2, 5, 0, 2, 1, 9, [(HUGE, 0), (HUGE, 1), (ALT, 19), (ALT, 38)]),
    "cols1": seed(7, 0, 0, 0, 0, 2, 4, 10, [(NORMAL, 0)] * 8),
    "nulls_all": seed(2, 9, 0, 0, NO_GAMMA | NO_BETA | NO_STATS | NO_DX | NO_DGAMMA | NO_DBETA, 2, 1, 11, [(NORMAL, 0)] * 3),
    "in_place_guard_before": seed(3, 31, 0, 0, IN_PLACE | GUARD_BEFORE, 2, 2, 12, [(NORMAL, 2)] * 4),
    "blocks_70rows": seed(0x80 | 10, 47, 0, 0, 0, 2, 33, 13, [(NORMAL, 0)] * 70),
    "wide_5000": seed(0, 0x8000 | 4999, 0, 0, 0, 2, 0, 14, [(NORMAL, 0)]),
    "wide_16384": seed(1, 0x8000 | 16383, 0, 3, GUARD_BEFORE, 1, 1, 15, [(OFFSET, 2), (NORMAL, 0)]),
    "raw_eps_ld": seed(2, 11, 7, 8, 0, 0, 1, 16, [(RAW, 0, [1.0, -2.0, 3e-40, 5e30, -7.25, 0.0]), (ALT, 3), (NORMAL, 3)], (0, 6, 6), raw_eps=3.0e-3),
    "range_edge": seed(2, 4, 0, 1, 0, 2, 1, 17, [(RAW, 0, [2.2e18, -2.2e18, 2.2e18, -2.2e18, 2.2e18]), (RAW, 0, [3.4e38, -3.4e38, 0.0, 1.0, 2.0]), (ALT, 18)]),
    "param_nan": seed(2, 24, 0, 0, 0, 2, 1, 18, [(NORMAL, 0)] * 3, (0, 4 | (5 << 3), 4 | (9 << 3))),
}

if __name__ == "__main__":
    out = os.path.join(HERE, "corpus")
    os.makedirs(out, exist_ok=True)
    for name, data in SEEDS.items():
        with open(os.path.join(out, name), "wb") as f:
            f.write(data)
    print(f"{len(SEEDS)} seeds in {out}")

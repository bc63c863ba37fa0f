"""The risk draws' random numbers, the very ones ``numpy.random`` gives, without importing it.

The Monte Carlo (:func:`~tokenfactory_xl.tfom.risk.draw`) draws its drivers from one generator
seeded with a fixed seed, so that the same inputs give the same figures run after run. That
generator is numpy's PCG64 as ``numpy.random.default_rng(seed)`` seeds it, and each driver's
draws are numpy's triangular sampling of its doubles; this module computes both in plain numpy
(:class:`Pcg64`, :func:`triangular`), the same numbers to the last bit (tests compare them with
``numpy.random`` for many seeds and sizes), because importing ``numpy.random`` cost a ``risk``
command about 8 ms of CPU, a tenth of what it adds to ``summary``.

PCG64 keeps a 128-bit linear congruential state; each 64-bit output is the state's high and low
halves XORed and turned right by its top six bits, and each double the output's top 53 bits.
SeedSequence hashes the seed's 32-bit words into the first state and the increment. The outputs
are computed a block at a time: the state after k steps is A_k × state + C_k (mod 2^128), so
every output of a block follows from the block's first state at once.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

_M32, _M64, _M128 = (1 << 32) - 1, (1 << 64) - 1, (1 << 128) - 1
_PCG_MULTIPLIER = 0x2360ED051FC65DA44385DF649FCCF645
#: SeedSequence's hash constants, and its pool of four 32-bit words.
_INIT_A, _MULT_A, _INIT_B, _MULT_B = 0x43B0D7E5, 0x931E8875, 0x8B51F9DD, 0x58F38DED
_MIX_L, _MIX_R, _POOL = 0xCA01F9DD, 0x4973F715, 4


def _seed_words(seed: int, count: int) -> list[int]:
    """``SeedSequence(seed).generate_state(count, numpy.uint64)``: the seed's 32-bit words
    (least significant first) hashed into a pool of four, the pool hashed into the words."""
    if not isinstance(seed, (int, np.integer)) or seed < 0:
        raise ValueError(f"seed {seed!r}: a whole number of at least 0")
    seed, words = int(seed), []
    while True:
        words.append(seed & _M32)
        seed >>= 32
        if not seed:
            break
    hash_const = _INIT_A

    def hashmix(value: int) -> int:
        nonlocal hash_const
        value = (value ^ hash_const) & _M32
        hash_const = (hash_const * _MULT_A) & _M32
        value = (value * hash_const) & _M32
        return value ^ (value >> 16)

    def mix(x: int, y: int) -> int:
        out = (_MIX_L * x - _MIX_R * y) & _M32
        return out ^ (out >> 16)

    pool = [hashmix(words[i] if i < len(words) else 0) for i in range(_POOL)]
    for src in range(_POOL):
        for dst in range(_POOL):
            if src != dst:
                pool[dst] = mix(pool[dst], hashmix(pool[src]))
    for word in words[_POOL:]:
        for dst in range(_POOL):
            pool[dst] = mix(pool[dst], hashmix(word))
    hash_const, halves = _INIT_B, []
    for i in range(2 * count):
        value = (pool[i % _POOL] ^ hash_const) & _M32
        hash_const = (hash_const * _MULT_B) & _M32
        value = (value * hash_const) & _M32
        halves.append(value ^ (value >> 16))
    return [halves[2 * i] | halves[2 * i + 1] << 32 for i in range(count)]


def _halves(values: Sequence[int]) -> tuple[np.ndarray, np.ndarray]:
    """128-bit numbers as their high and low 64 bits."""
    return (np.array([v >> 64 for v in values], dtype=np.uint64),
            np.array([v & _M64 for v in values], dtype=np.uint64))


def _high_product(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """The high 64 bits of each 128-bit product x × y of 64-bit numbers, by 32-bit halves
    (x and y broadcast against each other; in place where it can, a tenth less CPU)."""
    half, mask = np.uint64(32), np.uint64(_M32)
    x0, x1, y0, y1 = x & mask, x >> half, y & mask, y >> half
    cross, other = x0 * y1, x1 * y0
    carry = x0 * y0
    carry >>= half
    out = x1 * y1
    low = cross & mask
    carry += low
    np.bitwise_and(other, mask, out=low)
    carry += low
    carry >>= half
    cross >>= half
    out += cross
    other >>= half
    out += other
    out += carry
    return out


#: The most doubles :meth:`_Pcg64.doubles` computes at once (2 MB of them; a risk run's default
#: 90,000 in one go).
DOUBLES_AT_ONCE = 1 << 18


class Pcg64:
    """``numpy.random.PCG64(seed)``: its state and increment, and its doubles."""

    def __init__(self, seed: int):
        words = _seed_words(seed, 4)
        initial, sequence = words[0] << 64 | words[1], words[2] << 64 | words[3]
        self.inc = (sequence << 1 | 1) & _M128
        self.state = 0
        self._step()
        self.state = (self.state + initial) & _M128
        self._step()

    def _step(self) -> None:
        self.state = (self.state * _PCG_MULTIPLIER + self.inc) & _M128

    def doubles(self, count: int) -> np.ndarray:
        """The next ``count`` doubles in [0, 1) (``Generator.random``'s), the state moved on:
        :data:`DOUBLES_AT_ONCE` at a time (the arithmetic's temporaries, a few times the
        doubles' memory, stay bounded however many draws a run asks for)."""
        if count <= 0:
            return np.empty(0)
        if count > DOUBLES_AT_ONCE:
            return np.concatenate([self.doubles(min(DOUBLES_AT_ONCE, count - start))
                                   for start in range(0, count, DOUBLES_AT_ONCE)])
        size = max(1, math.isqrt(count))  # outputs per block: as many as blocks
        blocks = -(-count // size)
        scale, shift, steps = 1, 0, []  # state after k steps: scale × state + shift
        for _ in range(size):
            scale = scale * _PCG_MULTIPLIER & _M128
            shift = (shift * _PCG_MULTIPLIER + self.inc) & _M128
            steps.append((scale, shift))
        starts = [self.state]
        for _ in range(blocks - 1):
            starts.append((scale * starts[-1] + shift) & _M128)
        scale_hi, scale_lo = (x[None, :] for x in _halves([a for a, _ in steps]))
        shift_hi, shift_lo = (x[None, :] for x in _halves([c for _, c in steps]))
        start_hi, start_lo = (x[:, None] for x in _halves(starts))
        low = scale_lo * start_lo  # the product's low half; its high half, mod 2^64:
        high = _high_product(scale_lo, start_lo)
        high += scale_lo * start_hi
        high += scale_hi * start_lo
        low += shift_lo
        high += shift_hi
        high += low < shift_lo  # the carry of the low halves' sum
        high, low = high.reshape(-1)[:count], low.reshape(-1)[:count]
        self.state = int(high[-1]) << 64 | int(low[-1])
        low ^= high  # the output: the halves XORed, turned right by the top six bits
        turn = high >> np.uint64(58)
        out = low >> turn
        np.subtract(np.uint64(64), turn, out=turn)
        turn &= np.uint64(63)
        low <<= turn
        out |= low
        out >>= np.uint64(11)
        return out.astype(float) * (1.0 / 9007199254740992.0)


def check_triangle(low: float, mode: float, high: float) -> None:
    """``Generator.triangular``'s checks of a driver's range, with its messages (a range of
    one value is not drawn)."""
    if low > mode:
        raise ValueError("left > mode")
    if mode > high:
        raise ValueError("mode > right")


def triangular(uniform: np.ndarray, low: float, mode: float, high: float) -> np.ndarray:
    """numpy's triangular draw of each uniform double: below the mode's share of the range,
    low + √(U × (mode − low) × (high − low)), else high − √((1 − U) × (high − mode) × (high −
    low)), each operation rounded as numpy's C code rounds it."""
    base = high - low
    left = mode - low
    ratio, left_product, right_product = left / base, left * base, (high - mode) * base
    return np.where(uniform <= ratio, low + np.sqrt(uniform * left_product),
                    high - np.sqrt((1.0 - uniform) * right_product))

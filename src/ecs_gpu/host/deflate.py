"""A small, deterministic gzip (RFC 1951 deflate in an RFC 1952 member), in pure Python.

Why not :mod:`gzip`: its bytes are the linked zlib's, and zlib-ng (Fedora 40
and later, CPython 3.14 on Windows) compresses the same text to different
bytes. The host files travel compressed in the launch template's user data
(docs/host.md "Size"), so a synth on another machine would be a new launch
template version and an instance refresh of the GPU fleet for nothing. This
encoder uses integers only and depends on nothing but its input: the same
text gives the same bytes on every platform.

It is meant for a few kilobytes of text: greedy LZ77 over hash chains, one
dynamic-Huffman block. Any gzip reader decodes it (the tests decode it with
:func:`gzip.decompress`).
"""

from __future__ import annotations

import heapq
import zlib
from typing import Final

_WINDOW: Final = 32 * 1024
_MIN_MATCH: Final = 3
_MAX_MATCH: Final = 258
# How many earlier positions with the same 3-byte prefix are tried per match.
_MAX_CHAIN: Final = 256

# (base, extra bits) of length codes 257..285 and distance codes 0..29 (RFC 1951 3.2.5).
_LEN_BASE: Final = (
    3, 4, 5, 6, 7, 8, 9, 10, 11, 13, 15, 17, 19, 23, 27, 31,
    35, 43, 51, 59, 67, 83, 99, 115, 131, 163, 195, 227, 258,
)  # fmt: skip
_LEN_EXTRA: Final = (0,) * 8 + (1,) * 4 + (2,) * 4 + (3,) * 4 + (4,) * 4 + (5,) * 4 + (0,)
_DIST_BASE: Final = (
    1, 2, 3, 4, 5, 7, 9, 13, 17, 25, 33, 49, 65, 97, 129, 193,
    257, 385, 513, 769, 1025, 1537, 2049, 3073, 4097, 6145, 8193, 12289, 16385, 24577,
)  # fmt: skip
_DIST_EXTRA: Final = (0, 0, 0, 0, *(i // 2 for i in range(2, 28)))
# Order in which code-length code lengths are sent (RFC 1951 3.2.7).
_CL_ORDER: Final = (16, 17, 18, 0, 8, 7, 9, 6, 10, 5, 11, 4, 12, 3, 13, 2, 14, 1, 15)
_END: Final = 256


def _code_index(bases: tuple[int, ...], value: int) -> int:
    """Index of the last base <= value."""
    i = len(bases) - 1
    while bases[i] > value:
        i -= 1
    return i


def _lz77(data: bytes) -> list[tuple[int, int]]:
    """Tokens: (literal byte, 0) or (length, distance) with length >= 3."""
    heads: dict[bytes, list[int]] = {}
    out: list[tuple[int, int]] = []
    i, n = 0, len(data)
    while i < n:
        best_len, best_dist = 0, 0
        if i + _MIN_MATCH <= n:
            key = data[i : i + _MIN_MATCH]
            chain = heads.get(key, [])
            limit = min(_MAX_MATCH, n - i)
            for j in reversed(chain[-_MAX_CHAIN:]):
                if i - j > _WINDOW:
                    break
                length = _MIN_MATCH
                while length < limit and data[j + length] == data[i + length]:
                    length += 1
                if length > best_len:
                    best_len, best_dist = length, i - j
                    if length == limit:
                        break
        step = best_len if best_len >= _MIN_MATCH else 1
        out.append((best_len, best_dist) if best_len >= _MIN_MATCH else (data[i], 0))
        for k in range(i, min(i + step, n - _MIN_MATCH + 1)):
            heads.setdefault(data[k : k + _MIN_MATCH], []).append(k)
        i += step
    return out


def _lengths(freqs: list[int], limit: int) -> list[int]:
    """Huffman code lengths of at most ``limit`` bits; ties broken by symbol, so deterministic."""
    scaled = list(freqs)
    while True:
        used = [s for s, f in enumerate(scaled) if f > 0]
        lengths = [0] * len(freqs)
        if len(used) == 1:
            lengths[used[0]] = 1
            return lengths
        # Heap items: (weight, tie-break, symbols under this node).
        heap = [(scaled[s], s, [s]) for s in used]
        heapq.heapify(heap)
        tie = len(freqs)
        while len(heap) > 1:
            w1, _, s1 = heapq.heappop(heap)
            w2, _, s2 = heapq.heappop(heap)
            for s in s1 + s2:
                lengths[s] += 1
            heapq.heappush(heap, (w1 + w2, tie, s1 + s2))
            tie += 1
        if max(lengths) <= limit:
            return lengths
        # Flatten the distribution and try again (rare for a few KB of text).
        scaled = [(f + 1) // 2 if f > 0 else 0 for f in scaled]


def _codes(lengths: list[int]) -> list[int]:
    """Canonical Huffman codes for ``lengths`` (RFC 1951 3.2.2)."""
    count = [0] * 16
    for n in lengths:
        count[n] += 1
    count[0] = 0
    nxt, code = [0] * 16, 0
    for bits in range(1, 16):
        code = (code + count[bits - 1]) << 1
        nxt[bits] = code
    codes = [0] * len(lengths)
    for s, n in enumerate(lengths):
        if n:
            codes[s] = nxt[n]
            nxt[n] += 1
    return codes


class _Bits:
    """LSB-first bit writer (RFC 1951 3.1.1)."""

    def __init__(self) -> None:
        self.out = bytearray()
        self.acc = 0
        self.n = 0

    def put(self, value: int, bits: int) -> None:
        self.acc |= value << self.n
        self.n += bits
        while self.n >= 8:
            self.out.append(self.acc & 0xFF)
            self.acc >>= 8
            self.n -= 8

    def huff(self, code: int, bits: int) -> None:
        """A Huffman code, which deflate packs starting from its most significant bit."""
        self.put(int(f"{code:0{bits}b}"[::-1], 2), bits)

    def flush(self) -> bytes:
        if self.n:
            self.out.append(self.acc & 0xFF)
        self.acc = self.n = 0
        return bytes(self.out)


def deflate(data: bytes) -> bytes:
    """Raw deflate: one final dynamic-Huffman block."""
    tokens = _lz77(data)
    lit_f, dist_f = [0] * 286, [0] * 30
    for a, d in tokens:
        if d == 0:
            lit_f[a] += 1
        else:
            lit_f[257 + _code_index(_LEN_BASE, a)] += 1
            dist_f[_code_index(_DIST_BASE, d)] += 1
    lit_f[_END] = 1
    if not any(dist_f):
        dist_f[0] = 1  # one distance code must be described even if unused
    lit_len, dist_len = _lengths(lit_f, 15), _lengths(dist_f, 15)
    hlit = max(257, max(s for s, n in enumerate(lit_len) if n) + 1)
    hdist = max(1, max(s for s, n in enumerate(dist_len) if n) + 1)
    seq = lit_len[:hlit] + dist_len[:hdist]
    cl_len = _lengths([seq.count(s) for s in range(19)], 7)
    hclen = max(4, max(i for i, s in enumerate(_CL_ORDER) if cl_len[s]) + 1)
    lit_code, dist_code, cl_code = _codes(lit_len), _codes(dist_len), _codes(cl_len)

    w = _Bits()
    w.put(1, 1)  # BFINAL
    w.put(2, 2)  # BTYPE = dynamic Huffman
    w.put(hlit - 257, 5)
    w.put(hdist - 1, 5)
    w.put(hclen - 4, 4)
    for s in _CL_ORDER[:hclen]:
        w.put(cl_len[s], 3)
    for n in seq:
        w.huff(cl_code[n], cl_len[n])
    for a, d in tokens:
        if d == 0:
            w.huff(lit_code[a], lit_len[a])
            continue
        li = _code_index(_LEN_BASE, a)
        w.huff(lit_code[257 + li], lit_len[257 + li])
        w.put(a - _LEN_BASE[li], _LEN_EXTRA[li])
        di = _code_index(_DIST_BASE, d)
        w.huff(dist_code[di], dist_len[di])
        w.put(d - _DIST_BASE[di], _DIST_EXTRA[di])
    w.huff(lit_code[_END], lit_len[_END])
    return w.flush()


def gzip_bytes(data: bytes) -> bytes:
    """One gzip member: no name, MTIME 0, OS 255 (unknown), so nothing but ``data`` shapes it."""
    header = b"\x1f\x8b\x08\x00" + b"\x00\x00\x00\x00" + b"\x00\xff"
    trailer = zlib.crc32(data).to_bytes(4, "little") + (len(data) & 0xFFFFFFFF).to_bytes(
        4, "little"
    )
    return header + deflate(data) + trailer

"""ecs_gpu.host.deflate: a gzip any reader decodes, the same bytes everywhere."""

from __future__ import annotations

import gzip
import random
import zlib

from hypothesis import given, settings
from hypothesis import strategies as st

from ecs_gpu import host
from ecs_gpu.host.deflate import _lengths, deflate, gzip_bytes
from ecs_gpu.spec import parse_spec
from example_specs import G5_GPU

SCRIPT = (
    b'#!/usr/bin/env bash\nset -euo pipefail\nlog() {\n  printf "%s\\n" "$*"\n}\n'
    + (b"log hello; " * 3)[:-2]
    + b"\n"
)
# The bytes this encoder gives for SCRIPT. Pinned: a change here changes every
# stack's user data, and so refreshes every GPU fleet at its next deploy.
SCRIPT_GZIP = bytes.fromhex(
    "1f8b08000000000000ff6dc901048030100550000e0000fc565191012000000080a0716b63b6d96d41"
    "02000000000000000000000000000000200110f0787da79b146d7cd41c2f98431c0957acdc12b2cf6c"
    "0f1f28a4739a7113908b8fd5428db24705352c8a9eafe13884b4e18ff40294f2bbd765000000"
)


def test_pinned_bytes_for_a_known_script() -> None:
    assert gzip.decompress(SCRIPT_GZIP) == SCRIPT
    assert gzip_bytes(SCRIPT) == SCRIPT_GZIP


def test_header_carries_no_time_name_or_os() -> None:
    g = gzip_bytes(b"x")
    # ID1 ID2, CM=8 (deflate), FLG=0 (no name/comment/extra), MTIME=0, XFL=0, OS=255.
    assert g[:10] == b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\xff"


def test_raw_deflate_is_what_zlib_inflates() -> None:
    data = b"ecs-gpu " * 50 + bytes(range(256))
    assert zlib.decompress(deflate(data), wbits=-15) == data


@given(st.binary(max_size=3000))
@settings(max_examples=150, deadline=None)
def test_any_bytes_round_trip(data: bytes) -> None:
    assert gzip.decompress(gzip_bytes(data)) == data


@given(st.text(alphabet="ab \n$", max_size=6000))
@settings(max_examples=60, deadline=None)
def test_repetitive_text_round_trips(text: str) -> None:
    # Few symbols, long matches: lengths up to 258, short code alphabets.
    data = text.encode()
    assert gzip.decompress(gzip_bytes(data)) == data


def test_edges_round_trip() -> None:
    rnd = random.Random(7)
    cases = [
        b"",
        b"a",
        b"a" * 100_000,  # matches of 258 at distance 1
        bytes(rnd.getrandbits(8) for _ in range(40_000)),  # little to match: literals
        # Matches just beyond the 32 KiB window must not be used.
        (noise := bytes(rnd.getrandbits(8) for _ in range(300))) + b"y" * 33_000 + noise,
    ]
    for data in cases:
        assert gzip.decompress(gzip_bytes(data)) == data, len(data)


def test_compresses_the_host_files_about_as_well_as_zlib() -> None:
    spec = parse_spec(G5_GPU, "g5.toml")
    for text in (host.setup_script(spec), host.agent_config_json(spec)):
        data = text.encode()
        ours, zlibs = len(gzip_bytes(data)), len(gzip.compress(data, 9, mtime=0))
        assert ours <= zlibs * 1.1, (ours, zlibs)


def test_code_lengths_stay_within_the_limit_and_complete() -> None:
    # Fibonacci frequencies give the deepest Huffman tree: 24 symbols, depth 23.
    fib = [1, 1]
    while len(fib) < 24:
        fib.append(fib[-1] + fib[-2])
    for freqs, limit in ((fib, 15), (fib[:12], 7), ([5, 0, 3], 15), ([0, 9], 15)):
        lengths = _lengths(freqs, limit)
        used = [n for n in lengths if n]
        assert max(used) <= limit
        assert all((n > 0) == (f > 0) for n, f in zip(lengths, freqs, strict=True))
        # Kraft sum 1 (a complete code), except a lone symbol, which gets one bit.
        kraft = sum(2 ** (limit - n) for n in used)
        assert kraft == (2**limit if len(used) > 1 else 2 ** (limit - 1))
    assert max(_lengths(fib, 30)) > 15  # without the limit the tree is deeper

"""The key map's arrays (``_requests.key_index``): keys and digests held compactly, every lookup
exact; and the staged bytes and digests of fixed requests, pinned (the identity protocol: an id
submitted before a change must still be adopted after it)."""

from __future__ import annotations

import hashlib
import json
import tracemalloc

import pytest

import vertexbatch as vb
from vertexbatch._requests.digests import digest_text, key_digest
from vertexbatch._requests.importer_types import FieldTypes
from vertexbatch._requests.key_index import DigestIndex, KeyList, first_words, hex_words
from vertexbatch._requests.keymap import KeyMap
from vertexbatch._requests.lines import claude_line, gemini_line


def _record(key: str, digest: str, canonical: str = "") -> bytes:
    return json.dumps([key, digest, canonical], separators=(",", ":")).encode()


def test_digests_sharing_their_first_half_lead_to_their_own_keys() -> None:
    """Two digests alike in their first 64 bits (one bucket, one sorted place) and one alike in
    its last 64: each finds its own key; a digest alike in one half only finds none."""
    high, other = "0123456789abcdef", "fedcba9876543210"
    digests = [f"k{high}{'0' * 16}", f"k{high}{'0' * 15}1", f"k{other}{'0' * 15}1"]
    lines = [_record(f"key-{i}", d) for i, d in enumerate(digests)]
    lines += [_record(f"fill-{i}", key_digest(f"fill-{i}")) for i in range(300)]
    km = KeyMap.from_records(lines, batch=64)
    for i, digest in enumerate(digests):
        assert km.match_id({"custom_id": digest}) == i
        assert km.keys[i] == f"key-{i}"
    for absent in (f"k{high}{'0' * 15}2", f"k{other}{'0' * 16}", f"k{'0' * 16}{high}"):
        assert km.match_id({"custom_id": absent}) is None
        assert km.match_id({"vb_key": absent}) is None
    assert km.match_id({"custom_id": key_digest("fill-299")}) == 302


def test_digests_added_one_by_one_and_in_batches_find_the_same_keys() -> None:
    """``add`` (a digest seen before: its first key) across index rebuilds, and ``extend``."""
    index = DigestIndex()
    numbers = [int(key_digest(str(i))[1:], 16) for i in range(5000)]
    for owner, number in enumerate(numbers):
        assert index.add(number, owner) == owner
    assert [index.add(number, 9999) for number in numbers[::7]] == list(range(0, 5000, 7))
    assert all(index.get(number) == owner for owner, number in enumerate(numbers))
    assert index.get(numbers[0] ^ 1) is None
    assert index.get(-numbers[0]) is None
    assert index.get(1 << 128) is None
    batch = DigestIndex()
    batch.extend_words(hex_words(b"".join(f"{n:032x}".encode() for n in numbers)), range(5000))
    assert batch.unique()
    assert [batch.get(n) for n in numbers] == list(range(5000))
    twice = DigestIndex()
    again = numbers + numbers[:1]
    twice.extend_words(hex_words(b"".join(f"{n:032x}".encode() for n in again)), range(5001))
    assert not twice.unique()


def test_a_repeated_key_far_from_its_first_is_named_by_its_line() -> None:
    """Plain batches check repeats at their end: the key map is then read again line by line,
    and the error names the line, as before."""
    lines = [_record(f"k{i}", key_digest(f"k{i}")) for i in range(3000)]
    lines.append(_record("k5", key_digest("other")))
    with pytest.raises(ValueError, match=r"^line 3001: a key appears twice$"):
        KeyMap.from_records(lines, batch=100)


def test_a_digest_shared_across_plain_batches_shares_its_line() -> None:
    """A deduplicated key's record (an earlier key's digest) in a later batch: that key's
    line answers both, as ``add`` has it."""
    lines = [_record(f"k{i}", key_digest(f"k{i}")) for i in range(3000)]
    lines.append(_record("again", key_digest("k7")))
    km = KeyMap.from_records(lines, batch=100)
    assert km.sharing and km.shared(7) == [3000] and km.primary(3000) == 7
    assert km.lines == 3000 and len(km) == 3001


def test_key_list_reads_as_a_list() -> None:
    keys = ["a", "é", "🙂", "\ud800", "", "key with space"]
    held = KeyList(keys)
    assert list(held) == keys and held == keys and len(held) == len(keys)
    assert [held[i] for i in range(-len(keys), len(keys))] == keys + keys
    assert held[1:4] == keys[1:4] and held[::-2] == keys[::-2]
    assert "🙂" in held and "b" not in held and held.index("🙂") == 2
    assert set(keys).difference(held) == set()
    with pytest.raises(IndexError):
        held[len(keys)]
    with pytest.raises(IndexError):
        held[-len(keys) - 1]
    assert "🙂" not in repr(held)


def test_a_key_map_of_100000_keys_holds_a_third_of_what_it_did() -> None:
    """100,000 plain records: 19.6 MB held as lists and dicts (24.7 MB while built); now
    well under a third of that, held and at its peak (docs/performance.md)."""
    lines = [
        _record(f"doc-{i:07d}", key_digest(f"doc-{i:07d}"), digest_text(str(i)))
        for i in range(100_000)
    ]
    tracemalloc.start()
    try:
        km = KeyMap.from_records(lines)
        held, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert held < 7 * 2**20 and peak < 16 * 2**20, (held, peak)
    assert km.match_id({"custom_id": key_digest("doc-0054321")}) == 54321
    assert km.keys[54321] == "doc-0054321"


def test_staged_bytes_and_digests_of_fixed_requests_are_unchanged() -> None:
    """A Claude and a Gemini request (non-ASCII text, a config, a label): their lines, digests
    and key records as staged before the compact key map and the cold-process work (2026-12-07).
    A change here breaks adoption of every id staged before it."""
    types = FieldTypes()
    claude = claude_line(
        vb.ClaudeRequest(
            "doc-1",
            {
                "max_tokens": 64,
                "temperature": 0.5,
                "system": "Be brief.",
                "messages": [{"role": "user", "content": "Sum é 🙂"}],
            },
        ),
        types,
    )
    gemini = gemini_line(
        vb.GeminiRequest(
            "doc-2",
            [{"role": "user", "parts": [{"text": "Sum é 🙂"}]}],
            {
                "system_instruction": "Be brief.",
                "temperature": 0.5,
                "max_output_tokens": 64,
                "labels": {"team": "a"},
            },
        ),
        FieldTypes(),
    )
    assert (claude.digest, claude.canonical) == (
        "kbb0e4f49443794d901e8969ff11bd112",
        "9f798723e08a3dabcf77c56a74941330",
    )
    assert claude.data == (
        b'{"custom_id":"kbb0e4f49443794d901e8969ff11bd112","request":{"anthropic_version":'
        b'"vertex-2023-10-16","max_tokens":64,"messages":[{"content":[{"text":"Sum '
        + "é 🙂".encode()
        + b'","type":"text"}],"role":"user"}],"system":[{"text":"Be brief.","type":"text"}],'
        b'"temperature":0.5}}\n'
    )
    assert hashlib.sha256(claude.data).hexdigest() == (
        "36061498a5ef9bd523e2b4b2e496ed62fa82928a4984d186fd41ec00f68aa80b"
    )
    assert claude.key_record() == (
        b'["doc-1","kbb0e4f49443794d901e8969ff11bd112","9f798723e08a3dabcf77c56a74941330"]\n'
    )
    assert (gemini.digest, gemini.canonical) == (
        "k664b4034b8fc71c0322dbf8d32631aed",
        "3d31a43fd502b2adf62174866f82327f",
    )
    assert hashlib.sha256(gemini.data).hexdigest() == (
        "9247a7581dfa792f0d5a1c9c5374084182abb73a0ac0d9fbe1e899d721776a8d"
    )
    assert gemini.key_record() == (
        b'["doc-2","k664b4034b8fc71c0322dbf8d32631aed","3d31a43fd502b2adf62174866f82327f"]\n'
    )


def test_hex_words_are_what_int_reads_of_each_word() -> None:
    words = [b"0000000000000000", b"ffffffffffffffff", b"8000000000000001", b"0123456789abcdef"]
    assert list(hex_words(b"".join(words))) == [int(w, 16) for w in words]
    assert list(hex_words(b"")) == []
    with pytest.raises(ValueError, match="16 digits"):
        hex_words(b"0123")
    with pytest.raises(ValueError):
        hex_words(b"zz" * 8)


def test_first_words_are_the_first_16_digits_of_each_as_int_reads_them() -> None:
    texts = [b"ffffffffffffffff" + b"0" * 16, b"", b"0000000000000001" + b"f" * 16]
    assert list(first_words(texts)) == [int(t[:16], 16) if t else 0 for t in texts]
    full = [b"8000000000000000" + b"1" * 16, b"0123456789abcdef" + b"2" * 16]
    assert list(first_words(full)) == [int(t[:16], 16) for t in full]

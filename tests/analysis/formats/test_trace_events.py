"""A Chrome/Kineto trace streamed into columns: the same values a dict per event gives (read here
with plain json), however the stream is cut into blocks, and within its bounds.
"""

from __future__ import annotations

import gzip
import json
import math
import threading
import time
import zlib
from pathlib import Path

import numpy as np
import pytest
from support.paths import FIX

from tinylab.analysis import formats
from tinylab.analysis.formats import _base, trace_events
from tinylab.analysis.formats._base import Bounded, FormatError
from tinylab.analysis.formats.trace_events import NotATrace, read_events
from tinylab.core.errors import UserError

H100 = FIX / "pytorch-profiler" / "cuda_h100" / "torchprof_trace.json.gz"
CPU_RUN = FIX / "pytorch-profiler" / "tinylab_cpu_v1_memory" / "trace.json.gz"


def expected(doc) -> list[tuple]:
    """What a dict per event says of each complete event with a duration, in file order: strings
    where strings belong (else None), numbers (else None), an int correlation (as a float), ids
    that are no string or number by their repr(); the device is the pid where args has none (or null)."""
    def number(v):
        if isinstance(v, bool) or not isinstance(v, (int, float)) or (isinstance(v, int) and abs(v) > 1e308):
            return None
        return float(v) if math.isfinite(v) else None

    def key(v):
        return v if v is None or isinstance(v, (str, int, float)) else repr(v)

    rows = []
    for e in events_of(doc):
        if not isinstance(e, dict) or e.get("ph") != "X" or number(e.get("dur")) is None or e["dur"] < 0:
            continue
        args = e.get("args") if isinstance(e.get("args"), dict) else {}
        corr = args.get("correlation")
        rows.append((e.get("cat") if isinstance(e.get("cat"), str) else None,
                     e.get("name") if isinstance(e.get("name"), str) else None, number(e.get("ts")), float(e["dur"]),
                     key(e.get("pid")), key(e.get("tid")), number(corr) if type(corr) is int else None,
                     key(e.get("pid") if args.get("device") is None else args["device"])))
    return rows


def events_of(doc):
    return doc["traceEvents"] if isinstance(doc, dict) else doc


def columns(ev) -> list[tuple]:
    corr = [None if math.isnan(c) else c for c in ev.correlation.tolist()]
    ts = [None if math.isnan(t) else t for t in ev.ts.tolist()]
    return [(ev.cats[c], ev.names[n], t, d, ev.ids[p], ev.ids[i], k, ev.ids[v]) for c, n, t, d, p, i, k, v in
            zip(ev.cat.tolist(), ev.name.tolist(), ts, ev.dur.tolist(), ev.pid.tolist(), ev.tid.tolist(), corr,
                ev.device.tolist())]


def write_json(tmp_path: Path, doc, name: str = "t.json.gz") -> Path:
    path = tmp_path / name
    data = json.dumps(doc).encode()
    path.write_bytes(gzip.compress(data) if name.endswith(".gz") else data)
    return path


@pytest.mark.parametrize("trace", [H100, CPU_RUN], ids=["h100", "cpu-run"])
def test_real_traces_as_columns(trace, monkeypatch):
    doc = json.loads(gzip.decompress(trace.read_bytes()))
    whole = read_events(trace)
    assert columns(whole) == expected(doc) and whole.base_ns == doc["baseTimeNanoseconds"]
    assert len(whole) == len(expected(doc)) > 2000
    monkeypatch.setattr(trace_events, "BLOCK", 4096)  # hundreds of blocks, each cut between two events
    assert columns(read_events(trace)) == expected(doc)


def test_split_points_inside_strings_and_nested_values_are_not_taken(tmp_path, monkeypatch):
    """`}, {` inside a name or inside a nested list of objects: a block never ends there."""
    events = []
    for i in range(400):
        events.append({"ph": "X", "cat": "kernel", "name": f"k{i % 7}}}, {{\"ph\": \"X\"}}" + " " * (i % 50),
                       "pid": 0, "tid": 7, "ts": 10.0 * i, "dur": 1.5 + i % 3,
                       "args": {"correlation": i, "device": 0, "grid": [{"a": 1}, {"b": [{"c": 2}, {"d": 3}]}]}})
        events.append({"ph": "f", "id": i, "pid": 0, "tid": 7, "ts": 10.0 * i, "cat": "ac2g", "name": "ac2g"})
    doc = {"schemaVersion": 1, "traceEvents": events, "traceName": "x]}, {", "baseTimeNanoseconds": 5}
    path = write_json(tmp_path, doc)
    monkeypatch.setattr(trace_events, "BLOCK", 700)
    got = read_events(path)
    assert columns(got) == expected(doc) and len(got) == 400 and got.base_ns == 5


def test_odd_types_are_read_as_a_dict_per_event_would(tmp_path, monkeypatch):
    events = [
        {"ph": "X", "cat": "kernel", "name": "k", "ts": 1, "dur": 2, "pid": 0, "tid": 1, "args": {"correlation": 3}},
        {"ph": "X", "cat": 5, "name": 7, "ts": "1", "dur": 2.5, "pid": [1], "tid": None, "args": None},
        {"ph": "X", "cat": "cpu_op", "name": "op", "ts": True, "dur": 4, "args": {"device": "x"}},
        {"ph": "X", "cat": "cpu_op", "name": "no dur"}, {"ph": "X", "dur": -1}, {"ph": "X", "dur": True},
        "not an event", 12, None, {"ph": "B", "name": "begin", "ts": 1},
        {"ph": "X", "cat": "kernel", "name": "big", "ts": 2, "dur": 1, "args": {"correlation": 10**30}},
        {"ph": "X", "cat": "kernel", "name": "huge", "ts": 2, "dur": 1, "args": {"correlation": 10**400}},
    ] * 30
    doc = {"traceEvents": events}
    monkeypatch.setattr(trace_events, "BLOCK", 300)
    path = write_json(tmp_path, doc)
    assert columns(read_events(path)) == expected(doc)
    only = read_events(path, frozenset({"kernel"}))  # one question's events, typed or not
    assert columns(only) == [row for row in expected(doc) if row[0] == "kernel"] and only.only == {"kernel"}


def test_ids_are_the_ids_a_dict_gives(tmp_path, monkeypatch):
    """Ints past 2**53, a null or absent device (the pid), a str among ints."""
    def event(i, pid, tid, args):
        return {"ph": "X", "cat": "kernel", "name": "k", "ts": i, "dur": 1, "pid": pid, "tid": tid, "args": args}

    blocks = [
        [event(i, 7, 2**53 + 1 + i % 2, {"device": -3 if i % 3 else None, "correlation": i}) for i in range(40)],
        [event(i, 7, 0, {"device": 0}) for i in range(40)],
        [event(i, "Spans" if i % 5 == 0 else 9, 11, {}) for i in range(40)],
        [event(i, 7, 5, {"device": None}) for i in range(40)],
    ]
    doc = {"traceEvents": [e for block in blocks for e in block]}
    monkeypatch.setattr(trace_events, "BLOCK", 2000)  # a few of each kind a block
    got = read_events(write_json(tmp_path, doc))
    assert columns(got) == expected(doc)
    assert {type(v) for v in got.ids} <= {int, str, type(None)}


@pytest.mark.parametrize("padding", [b"", b"\0" * 600], ids=["members", "zero-padded"])
def test_a_gzip_file_of_several_members_is_one_stream(tmp_path, monkeypatch, padding):
    """As gzip reads them: members one after the other, zero padding between and after them."""
    doc = {"traceEvents": [{"ph": "X", "cat": "kernel", "name": f"k{i}", "ts": i, "dur": 1} for i in range(3000)]}
    text = json.dumps(doc).encode()
    cut = text.index(b"}, {", len(text) // 2) + 3  # the second member starts inside the events
    path = tmp_path / "t.json.gz"
    path.write_bytes(gzip.compress(text[:cut]) + padding + gzip.compress(text[cut:]) + padding[:3])
    monkeypatch.setattr(trace_events, "COMPRESSED", 1000)  # members start and end inside reads
    assert columns(read_events(path)) == expected(doc) and len(expected(doc)) == 3000


@pytest.mark.parametrize("damage,error", [
    (lambda data: data[:-9], EOFError),  # cut short
    (lambda data: data[:-8] + b"\xff\xff\xff\xff" + data[-4:], zlib.error),  # a wrong CRC
    (lambda data: data + b"not gzip", zlib.error),  # garbage after the member
], ids=["cut", "crc", "garbage"])
def test_a_damaged_gzip_stream_is_an_error(tmp_path, damage, error, request):
    doc = {"traceEvents": [{"ph": "X", "cat": "kernel", "name": f"k{i}", "ts": i, "dur": 1} for i in range(300)]}
    path = tmp_path / "t.json.gz"
    path.write_bytes(damage(gzip.compress(json.dumps(doc).encode())))
    with pytest.raises(error, match="no gzip" if request.node.callspec.id == "garbage" else None):
        read_events(path)
    with pytest.raises(UserError, match="corrupt or truncated"):  # one line, naming the file
        formats.read_trace(path)


def test_a_bare_list_of_events_and_other_documents(tmp_path):
    events = [{"ph": "X", "cat": "Kernel", "name": "k", "ts": 1, "dur": 2.5}]
    got = read_events(write_json(tmp_path, events, "list.json"))
    assert columns(got) == expected(events) and got.base_ns is None
    assert len(read_events(write_json(tmp_path, [1, 2], "list.json"))) == 0  # a list of no events
    for doc in ({"timemory": {"wall_clock": []}}, {"traceEvents": 5}, "text"):
        with pytest.raises(NotATrace):
            read_events(write_json(tmp_path, doc, "other.json"))
    (tmp_path / "cut.json").write_text('{"traceEvents": [{"ph": "X", "cat": "kern')
    with pytest.raises(FormatError, match=r"not valid JSON \(truncated\?\)"):
        read_events(tmp_path / "cut.json")


def gzip_bomb(path: Path, inflated: int, unit: bytes = b" " * 1024) -> Path:
    z = zlib.compressobj(9, zlib.DEFLATED, 31)
    with open(path, "wb") as fh:
        fh.write(z.compress(b'{"traceEvents": ['))
        for _ in range(inflated // len(unit)):
            fh.write(z.compress(unit))
        fh.write(z.compress(b"]}") + z.flush())
    return path


@pytest.mark.parametrize("unit", [b" " * 1024, b'{"ph": "X", "cat": "kernel", "name": "k", "ts": 1, "dur": 1},\n'],
                         ids=["white-space", "events"])
def test_a_gzip_bomb_of_valid_json_ends_in_a_one_line_error(tmp_path, monkeypatch, unit):
    """Inflating past GZIP_RATIO times the file (and past the floor, made small here) stops the read."""
    monkeypatch.setattr(_base, "GZIP_FLOOR", 1 << 20)
    bomb = gzip_bomb(tmp_path / "bomb.json.gz", 8 << 20, unit)
    assert bomb.stat().st_size * _base.GZIP_RATIO < 8 << 20
    with pytest.raises(Bounded, match="a gzip bomb"):
        read_events(bomb)
    with pytest.raises(UserError) as caught:
        formats.load(bomb)
    message = str(caught.value)
    assert message.startswith(f"{bomb}: decompresses to more than ") and "a gzip bomb" in message and "\n" not in message
    with pytest.raises(UserError, match="a gzip bomb"):
        formats.read_trace(bomb)


def test_the_other_bounds(tmp_path, monkeypatch):
    doc = {"traceEvents": [{"ph": "X", "cat": "kernel", "name": "k", "ts": i, "dur": 1} for i in range(200)]}
    path = write_json(tmp_path, doc)
    monkeypatch.setattr(trace_events, "MAX_EVENTS", 100)
    with pytest.raises(Bounded, match="more than 100 timed events"):
        read_events(path)
    monkeypatch.undo()
    token = _base.DEADLINE.set(time.monotonic() - 1)
    try:
        with pytest.raises(Bounded, match="took too long"):
            read_events(path)
    finally:
        _base.DEADLINE.reset(token)
    assert not [t for t in threading.enumerate() if t.name == "tinylab-inflate"]  # every read's thread has ended


def test_progress_is_heard_and_the_last_trace_is_kept_while_unchanged(tmp_path):
    heard = []
    doc = json.loads(gzip.decompress(H100.read_bytes()))
    path = write_json(tmp_path, doc)
    with formats.reporting(lambda *said: heard.append(said)):
        first = formats.read_trace(path)
    size = path.stat().st_size
    assert heard and heard[-1] == ("reading t.json.gz", size, size)
    assert formats.read_trace(path) is first  # the same file: not read again
    doc["traceEvents"] = doc["traceEvents"][:100]
    write_json(tmp_path, doc)
    again = formats.read_trace(path)
    assert again is not first and columns(again) == expected(doc)
    with pytest.raises(UserError, match=r"kernel_trace.csv: not a readable JSON trace: it is rocprofv3 --kernel-trace"):
        formats.read_trace(FIX / "rocprofv3/rocm7-docs-data/kernel_trace.csv")


def test_columns_as_a_frame():
    ev = read_events(H100)
    frame = ev.frame()
    assert len(frame) == len(ev) and list(frame.columns) == ["cat", "name", "ts", "dur", "pid", "tid", "device",
                                                             "correlation"]
    kernels = frame[frame["cat"] == "kernel"]
    assert kernels["name"].astype(str).tolist() == ev.name_of(ev.name[ev.of_cats(("kernel",))])
    assert np.array_equal(frame["dur"].to_numpy(), ev.dur)


def test_a_small_trace_json_takes_but_msgspec_refuses_is_read_whole(tmp_path):
    """NaN is no JSON, but Python's json writes and reads it: a small trace with one is still read."""
    path = tmp_path / "nan.json"
    path.write_text('{"traceEvents": [{"ph": "X", "cat": "kernel", "name": "k", "ts": NaN, "dur": 2}]}')
    assert formats.load(path).table["total_ns"].tolist() == [2000.0]

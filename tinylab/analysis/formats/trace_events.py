"""The events of a Chrome/Kineto trace (the PyTorch profiler's trace.json[.gz]) as columns.

A real training trace holds a million events and more (277 MB of JSON for 1M events), and the
lab asks several questions of it: the kernel table, the step anatomy, the advice. json.load of
such a file takes 12 s and 1.6 GB on a 2-core machine, a dict per event with every field. Here
the file is inflated in a thread of its own (zlib lets go of the GIL, so on two cores it overlaps
the decoding) while msgspec decodes the stream a block at a time into typed structs of only the
fields tinylab reads (it skips the others without building them); each block becomes numpy
columns at once, so no Python object per event outlives its block.

A block ends between two events: the last `}, {` of the block where everything before it decodes
as complete events (a `}, {` inside a string or a nested value makes the decode fail, and the
one before it is tried). What comes before the traceEvents array and after it is decoded with
the last block, so a document msgspec cannot split (no traceEvents array: rocprof-sys timemory)
is left to the caller (NotATrace).

Bounds, for a trace a stranger wrote: at most TRACE_LIMIT bytes of JSON, of a gzip file at most
_base.gzip_limit() (100 times its size, 32 MiB at least: a gzip bomb of valid JSON, about 1000
times, stops there), at most MAX_EVENTS kept events, and the load's deadline (_base.DEADLINE).
Each ends in a Bounded error; the memory a read holds is its columns (about 42 bytes an event),
a block's structs and the inflated JSON queued for it (at most two calls of INFLATE bytes). A
string longer than MAX_STRING is kept cut to it.
"""

from __future__ import annotations

import contextlib
import gc
import math
import queue
import re
import sys
import threading
import time
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator, Union

import msgspec
import numpy as np

from tinylab.analysis.formats._base import (
    DEADLINE,
    GZIP_MAGIC,
    Bounded,
    FormatError,
    gzip_limit,
    json_number,
    report,
)
from tinylab.core.safeio import open_regular

#: Bytes of JSON decoded at a time: large enough that a block's fixed costs vanish (the 1M-event
#: H100 trace takes the same CPU time as with 8 MB blocks), small enough that its structs cost
#: little even when a stranger's events are 3 bytes each (`{},`: 700,000 structs, ~100 MB, where
#: 8 MB blocks took 530 MB).
BLOCK = 2 << 20
#: Bytes of a gzip file read at a time (a trace's JSON compresses 10-20 times), and the most it
#: inflates to in one call: the inflating thread needs the GIL between calls, and it gets it only
#: between two of the decoder's blocks, so one call fills several.
COMPRESSED = 1 << 20
INFLATE = 4 * BLOCK
#: The most JSON a trace may hold (1M events of a real H100 trace are 277 MB).
TRACE_LIMIT = 4 << 30
#: The most events kept (complete events with a duration); about 42 bytes each in columns.
MAX_EVENTS = 5_000_000
#: The longest string kept (a name, a category, an id), in characters: C++ template kernel names
#: run to a few thousand, and views show a line of one at most; a stranger's 60 MB name made
#: `timeline` take 64 s, every pattern that sorts names into categories scanning all of it.
MAX_STRING = 8 << 10
#: How far into the document the traceEvents array must start (deviceProperties come before it).
HEAD_LIMIT = 16 << 20
#: Split points tried, last first, before a block is grown instead; they are looked for in the
#: block's last WINDOW bytes first (an event is a few hundred bytes: a few hundred points).
TRIES = 8
WINDOW = 64 << 10

_ARRAY = re.compile(rb'"traceEvents"\s*:\s*\[')
_BETWEEN = re.compile(rb"\}\s*,\s*\{")
_NAN = math.nan


class NotATrace(FormatError):
    """JSON that is no Chrome trace: no traceEvents array (the caller may read it another way)."""


# ----------------------------------------------------------------------------- what is decoded
class _Args(msgspec.Struct, gc=False):
    correlation: int | None = _NAN  # missing: NaN, not None, which sends numpy down a slow path
    device: int | None = None


class _Event(msgspec.Struct, tag_field="ph", tag="X", gc=False):
    """The fields tinylab reads of a complete event ("ph": "X"); a value of another type sends its
    block to the tolerant path (_loose), which reads what a dict per event would."""

    cat: str | None = None
    name: str | None = None
    ts: float = _NAN
    dur: float = _NAN
    pid: int | str | None = None
    tid: int | str | None = None
    args: _Args = msgspec.field(default_factory=_Args)


#: The Chrome trace format's other phases: each decodes to an empty struct, its fields skipped
#: unread (a third faster than reading them); a phase not here sends its block to _loose.
_PHASES = "BEiICbnesStTfpFPONDMVvRc()"
_OTHERS = tuple(msgspec.defstruct(f"_Phase{i}", [], tag_field="ph", tag=ph, gc=False) for i, ph in enumerate(_PHASES))
_ANY_EVENT = Union[(_Event, *_OTHERS)]  # noqa: UP007 - a Union built at run time


class _Doc(msgspec.Struct):
    traceEvents: list[_ANY_EVENT] = []  # type: ignore[valid-type]
    baseTimeNanoseconds: float | None = None


_EVENTS = msgspec.json.Decoder(list[_ANY_EVENT])  # type: ignore[valid-type]
_DOC = msgspec.json.Decoder(_Doc)
_ANY = msgspec.json.Decoder()


# ----------------------------------------------------------------------------- the columns
@dataclass(frozen=True)
class TraceEvents:
    """A trace's complete events (`"ph": "X"` with a duration >= 0), a row each in file order.

    Strings and ids are codes into tables of their distinct values (like a pandas categorical):
    `names[name[i]]` is event i's name. Missing or ill-typed values are None in the tables and
    NaN in the float columns. Times are the trace's µs.
    """

    source: str
    cat: np.ndarray  # int32 codes into cats
    cats: tuple[str | None, ...]
    name: np.ndarray  # int32 codes into names
    names: tuple[str | None, ...]
    ts: np.ndarray  # float64 µs; NaN: none
    dur: np.ndarray  # float64 µs, >= 0
    pid: np.ndarray  # int32 codes into ids
    tid: np.ndarray  # int32 codes into ids
    device: np.ndarray  # int32 codes into ids: args.device, else pid (Kineto's GPU events carry it)
    ids: tuple[Any, ...]  # pid, tid and device values: int, str or None
    correlation: np.ndarray  # float64: args.correlation (launch <-> GPU event); NaN: none
    base_ns: float | None  # baseTimeNanoseconds: ts + base_ns / 1000 = wall-clock µs
    only: frozenset[str] | None = None  # the categories read (one question's events); None: every one

    def __len__(self) -> int:
        return len(self.ts)

    def named(self) -> np.ndarray:
        """Mask of the rows whose name is a string."""
        present = np.array([n is not None for n in self.names], dtype=bool)
        return present[self.name] if len(self.names) else np.zeros(len(self), dtype=bool)

    def of_cats(self, cats: Any) -> np.ndarray:
        """Mask of the rows whose category is one of `cats`."""
        return np.isin(self.cat, [i for i, c in enumerate(self.cats) if c in cats])

    def name_of(self, codes: np.ndarray) -> list[str | None]:
        """The names of rows (codes from `name`), as Python strings."""
        table = self.names
        return [table[c] for c in codes.tolist()]

    def frame(self) -> Any:
        """The columns as a pandas DataFrame (strings and ids as categoricals)."""
        import pandas as pd

        def categorical(codes: np.ndarray, values: tuple[Any, ...]) -> pd.Categorical:
            table = pd.Index([("\x00none" if v is None else v) for v in values], dtype=object)
            present = np.array([v is not None for v in values], dtype=bool)
            return pd.Categorical.from_codes(np.where(present[codes], codes, -1) if len(codes) else codes,
                                             categories=table)

        return pd.DataFrame({
            "cat": categorical(self.cat, self.cats), "name": categorical(self.name, self.names),
            "ts": self.ts, "dur": self.dur, "pid": categorical(self.pid, self.ids),
            "tid": categorical(self.tid, self.ids), "device": categorical(self.device, self.ids),
            "correlation": self.correlation,
        })


class _Codes(dict):
    """Value -> code, a new code for each value not seen yet."""

    def __missing__(self, key: Any) -> int:
        code = self[key] = len(self)
        return code

    def table(self) -> tuple[Any, ...]:
        """The values by code, a string longer than MAX_STRING cut to it."""
        return tuple(v[:MAX_STRING] if isinstance(v, str) else v for v in self)


class _Builder:
    """Columns grown a block at a time."""

    def __init__(self, source: str, only: frozenset[str] | None = None) -> None:
        self.source = source
        self.only = only
        self.cats, self.names, self.ids = _Codes(), _Codes(), _Codes()
        self.parts: dict[str, list[np.ndarray]] = {k: [] for k in
                                                   ("cat", "name", "ts", "dur", "pid", "tid", "device", "correlation")}
        self.count = 0
        self.base_ns: float | None = None

    def add(self, events: list[Any], typed: bool) -> None:
        """A block's events: _Event structs (`typed`), or anything JSON decodes to."""
        only = self.only
        if typed:
            kept = ([e for e in events if type(e) is _Event] if only is None else
                    [e for e in events if type(e) is _Event and e.cat in only])
            args = [e.args for e in kept]  # a list per field: less than half the time of a tuple per event
            fields = ([e.cat for e in kept], [e.name for e in kept], [e.ts for e in kept], [e.dur for e in kept],
                      [e.pid for e in kept], [e.tid for e in kept], [a.correlation for a in args],
                      [a.device for a in args])
        else:
            rows = [r for r in _loose(events) if only is None or r[0] in only]
            fields = tuple(zip(*rows)) if rows else ()
        if not fields or not fields[0]:
            return
        cat, name, ts, dur, pid, tid, corr, device = fields
        dur_a = _floats(dur)
        keep = dur_a >= 0
        keep &= np.isfinite(dur_a)
        n = int(keep.sum())
        if not n:
            return
        if self.count + n > MAX_EVENTS:
            raise Bounded(f"more than {MAX_EVENTS:,} timed events: too many to read (profile fewer steps)")
        self.count += n
        ts_a = _floats(ts)
        ts_a[~np.isfinite(ts_a)] = _NAN
        pid_c = self._codes(self.ids, pid)
        device_c = self._codes(self.ids, device)
        device_c = np.where(device_c == self.ids[None], pid_c, device_c)
        for key, column in (("cat", self._codes(self.cats, cat)), ("name", self._codes(self.names, name)),
                            ("ts", ts_a), ("dur", dur_a), ("pid", pid_c), ("tid", self._codes(self.ids, tid)),
                            ("device", device_c), ("correlation", _floats(corr))):
            self.parts[key].append(column[keep])

    @staticmethod
    def _codes(codes: _Codes, values: list[Any] | tuple[Any, ...]) -> np.ndarray:
        return np.fromiter(map(codes.__getitem__, values), dtype=np.int32, count=len(values))

    def done(self) -> TraceEvents:
        cols = {k: (np.concatenate(v) if v else np.empty(0, dtype=np.float64 if k in ("ts", "dur", "correlation")
                                                          else np.int32)) for k, v in self.parts.items()}
        for column in cols.values():  # one read serves several questions (formats.read_trace keeps it)
            column.flags.writeable = False
        self.ids[None]  # noqa: B018 - every table has None, so a code for "none" exists
        return TraceEvents(self.source, cols["cat"], self.cats.table(), cols["name"], self.names.table(),
                           cols["ts"], cols["dur"], cols["pid"], cols["tid"], cols["device"], self.ids.table(),
                           cols["correlation"], self.base_ns, self.only)


def _floats(values: list[Any] | tuple[Any, ...]) -> np.ndarray:
    """Numbers, or ints and None, as floats (None, and an int past a float's range: NaN)."""
    try:
        return np.array(values, dtype=np.float64)
    except (OverflowError, TypeError, ValueError):
        return np.array([json_number(v) for v in values], dtype=np.float64)


def _hashable(value: Any) -> Any:
    return value if value is None or isinstance(value, (str, int, float)) else repr(value)


def _loose(events: list[Any]) -> list[tuple[Any, ...]]:
    """The fields of events of any shape, as a dict per event would give them: a string where a
    string is expected (else None), a finite number (else NaN), an int correlation (else None),
    an id that is no string or number by its repr()."""
    rows = []
    for e in events:
        if type(e) is not dict or e.get("ph") != "X":
            continue
        args = e.get("args")
        args = args if type(args) is dict else {}
        cat, name = e.get("cat"), e.get("name")
        pid = _hashable(e.get("pid"))
        corr = args.get("correlation")
        rows.append((cat if type(cat) is str else None, name if type(name) is str else None,
                     json_number(e.get("ts")), json_number(e.get("dur")), pid, _hashable(e.get("tid")),
                     corr if type(corr) is int else None,
                     _hashable(args.get("device", pid))))
    return rows


# ----------------------------------------------------------------------------- the byte stream
class _Inflow:
    """The file's JSON in blocks, read (and inflated) in a thread of its own; counts what comes
    out against the bounds and says how far the read has come."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._fh = open_regular(path, follow_links=True)  # OSError and UnsafeFile go to the caller
        self.size = max(1, self._fh.seek(0, 2))
        self._fh.seek(0)
        self.gzipped = self._fh.read(2) == GZIP_MAGIC
        self._fh.seek(0)
        self.limit = min(TRACE_LIMIT, gzip_limit(self.size)) if self.gzipped else TRACE_LIMIT
        self.position = 0  # bytes of the file read so far
        self._queue: queue.Queue[Any] = queue.Queue(maxsize=2 * INFLATE // BLOCK)  # two calls' blocks
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._pump, name="tinylab-inflate", daemon=True)
        self._thread.start()

    def _pump(self) -> None:
        try:
            for block in self._inflated() if self.gzipped else iter(lambda: self._fh.read(BLOCK), b""):
                if self._stop.is_set():
                    return
                self.position = self._fh.tell()
                self._put(block)
            self._put(b"")
        except BaseException as exc:  # handed to the reading thread, which raises it
            self._put(exc)

    def _inflated(self) -> Iterator[bytes]:
        """The gzip file's members inflated, BLOCK bytes at a time, by zlib itself (which checks
        each member's CRC and length): one call a block, which lets go of the GIL. GzipFile takes
        a dozen small steps a block, each of which waits for the GIL while the decoding thread
        holds it, and the decoder then waited on the inflating (a third of the read's time)."""
        inflater = None  # None between members
        data = b""
        while True:
            if not data:
                data = self._fh.read(COMPRESSED)
                if not data:
                    if inflater is not None:
                        raise EOFError("Compressed file ended before the end-of-stream marker was reached")
                    return
            if inflater is None:
                data = data.lstrip(b"\x00")  # zero padding after a member, as gzip allows
                if not data:
                    continue
                if not GZIP_MAGIC.startswith(data[:2]):
                    raise zlib.error("bytes after the end of the gzip stream that are no gzip (damaged, or appended)")
                inflater = zlib.decompressobj(16 + zlib.MAX_WBITS)  # a gzip header and trailer only
            inflated = memoryview(inflater.decompress(data, INFLATE))
            data = inflater.unconsumed_tail
            if inflater.eof:
                data, inflater = inflater.unused_data, None
            for at in range(0, len(inflated), BLOCK):
                yield inflated[at: at + BLOCK]

    def _put(self, item: Any) -> None:
        while not self._stop.is_set():
            try:
                self._queue.put(item, timeout=0.1)
                return
            except queue.Full:
                continue

    def __iter__(self) -> Iterator[bytes]:
        deadline = DEADLINE.get()
        what = f"reading {self.path.name}"
        read = 0
        while True:
            item = self._queue.get()
            if isinstance(item, BaseException):
                raise item
            if not item:
                return
            read += len(item)
            if read > self.limit:
                raise Bounded(self._too_much())
            if deadline is not None and time.monotonic() > deadline:
                raise Bounded(f"reading it took too long: stopped at the time limit after {read >> 20:,} MiB of JSON")
            report(what, self.position, self.size)
            yield item

    def _too_much(self) -> str:
        if self.limit < TRACE_LIMIT:
            return (f"decompresses to more than {self.limit >> 20:,} MiB from {self.size:,} bytes: a gzip bomb? "
                    "not read")
        return f"more than {self.limit >> 20:,} MiB of JSON: too large to read (profile fewer steps)"

    def close(self) -> None:
        self._stop.set()
        self._thread.join(timeout=5)
        self._fh.close()


# ----------------------------------------------------------------------------- decoding
def read_events(path: Path, only: frozenset[str] | None = None) -> TraceEvents:
    """The complete events of a Chrome trace file (gzipped or not) as columns; `only`: those of
    these categories (a question that needs no other: the kernel table, a tenth of the events,
    costs the decoding and little more).

    FormatError (NotATrace for JSON without a traceEvents array, Bounded for a bound reached),
    OSError, EOFError or zlib.error (a damaged gzip stream); the caller names the file."""
    builder = _Builder(str(path), only)
    inflow = _Inflow(path)
    try:
        with _reading():
            blocks = iter(inflow)
            head, buf = _find_array(blocks)
            searched = 0
            for block in blocks:
                buf += block
                if len(buf) >= BLOCK:
                    searched = _decode_some(buf, builder, searched)
            _decode_last(head, buf, builder)
    except msgspec.DecodeError as exc:
        raise FormatError(f"not valid JSON (truncated?): {exc}") from None
    finally:
        inflow.close()
    return builder.done()


#: Reads under way (threads of the lab may read at once) and what they changed, to restore when
#: the last one ends.
_READING: dict[str, Any] = {"count": 0}
_READING_LOCK = threading.Lock()
#: The GIL's switch interval while a trace is read (CPython's default: 5 ms).
SWITCH = 0.001


@contextlib.contextmanager
def _reading() -> Iterator[None]:
    """While a trace is read: no cyclic garbage collection (the read makes only acyclic objects,
    which reference counting frees, and a collection every 700 of them costs a third of the time),
    and a 1 ms switch interval, so that the inflating thread gets the GIL back within 1 ms of each
    block it inflated instead of 5: with 5 the decoder spent an eighth of the read waiting for it.
    Both are the process's settings: the first read in changes them, the last one out restores."""
    with _READING_LOCK:
        if not _READING["count"]:
            _READING.update(gc=gc.isenabled(), switch=sys.getswitchinterval())
            gc.disable()
            sys.setswitchinterval(SWITCH)
        _READING["count"] += 1
    try:
        yield
    finally:
        with _READING_LOCK:
            _READING["count"] -= 1
            if not _READING["count"]:
                sys.setswitchinterval(_READING["switch"])
                if _READING["gc"]:
                    gc.enable()


def _find_array(blocks: Iterator[bytes]) -> tuple[bytes, bytearray]:
    """(the document before the `[` that opens its events, the rest from that `[` on)."""
    buf = bytearray()
    for block in blocks:
        buf += block
        found = _ARRAY.search(buf)
        at = buf.index(b"[") if _bare_list(buf) else found.end() - 1 if found else None
        if at is not None:
            head = bytes(buf[:at])
            del buf[:at]
            return head, buf
        if len(buf) > HEAD_LIMIT:
            break
    raise NotATrace("JSON without traceEvents (not a PyTorch/Chrome trace)")


def _bare_list(head: bytes | bytearray) -> bool:
    return head[:4096].lstrip(b"\xef\xbb\xbf \t\r\n").startswith(b"[")


def _decode(chunk: Any, typed: Any) -> tuple[Any, bool]:
    """(decoded, whether as typed structs): any other shape of the fields is read the slow way."""
    try:
        return typed.decode(chunk), True
    except msgspec.ValidationError:
        return _ANY.decode(chunk), False


def _decode_some(buf: bytearray, builder: _Builder, searched: int) -> int:
    """Decode the events of buf (which starts with "[") up to its last split point that decodes,
    and drop them from buf, which then starts with "[" again (in place: a block is never copied).
    Split points before `searched` failed already (the bytes before a split point decide, and
    they do not change): returns where the next search starts."""
    candidates = list(_BETWEEN.finditer(buf, max(searched, len(buf) - WINDOW)))[-TRIES:]
    if not candidates:
        candidates = list(_BETWEEN.finditer(buf, searched))[-TRIES:]
    for found in reversed(candidates):
        end = found.start() + 1  # after the "}": a "," or white space, made the "]" for a moment
        kept, buf[end] = buf[end], 0x5D
        try:
            with memoryview(buf) as whole, whole[: end + 1] as chunk:
                events, typed = _decode(chunk, _EVENTS)
        except msgspec.DecodeError:  # the `}, {` was inside a string or a nested value
            continue
        finally:
            buf[end] = kept
        builder.add(events, typed)
        del buf[: found.end() - 2]  # up to the "," or white space before the next "{"
        buf[0] = 0x5B
        return 0
    return max(0, len(buf) - 64)  # no split point decodes: keep reading (the block grows)


def _decode_last(head: bytes, buf: bytearray, builder: _Builder) -> None:
    """The last events, with the rest of the document (its other keys: baseTimeNanoseconds)."""
    if _bare_list(buf) and not head.strip(b"\xef\xbb\xbf \t\r\n"):
        events, typed = _decode(head + buf, _EVENTS)
        builder.add(events, typed)
        return
    doc, typed = _decode(head + buf, _DOC)
    if typed:
        builder.add(doc.traceEvents, True)
        builder.base_ns = doc.baseTimeNanoseconds
        return
    if not isinstance(doc, dict) or not isinstance(doc.get("traceEvents"), list):
        raise NotATrace("JSON without traceEvents (not a PyTorch/Chrome trace)")
    builder.add(doc["traceEvents"], False)
    builder.base_ns = _base(doc)


def _base(doc: dict[str, Any]) -> float | None:
    base = json_number(doc.get("baseTimeNanoseconds"))
    return None if math.isnan(base) else base


def from_objects(source: str, doc: Any) -> TraceEvents:
    """Columns from a document already decoded (json.loads): a dict with traceEvents, or a list."""
    events = doc.get("traceEvents") if isinstance(doc, dict) else doc
    if not isinstance(events, list):
        raise NotATrace("JSON without traceEvents (not a PyTorch/Chrome trace)")
    builder = _Builder(source)
    builder.add(events, False)
    builder.base_ns = _base(doc) if isinstance(doc, dict) else None
    return builder.done()

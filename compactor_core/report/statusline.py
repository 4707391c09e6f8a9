"""A Claude Code session in one short line, for its statusline (``ctxpack statusline``).

What the line says, from the session file Claude Code names (its transcript):

- the context: the last request's prompt and its reply, as the provider counted them, against
  the model's window;
- the cache: warm while the last request is younger than the time to live it wrote (1 hour when
  it wrote 1-hour entries, else 5 minutes), with the minutes left; cold after;
- the cost so far: every recorded request priced by the bundled table (``prices.json``);
- what ``serve`` saved, when it is in front and says so (the caller asks it).

It must take a few milliseconds on a session of hundreds of MB, run at every refresh: what a run
read is kept in a small file by the transcript's size and time, so the next run reads nothing when
the file is unchanged and only the lines added since when it grew. No run reads more than
``READ_AT_MOST`` bytes of its lines: a session met when it is already large is counted from the
start a slice per refresh (the cost shown with a ``+`` until it is all counted), while its context
and cache are read from its tail at once.
"""

from __future__ import annotations

import hashlib
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO

import orjson

from ..disk.private_dir import PrivateDir
from ..errors import CtxpackError

if TYPE_CHECKING:
    from .prices import PriceTable

WINDOW = 200_000  # Claude's context window, unless the model says 1M
LONG_WINDOW = 1_000_000
TTL_5M, TTL_1H = 300.0, 3600.0
CACHE_VERSION = 2
READ_AT_MOST = 1 << 20  # bytes counted per run, and of the tail read while the count is behind
MAX_CACHE = 4 << 20  # bytes of a cache file read at most
SEEN = 64  # message ids kept: the records of one reply come one after the other


@dataclass
class Tally:
    """What the transcript's lines up to ``offset`` say: kept between runs."""

    size: int = 0
    mtime: float = 0.0
    offset: int = 0  # bytes read: whole lines only
    cost: float = 0.0  # dollars
    requests: int = 0
    context: int = 0  # tokens of the last request's prompt and reply
    last_time: float | None = None  # when the last request was made
    ttl: float = TTL_5M
    model: str | None = None
    seen: list[str] = field(default_factory=list)  # the newest message ids already counted
    behind: bool = False  # the lines from offset to the end are more than one run reads


@dataclass(frozen=True)
class Status:
    context: int
    window: int
    cost: float
    requests: int
    warm_for: float | None  # seconds the cache stays warm; None: cold (or no request yet)
    counted_all: bool = True  # False: cost and requests are of the session's first part only


def status(
    transcript: Path,
    now: float,
    window: int | None = None,
    cache_folder: Path | None = None,
    prices: PriceTable | None = None,
    read_at_most: int = READ_AT_MOST,
) -> Status:
    """The session's status, from ``transcript`` and what the cache kept of it."""
    stat = transcript.stat()
    tally = _cached(cache_folder, transcript) or Tally()
    if (tally.size, tally.mtime) != (stat.st_size, stat.st_mtime) or tally.behind:
        if stat.st_size < tally.offset:  # rewritten (a compaction, a restore): read it anew
            tally = Tally()
        _catch_up(tally, transcript, stat.st_size, prices, read_at_most)
        tally.size, tally.mtime = stat.st_size, stat.st_mtime
        _keep(cache_folder, transcript, tally)
    warm = None
    if tally.last_time is not None and now - tally.last_time < tally.ttl:
        warm = tally.ttl - (now - tally.last_time)
    window = window or _window(tally.model)
    return Status(tally.context, window, tally.cost, tally.requests, warm, not tally.behind)


def render(found: Status, saved: float | None = None) -> str:
    """``ctxpack 84k/200k (42%) · cache warm 3m · $1.27 · serve saved 31%``"""
    share = f" ({found.context * 100 // found.window}%)" if found.window else ""
    parts = [f"ctxpack {_k(found.context)}/{_k(found.window)}{share}"]
    if found.requests:
        minutes = -(-int(found.warm_for) // 60) if found.warm_for is not None else 0
        parts.append(f"cache warm {minutes}m" if found.warm_for is not None else "cache cold")
        parts.append(f"${found.cost:.2f}" + ("" if found.counted_all else "+"))
    if saved is not None:
        parts.append(f"serve saved {saved:.0%}")
    return " · ".join(parts)


def _k(tokens: int) -> str:
    if tokens >= 1_000_000:
        return f"{tokens / 1_000_000:.1f}M".replace(".0M", "M")
    return f"{tokens / 1000:.1f}k" if tokens < 10_000 else f"{tokens // 1000}k"


def _window(model: str | None) -> int:
    return LONG_WINDOW if model and "[1m]" in model else WINDOW


def _catch_up(
    tally: Tally, transcript: Path, size: int, prices: PriceTable | None, read_at_most: int
) -> None:
    """Count on from ``tally.offset``, at most ``read_at_most`` bytes; when more is left, the
    context and the cache come from the file's tail, which the count reaches in later runs (the
    usage reader and the prices are loaded only here: an unchanged file needs neither)."""
    from .prices import bundled

    prices = prices or bundled()
    with open(transcript, "rb") as handle:
        tally.behind = size - tally.offset > read_at_most
        if not tally.behind:
            _count_lines(tally, _whole_lines(handle, tally.offset, size), prices, latest=True)
            return
        _count_lines(tally, _whole_lines(handle, tally.offset, read_at_most), prices, latest=False)
        start = max(tally.offset, size - read_at_most)
        tail = _whole_lines(handle, start, size - start)
        if start > tally.offset:  # the cut fell inside a line: its rest is not a record
            tail = tail[tail.find(b"\n") + 1 :]
        for call in _calls(tail, set()):  # the last of the main thread's wins
            _see_latest(tally, call)


def _whole_lines(handle: BinaryIO, start: int, length: int) -> bytes:
    """The whole lines of ``length`` bytes from ``start``: a line still being written (or cut at
    ``length``) waits for the next run."""
    handle.seek(start)
    data = handle.read(length)
    return data[: data.rfind(b"\n") + 1]


def _count_lines(tally: Tally, lines: bytes, prices: PriceTable, latest: bool) -> None:
    """Price each request of ``lines`` (read from ``tally.offset``) once; with ``latest``, the
    last of them is the session's context and cache too."""
    seen = set(tally.seen)
    ids = list(tally.seen)  # in the order they came: a message's records are written together
    for call in _calls(lines, seen, ids):
        _count(tally, call, prices)
        if latest:
            _see_latest(tally, call)
    tally.offset += len(lines)
    tally.seen = [identity for identity in ids if identity in seen][-SEEN:]


def _calls(lines: bytes, seen: set[str], ids: list[str] | None = None) -> list[Any]:
    """The recorded requests of ``lines`` whose message is not in ``seen`` (which grows, and
    ``ids`` with it in order)."""
    from ..agents.claude_code_usage import recorded_usage
    from ..session_files.records import record_of

    records = []
    for line in lines.splitlines():
        record = record_of(line)
        message = record.get("message") if record else None
        identity = message.get("id") if isinstance(message, dict) else None
        if record is not None and identity not in seen:
            records.append((len(records), record))
        if isinstance(identity, str) and identity not in seen:
            seen.add(identity)
            if ids is not None:
                ids.append(identity)
    return recorded_usage(records)


def _tokens(call: Any) -> dict[str, int]:
    return {
        "input": call.input,
        "cache_read": call.cache_read,
        "cache_write_5m": call.cache_write_5m,
        "cache_write_1h": call.cache_write_1h,
        "output": call.output,
    }


def _count(tally: Tally, call: Any, prices: PriceTable) -> None:
    price = prices.of(call.model)
    tally.cost += price.cost(_tokens(call)) if price else 0.0
    tally.requests += 1


def _see_latest(tally: Tally, call: Any) -> None:
    """``call`` is the newest request: the context, the cache's time to live, the model."""
    if not call.side:  # a subagent's request is not the session's context
        tally.context = sum(_tokens(call).values())
        tally.last_time = call.time if call.time is not None else tally.last_time
        tally.ttl = TTL_1H if call.cache_write_1h else TTL_5M
        tally.model = call.model or tally.model


# --- what a run keeps for the next ---------------------------------------------------------------


def _name(transcript: Path) -> str:
    key = hashlib.sha256(str(transcript.resolve()).encode("utf-8", "surrogatepass")).hexdigest()
    return f"status-{key[:32]}.json"


def _cached(folder: Path | None, transcript: Path) -> Tally | None:
    if folder is None:
        return None
    try:
        with PrivateDir.opened(folder, create=False) as opened:
            kept = orjson.loads(opened.read_own(_name(transcript), MAX_CACHE))
        if kept.pop("version", None) != CACHE_VERSION:
            return None
        return Tally(**kept)
    except (OSError, ValueError, TypeError, CtxpackError):
        return None  # none, or not ours: count again


def _keep(folder: Path | None, transcript: Path, tally: Tally) -> None:
    if folder is None:
        return
    try:
        with PrivateDir.opened(folder, create=True) as opened:
            kept = orjson.dumps({"version": CACHE_VERSION, **asdict(tally)})
            opened.put(_name(transcript), kept, durable=False)  # lost: counted again
    except (OSError, CtxpackError):
        return  # the next run counts again


def saved_share(stats: dict[str, Any]) -> float | None:
    """What serve saved of what its requests would have been billed untouched, from its
    ``/ctxpack/stats`` (the measured figures when it has some, else its estimate)."""
    measured = stats.get("measured")
    if isinstance(measured, dict) and measured.get("untouched"):
        return 1 - measured.get("billed", 0) / measured["untouched"]
    ratio = stats.get("estimated_billed_ratio")
    return None if not isinstance(ratio, int | float) else 1 - ratio

"""Reading and writing conversations: a JSON array, a request envelope, or JSONL.

The output keeps the input's shape. Messages stay plain dicts so unknown roles, block types and keys
pass through untouched, in their order. orjson does the work; the standard library takes over for
valid JSON that orjson refuses (lone surrogate escapes, nesting beyond 1024 levels) or would change
(it reads an integer beyond 64 bits as a float), so such input still comes back intact. Two kinds of
valid JSON cannot come back intact and are refused with a clear error instead: a number too large
for a double (``1e400``), and nesting deeper than MAX_DEPTH levels (every part of ctxpack walks
messages recursively).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, replace
from typing import Any, Literal

import orjson

from ..errors import InputError

Message = dict[str, Any]
Shape = Literal["array", "envelope", "jsonl"]

UTF8_BOM = b"\xef\xbb\xbf"
MAX_DEPTH = 200  # levels of arrays and objects inside one message (or envelope key)

# orjson reads an integer beyond 64 bits as a float, so a float this large may have been one.
_HUGE = 2.0**63


@dataclass(frozen=True)
class Conversation:
    """A parsed conversation and what is needed to write it back in the same shape."""

    messages: list[Message]
    shape: Shape = "array"
    envelope: dict[str, Any] | None = None  # the whole request object, for shape "envelope"
    bom: bool = False

    @property
    def system(self) -> Any:
        """The envelope's top-level ``system`` prompt, if any."""
        return self.envelope.get("system") if self.envelope else None

    def with_messages(self, messages: list[Message]) -> Conversation:
        return replace(self, messages=messages)


def json_type(value: Any) -> str:
    """The JSON name of a parsed value's type, for error messages."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    return "an object"


# --- parsing -------------------------------------------------------------------------------------


def parse(data: bytes, source: str = "<stdin>") -> Conversation:
    """Parse and validate a conversation; raise InputError naming ``source`` and the place."""
    bom = data.startswith(UTF8_BOM)
    if bom:
        data = data[len(UTF8_BOM) :]
    if not data or data.isspace():
        raise InputError(f"{source}: empty input, expected a JSON array of messages")
    try:
        document = orjson.loads(data)
    except orjson.JSONDecodeError:  # invalid, or valid JSON that orjson refuses
        return _parse_exactly(data, source, bom)
    # One walk validates the messages and looks for the floats orjson may have made of integers
    # beyond 64 bits; if it finds one, even after an error, the standard library reads it again.
    try:
        return _conversation(document, data, source, bom, exact=False)
    except _InexactNumber:
        pass
    except InputError:
        if not _holds_huge_float(document):
            raise
    return _parse_exactly(data, source, bom)


def _parse_exactly(data: bytes, source: str, bom: bool) -> Conversation:
    """``parse`` by the standard library, which reads every valid JSON exactly (slower)."""
    try:
        document = _loads_exactly(data, source)
    except _TrailingData:
        if data.lstrip()[:1] == b"{":
            return parse_jsonl(data, source, bom)
        raise
    return _conversation(document, data, source, bom)


def _conversation(
    document: Any, data: bytes, source: str, bom: bool, exact: bool = True
) -> Conversation:
    """The validated conversation ``document`` holds; unless ``exact``, _InexactNumber for a
    float that may have been an integer beyond 64 bits."""
    if isinstance(document, list):
        validate_messages(document, source, _array_path, exact)
        return Conversation(document, "array", None, bom)
    if isinstance(document, dict):
        if "messages" in document:
            messages = document["messages"]
            if not isinstance(messages, list):
                raise InputError(
                    f'{source}: "messages" must be an array, got {json_type(messages)}'
                )
            validate_messages(messages, source, _array_path, exact)
            for key, value in document.items():
                if key != "messages" and _too_deep(value, exact):
                    raise InputError(f"{source}: {key}: {_TOO_DEEP}")
            return Conversation(messages, "envelope", document, bom)
        if "role" in document:  # JSONL holding a single message
            validate_messages([document], source, _jsonl_path(data), exact)
            return Conversation([document], "jsonl", None, bom)
    raise InputError(
        f'{source}: expected a JSON array of messages, an object with a "messages" array, '
        f"or JSONL; got {json_type(document)}"
    )


def parse_jsonl(data: bytes, source: str, bom: bool = False) -> Conversation:
    """Parse JSONL, one message object per line; blank lines are skipped."""
    messages: list[Message] = []
    for number, line in enumerate(data.split(b"\n"), start=1):
        if not line.strip():
            continue
        message, _ = _loads(line, source, first_line=number)
        if not isinstance(message, dict):
            raise InputError(
                f"{source}: line {number}: a message must be an object, got {json_type(message)}"
            )
        messages.append(message)
    validate_messages(messages, source, _jsonl_path(data))
    return Conversation(messages, "jsonl", None, bom)


def load_value(data: bytes, source: str, line: int = 1) -> Any:
    """One JSON document, read exactly as ``parse`` reads one (big integers, lone surrogates);
    InputError naming ``source`` and ``line`` if it is not valid JSON."""
    return _loads(data, source, first_line=line)[0]


def load_body(data: bytes, source: str) -> tuple[Any, bool]:
    """``load_value`` of a request body, and whether the walk that looked for big integers found
    that nothing nests more than MAX_DEPTH levels inside a message of an array at its top: then
    ``validate_messages`` need not walk its history again (``walked``)."""
    return _loads(data, source, limit=MAX_DEPTH + 2)  # the body, then the array: two levels


class _TrailingData(InputError):
    """Valid JSON followed by more: perhaps JSONL."""


class _InexactNumber(Exception):
    """orjson read a float of magnitude 2**63 or more: perhaps an integer beyond 64 bits."""


def _loads(
    data: bytes, source: str, first_line: int = 1, limit: float = math.inf
) -> tuple[Any, bool]:
    """Parse one JSON document; ``first_line`` is where ``data`` starts in the file. With it,
    whether arrays and objects were found to nest no more than ``limit`` levels inside it."""
    try:
        document = orjson.loads(data)
    except orjson.JSONDecodeError:
        pass  # invalid, or valid JSON that orjson refuses: the standard library decides
    else:
        too_deep, huge = _scan(document, limit)
        if too_deep:  # the walk stopped at the limit: the floats below it are looked at too
            huge = _holds_huge_float(document)
        if not huge:
            return document, not too_deep
        # perhaps an integer beyond 64 bits: the standard library reads it exactly
    return _loads_exactly(data, source, first_line), False


def _loads_exactly(data: bytes, source: str, first_line: int = 1) -> Any:
    """Parse one JSON document with the standard library; InputError naming the place."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as error:
        line = first_line + data.count(b"\n", 0, error.start)
        column = error.start - (data.rfind(b"\n", 0, error.start) + 1) + 1
        raise InputError(f"{source}: line {line}, byte {column}: invalid UTF-8") from None
    try:
        return json.loads(text, parse_constant=_reject_constant, parse_float=_finite_float)
    except _OutOfRange as error:
        position = text.find(error.literal)
        line = first_line + text.count("\n", 0, position)
        column = position - (text.rfind("\n", 0, position) + 1) + 1
        raise InputError(
            f"{source}: line {line}, column {column}: the number {error.literal[:40]} is too large "
            "for a double and would not come back intact"
        ) from None
    except RecursionError:
        raise InputError(f"{source}: line {first_line}: {_TOO_DEEP}") from None
    except json.JSONDecodeError as error:
        line = first_line + error.lineno - 1
        kind = _TrailingData if error.msg == "Extra data" else InputError
        raise kind(
            f"{source}: line {line}, column {error.colno}: invalid JSON: {error.msg}"
        ) from None
    except ValueError as error:
        raise InputError(f"{source}: line {first_line}: invalid JSON: {error}") from None


def _holds_huge_float(value: Any) -> bool:
    """Whether a float of magnitude 2**63 or more (or infinity) is anywhere in ``value``.

    A walk over the parsed values costs a fraction of scanning the text for long digit runs.
    """
    return _scan(value)[1]


def _scan(value: Any, limit: float = math.inf) -> tuple[bool, bool]:
    """Whether arrays and objects nest more than ``limit`` levels inside ``value`` (itself the
    first), and whether it holds a float of magnitude 2**63 or more: both in one walk.

    Depth first, in the order the parser made the values, which keeps the walk in step with
    memory (level by level takes half as long again on a big conversation); a stack of iterators
    rather than recursion, so no nesting exhausts Python's. A level too deep ends the walk, so the
    second answer may then miss a float. Parsed JSON holds exact dicts and lists only, so
    ``type(...) is`` (faster than isinstance) tells them apart.
    """
    huge = False
    pending = [iter((value,))]  # the iterator of every container being walked, outermost first
    while pending:
        for child in pending[-1]:
            kind = type(child)
            if kind is str:  # the commonest by far: told first
                continue
            if kind is dict or kind is list:
                if len(pending) > limit:
                    return True, huge
                pending.append(iter(child.values() if kind is dict else child))
                break  # the child first; this container's iterator goes on after it
            if kind is float and not -_HUGE < child < _HUGE:
                huge = True
        else:
            pending.pop()
    return False, huge


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON value")


class _OutOfRange(ValueError):
    def __init__(self, literal: str) -> None:
        super().__init__(literal)
        self.literal = literal


def _finite_float(literal: str) -> float:
    value = float(literal)
    if math.isinf(value):
        raise _OutOfRange(literal)
    return value


# --- validation ----------------------------------------------------------------------------------


def _array_path(index: int) -> str:
    return f"messages[{index}]"


def _jsonl_path(data: bytes):
    """JSONL messages are named by their line number, which skips blank lines."""
    line_numbers = [n for n, line in enumerate(data.split(b"\n"), start=1) if line.strip()]
    return lambda index: f"line {line_numbers[index]}"


def validate_messages(
    messages: list[Any], source: str, path_of: Any, exact: bool = True, walked: bool = False
) -> None:
    """Check the shape every part of ctxpack relies on; leave everything else alone.

    ``messages`` come from a JSON parser (plain dicts and lists, see ``_scan``). Unless
    ``exact``, raise _InexactNumber for a float orjson may have made of a big integer. The depth
    and the floats are found in one walk of the whole list (a walk per message costs a third
    more on real sessions' many small messages); only a list nested too deep is walked again, a
    message at a time, to name the message. ``walked``: the parse's own walk found both fine
    (``load_body``), so the list is not walked.
    """
    for index, message in enumerate(messages):
        problem = None if _plainly_a_message(message) else _message_problem(message)
        if problem:
            place = path_of(index) + problem.partition(": ")[0]
            raise InputError(f"{source}: {path_of(index)}{problem}", source, place)
    if walked:
        return
    too_deep, huge = _scan(messages, MAX_DEPTH + 1)  # the list itself is one more level
    if huge and not exact:
        raise _InexactNumber
    if too_deep:
        index = next(index for index, message in enumerate(messages) if _too_deep(message))
        raise InputError(f"{source}: {path_of(index)}: {_TOO_DEEP}", source, path_of(index))


def _plainly_a_message(message: Any) -> bool:
    """The common case, told at once: an object with a string role, a string, null or list
    content, and no tool calls to look into."""
    if type(message) is not dict or type(message.get("role")) is not str:
        return False
    content = message.get("content")
    kind = type(content)
    return (content is None or kind is str or kind is list) and message.get("tool_calls") is None


_TOO_DEEP = f"nested more than {MAX_DEPTH} levels deep"


def _too_deep(value: Any, exact: bool = True) -> bool:
    """Whether arrays and objects nest more than MAX_DEPTH levels inside ``value``; unless
    ``exact``, _InexactNumber if it holds a float orjson may have made of a big integer."""
    too_deep, huge = _scan(value, MAX_DEPTH)
    if huge and not exact:
        raise _InexactNumber
    return too_deep


def _message_problem(message: Any) -> str | None:
    """Return ``"<.place>: <what is wrong>"`` for a malformed message, or None."""
    if not isinstance(message, dict):
        return f": a message must be an object, got {json_type(message)}"
    role = message.get("role")
    if not isinstance(role, str):
        where = (
            "is missing" if "role" not in message else f"must be a string, got {json_type(role)}"
        )
        return f': "role" {where}'
    content = message.get("content")
    if content is not None and not isinstance(content, str | list):
        return f".content: must be a string, null or an array, got {json_type(content)}"
    tool_calls = message.get("tool_calls")
    if tool_calls is not None:
        if not isinstance(tool_calls, list):
            return f".tool_calls: must be an array, got {json_type(tool_calls)}"
        for number, call in enumerate(tool_calls):
            if not isinstance(call, dict):
                return f".tool_calls[{number}]: must be an object, got {json_type(call)}"
            function = call.get("function")
            if function is not None and not isinstance(function, dict):
                return f".tool_calls[{number}].function: must be an object"
    return None


# --- writing -------------------------------------------------------------------------------------


def dump(conversation: Conversation, pretty: bool = False) -> bytes:
    """Serialize in the input's shape: compact JSON (or indented with ``pretty``), UTF-8."""
    if conversation.shape == "jsonl":
        body = b"".join(dumps(message) + b"\n" for message in conversation.messages)
    elif conversation.shape == "envelope":
        envelope = dict(conversation.envelope or {})
        envelope["messages"] = conversation.messages
        body = dumps(envelope, pretty) + b"\n"
    else:
        body = dumps(conversation.messages, pretty) + b"\n"
    return UTF8_BOM + body if conversation.bom else body


def dumps(value: Any, pretty: bool = False) -> bytes:
    """JSON bytes, non-ASCII unescaped; falls back to the standard library where orjson can't."""
    try:
        return orjson.dumps(value, option=orjson.OPT_INDENT_2 if pretty else 0)
    except (orjson.JSONEncodeError, TypeError):
        indent = 2 if pretty else None
        separators = (",", ": ") if pretty else (",", ":")
        text = json.dumps(value, ensure_ascii=False, indent=indent, separators=separators)
        try:
            return text.encode("utf-8")
        except UnicodeEncodeError:  # a lone surrogate: keep it as the escape it came in as
            return json.dumps(value, indent=indent, separators=separators).encode("ascii")

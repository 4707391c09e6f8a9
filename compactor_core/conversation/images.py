"""Images in a conversation: what each costs in tokens, how big it is, and its text marker.

An image block is recognized in every shape the agents send: Anthropic's ``{"type": "image",
"source": {...}}``, Chat Completions' ``image_url``, the Responses API's ``input_image``, Gemini's
``inlineData`` part and pi's ``{"type": "image", "data", "mimeType"}``. Its size is read from the
image's own header (PNG, JPEG, GIF, WebP), from the few base64 characters that hold it: a
screenshot of megabytes costs a decode of a few hundred bytes, never of the whole image
(``image_headers.py``).

Tokens follow Anthropic's published rule: about width × height / 750, after the API's own resize
(the long edge to at most 1568 pixels, the whole to about 1.15 megapixels), so no image costs
more than about 1534. An image whose header cannot be read counts its decoded bytes as pixels
(capped the same way); one by reference (a URL, a file id) counts the cap: the API fetches it and
resizes it as any other.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import Any

PIXELS_PER_TOKEN = 750
MAX_LONG_EDGE = 1568
MAX_PIXELS = 1_150_000
MOST_TOKENS = math.ceil(MAX_PIXELS / PIXELS_PER_TOKEN)
# The types of the blocks that are images (Gemini's parts have no type: ``inlineData``).
IMAGE_TYPES = frozenset({"image", "image_url", "input_image"})
MARKER_PREFIX = "[image:"


class Image:
    """What is known of one image: its kind, its size in pixels, its bytes (decoded), and whether
    it is sent by reference (a URL, a file id) rather than inline.

    A plain class, not a dataclass: the estimate imports this module, and start-up time counts.
    """

    __slots__ = ("height", "kind", "reference", "size", "width")

    def __init__(
        self,
        kind: str,  # png, jpeg, gif, webp, or what its media type says ("image" if nothing)
        width: int | None = None,
        height: int | None = None,
        size: int | None = None,  # decoded bytes, for an inline image
        reference: bool = False,
    ) -> None:
        self.kind, self.width, self.height = kind, width, height
        self.size, self.reference = size, reference

    def __repr__(self) -> str:
        return f"Image({', '.join(map(repr, self._key()))})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Image) and self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())

    def _key(self) -> tuple[Any, ...]:
        return self.kind, self.width, self.height, self.size, self.reference

    @property
    def inline(self) -> bool:
        """Sent as base64 in the request (not by reference, and not an empty block)."""
        return self.size is not None

    @property
    def tokens(self) -> int:
        """Anthropic's count, after the API's resize (see the module's docstring); 0 for a block
        that holds no image at all."""
        if self.width and self.height:
            pixels = self.width * self.height
            scale = min(1.0, MAX_LONG_EDGE / max(self.width, self.height))
            pixels = min(pixels * scale * scale, MAX_PIXELS)
            return max(1, math.ceil(pixels / PIXELS_PER_TOKEN))
        if self.size is not None:
            return min(math.ceil(self.size / PIXELS_PER_TOKEN), MOST_TOKENS)
        return MOST_TOKENS if self.reference else 0

    def marker(self) -> str:
        """``[image: png 1920x1080, 1.2 MB]``: what a replaced image leaves."""
        detail = self.kind
        if self.width and self.height:
            detail += f" {self.width}x{self.height}"
        if self.size is not None:
            detail += f", {size_text(self.size)}"
        return f"{MARKER_PREFIX} {detail}]"


def size_text(size: int) -> str:
    """Bytes as people read them: 812 B, 340 KB, 1.2 MB (powers of 1000, as the APIs say)."""
    if size < 1000:
        return f"{size} B"
    if size < 1_000_000:
        return f"{size // 1000} KB"
    return f"{size / 1_000_000:.1f} MB"


def image_tokens(blocks: list[dict[str, Any]]) -> int:
    """The tokens of these image blocks together (a block that is no image after all: 0)."""
    return sum(inspect(block).tokens for block in blocks if is_image(block))


# --- what an image block holds -------------------------------------------------------------------


def is_image(block: Any) -> bool:
    """Whether a block (or a Gemini part) is an image."""
    if not isinstance(block, dict):
        return False
    kind = block.get("type")
    if kind is None:
        return isinstance(block.get("inlineData"), dict) and _is_image_mime(block)
    return isinstance(kind, str) and kind in IMAGE_TYPES


def _is_image_mime(part: dict[str, Any]) -> bool:
    mime = part["inlineData"].get("mimeType")
    return not isinstance(mime, str) or mime.startswith("image/")


def source(block: dict[str, Any]) -> tuple[str, str | None, bool]:
    """(media type, base64 data or None, sent by reference) of an image block."""
    kind = block.get("type")
    if kind is None:  # a Gemini part
        inline = block["inlineData"]
        return _text(inline.get("mimeType")), _data(inline.get("data")), False
    if kind == "image":
        place = block.get("source")
        if not isinstance(place, dict):  # pi's: the data in the block
            return _text(block.get("mimeType")), _data(block.get("data")), False
        if place.get("type") == "base64":
            return _text(place.get("media_type")), _data(place.get("data")), False
        return _text(place.get("media_type")), None, place.get("type") in ("url", "file")
    url = block.get("image_url")
    url = url.get("url") if isinstance(url, dict) else url
    if isinstance(url, str) and url.startswith("data:"):
        head, _, data = url.partition(",")
        return head[5:].partition(";")[0], data, False
    return "", None, isinstance(url, str) or isinstance(block.get("file_id"), str)


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _data(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def inspect(block: dict[str, Any]) -> Image:
    """What the block's image is, from its header."""
    media_type, data, reference = source(block)
    named = media_type.removeprefix("image/") or "image"
    if data is None:
        return Image(named, reference=reference)
    size = decoded_size(data)
    from .image_headers import size_in_header  # only for an image: start-up time counts

    found = size_in_header(data)
    if found is None:
        return Image(named, size=size)
    kind, width, height = found
    return Image(kind, width, height, size)


def decoded_size(data: str) -> int:
    """The bytes a base64 text decodes to (its padding aside)."""
    data = data.rstrip()
    return (len(data) - data[-2:].count("=")) * 3 // 4


# --- images in messages --------------------------------------------------------------------------


def images_in(content: Any) -> Iterator[dict[str, Any]]:
    """Every image block of a message's content, tool results' contents included."""
    if not isinstance(content, list):
        return
    for block in content:
        if not isinstance(block, dict):
            continue
        if is_image(block):
            yield block
        else:
            yield from images_in(block.get("content"))


def replace_with_text(block: dict[str, Any], text: str) -> None:
    """Turn an image block, in place, into a text block of its own wire style."""
    kind = block.get("type")
    block.clear()
    if kind is None:  # a Gemini part
        block["text"] = text
    elif kind == "input_image":
        block.update(type="input_text", text=text)
    else:
        block.update(type="text", text=text)

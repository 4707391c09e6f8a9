"""Images are tokens and bytes (issue 26): their size from their own header, Anthropic's rule."""

from __future__ import annotations

import base64
import struct

import pytest
from agents.damage import SMALL_PNG, TOO_WIDE, png

from compactor_core.compaction.estimate import breakdown, estimate
from compactor_core.conversation.image_headers import image_size
from compactor_core.conversation.images import Image, images_in, inspect, replace_with_text


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def anthropic(data: bytes, media_type: str = "image/png") -> dict:
    source = {"type": "base64", "media_type": media_type, "data": b64(data)}
    return {"type": "image", "source": source}


def gif(width: int, height: int) -> bytes:
    return b"GIF89a" + struct.pack("<HH", width, height) + b"\x00" * 20


def jpeg(width: int, height: int, metadata: int = 0) -> bytes:
    """A JPEG's first segments: SOI, an APP1 of ``metadata`` bytes (EXIF sits there), SOF0."""
    app1 = b"\xff\xe1" + struct.pack(">H", metadata + 2) + b"\x00" * metadata
    sof = b"\xff\xc0" + struct.pack(">HBHHB", 17, 8, height, width, 3) + b"\x00" * 9
    return b"\xff\xd8" + app1 + sof + b"\xff\xda"


def webp(chunk: bytes, payload: bytes) -> bytes:
    return b"RIFF" + struct.pack("<I", 4 + len(payload)) + b"WEBP" + chunk + payload


def vp8x(width: int, height: int) -> bytes:
    sizes = (width - 1).to_bytes(3, "little") + (height - 1).to_bytes(3, "little")
    return webp(b"VP8X", struct.pack("<I", 10) + b"\x00" * 4 + sizes)


def vp8l(width: int, height: int) -> bytes:
    bits = (width - 1) | ((height - 1) << 14)
    return webp(b"VP8L", struct.pack("<I", 5) + b"\x2f" + bits.to_bytes(4, "little"))


def vp8(width: int, height: int) -> bytes:
    frame = b"\x00\x00\x00" + b"\x9d\x01\x2a" + struct.pack("<HH", width, height)
    return webp(b"VP8 ", struct.pack("<I", len(frame)) + frame)


@pytest.mark.parametrize(
    ("head", "expected"),
    [
        (png(640, 480), ("png", 640, 480)),
        (gif(320, 200), ("gif", 320, 200)),
        (jpeg(1920, 1080), ("jpeg", 1920, 1080)),
        (vp8x(3000, 2000), ("webp", 3000, 2000)),
        (vp8l(123, 456), ("webp", 123, 456)),
        (vp8(800, 600), ("webp", 800, 600)),
        (b"%PDF-1.7", None),
        (b"\x89PNG\r\n\x1a\n\x00", None),  # too short to say
    ],
)
def test_the_size_is_read_from_the_header(head: bytes, expected: tuple | None) -> None:
    assert image_size(head) == expected


def test_a_jpeg_whose_size_follows_long_metadata_is_read_further_in() -> None:
    image = inspect(anthropic(jpeg(4032, 3024, metadata=60_000), "image/jpeg"))
    assert (image.kind, image.width, image.height) == ("jpeg", 4032, 3024)


@pytest.mark.parametrize(
    ("width", "height", "tokens"),
    [
        (200, 200, 54),  # Anthropic's table: ~54
        (1000, 1000, 1334),  # ~1334
        (1920, 1080, 1534),  # over 1.15 megapixels: resized, the cap
        (9000, 40, 15),  # the long edge to 1568: 1568 x 7
    ],
)
def test_tokens_follow_the_published_rule_capped_as_the_api_resizes(
    width: int, height: int, tokens: int
) -> None:
    assert Image("png", width, height, 1000).tokens == tokens


def test_an_unreadable_header_counts_the_bytes_as_pixels_up_to_the_cap() -> None:
    assert inspect(anthropic(b"not an image" * 100)).tokens == 2  # 1200 bytes
    assert inspect(anthropic(b"x" * 5_000_000)).tokens == 1534


def test_an_image_by_reference_counts_the_cap_and_an_empty_block_nothing() -> None:
    url = {"type": "image", "source": {"type": "url", "url": "https://example.com/a.png"}}
    assert inspect(url).tokens == 1534
    assert inspect({"type": "image_url", "image_url": {"url": "https://example.com/a"}}).tokens
    assert inspect({"type": "image"}).tokens == 0


@pytest.mark.parametrize(
    "block",
    [
        anthropic(SMALL_PNG),
        {"type": "image_url", "image_url": {"url": "data:image/png;base64," + b64(SMALL_PNG)}},
        {"type": "input_image", "image_url": "data:image/png;base64," + b64(SMALL_PNG)},
        {"inlineData": {"mimeType": "image/png", "data": b64(SMALL_PNG)}},
        {"type": "image", "data": b64(SMALL_PNG), "mimeType": "image/png"},  # pi's
    ],
)
def test_every_wire_shape_is_read(block: dict) -> None:
    assert inspect(block) == Image("png", 64, 48, len(SMALL_PNG))
    assert estimate([{"role": "user", "content": [block]}]) == 5


def test_a_gemini_part_of_other_data_is_no_image() -> None:
    pdf = {"inlineData": {"mimeType": "application/pdf", "data": b64(b"%PDF" * 1000)}}
    assert estimate([{"role": "user", "content": [pdf]}]) == 0


def test_the_marker_names_kind_size_and_bytes() -> None:
    assert Image("png", 1920, 1080, 1_234_567).marker() == "[image: png 1920x1080, 1.2 MB]"
    assert Image("jpeg", size=340_500).marker() == "[image: jpeg, 340 KB]"
    assert Image("png", reference=True).marker() == "[image: png]"
    assert inspect(anthropic(TOO_WIDE)).marker() == "[image: png 9000x40, 4 KB]"


def test_images_in_tool_results_count_and_are_found() -> None:
    result = {"type": "tool_result", "tool_use_id": "t", "content": [anthropic(TOO_WIDE)]}
    messages = [{"role": "user", "content": [{"type": "text", "text": "see"}, result]}]
    assert list(images_in(messages[0]["content"])) == [result["content"][0]]
    report = breakdown(messages)
    assert report["images"] == {"count": 1, "tokens": 15, "bytes": len(TOO_WIDE)}
    assert report["by_tool"]["unknown"]["result_tokens"] == 15
    assert "images" not in breakdown(messages, compat=True)


@pytest.mark.parametrize(
    ("block", "text_block"),
    [
        (anthropic(SMALL_PNG), {"type": "text", "text": "M"}),
        ({"type": "input_image", "image_url": "data:,"}, {"type": "input_text", "text": "M"}),
        ({"inlineData": {"data": ""}}, {"text": "M"}),
    ],
)
def test_an_image_becomes_text_of_its_own_wire_style_in_place(block: dict, text_block: dict):
    same = block
    replace_with_text(block, "M")
    assert same == text_block

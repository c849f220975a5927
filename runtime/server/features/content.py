"""Content a handler returns without building a version's models: images, audio and files.

    @server.tool()
    def chart() -> Image:
        return Image(render_png(), "image/png")

    @server.tool()
    def report() -> list[str | Image | File]:
        return ["the figures:", Image(png), File(pdf, "application/pdf", name="report.pdf")]

Each is the same content block in every version that has it (`image`, `audio`, and an embedded
`resource` for a file); a tool that returns `bytes` returns a file of `application/octet-stream`.
"""

from __future__ import annotations

import base64
import mimetypes
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote


def _b64(data: bytes | bytearray | memoryview) -> str:
    return base64.b64encode(bytes(data)).decode("ascii")


@dataclass(frozen=True)
class Image:
    """An image: its bytes (`data`) and MIME type (`mime_type`: `image/png`, `image/jpeg`, ...)."""

    data: bytes
    mime_type: str = "image/png"

    def block(self) -> dict[str, Any]:
        """The `image` content block."""
        return {"type": "image", "data": _b64(self.data), "mimeType": self.mime_type}


@dataclass(frozen=True)
class Audio:
    """A sound: its bytes (`data`) and MIME type (`mime_type`: `audio/wav`, `audio/mpeg`, ...)."""

    data: bytes
    mime_type: str = "audio/wav"

    def block(self) -> dict[str, Any]:
        """The `audio` content block."""
        return {"type": "audio", "data": _b64(self.data), "mimeType": self.mime_type}


@dataclass(frozen=True)
class File:
    """A file, embedded in the result: bytes (or text: `data`) with a MIME type (`mime_type`).
    `name` makes its URI (`file:///NAME`) unless `uri` is given."""

    data: bytes | str
    mime_type: str = "application/octet-stream"
    name: str | None = None
    uri: str | None = None

    @property
    def resource_uri(self) -> str:
        if self.uri is not None:
            return self.uri
        name = self.name or "file" + (mimetypes.guess_extension(self.mime_type) or "")
        return "file:///" + quote(name)

    def contents(self) -> dict[str, Any]:
        """The resource contents (`text` for a str, `blob` for bytes)."""
        found: dict[str, Any] = {"uri": self.resource_uri, "mimeType": self.mime_type}
        if isinstance(self.data, str):
            found["text"] = self.data
        else:
            found["blob"] = _b64(self.data)
        return found

    def block(self) -> dict[str, Any]:
        """The embedded `resource` content block."""
        return {"type": "resource", "resource": self.contents()}


MEDIA: tuple[type[Any], ...] = (Image, Audio, File)
"""The helper classes (and `bytes`) a handler may return as content."""


def media_block(value: Any) -> dict[str, Any] | None:
    """The content block of a helper or of raw bytes (a file), None for anything else."""
    if isinstance(value, (Image, Audio, File)):
        return value.block()
    if isinstance(value, (bytes, bytearray, memoryview)):
        return File(bytes(value)).block()
    return None


def is_media_type(annotation: Any) -> bool:
    """Is `annotation` one of the helpers or `bytes` (content, not structured output)?"""
    return isinstance(annotation, type) and (issubclass(annotation, MEDIA) or issubclass(annotation, bytes))

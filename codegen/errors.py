"""The generator's error types: every failure names the schema file and JSON pointer behind it."""

from __future__ import annotations

from pathlib import Path


class GenerationError(Exception):
    """A schema the generator cannot turn into code, located by file and JSON pointer."""

    def __init__(self, message: str, *, file: Path | str | None = None, pointer: str = "") -> None:
        self.message = message
        self.file = str(file) if file is not None else None
        self.pointer = pointer
        if self.file is None and not pointer:  # not about a place in a schema file
            super().__init__(message)
            return
        where = self.file or "<schema>"
        if pointer:
            where = f"{where}#{pointer}"
        super().__init__(f"{where}: {message}")

    def __reduce__(self) -> tuple[object, ...]:  # keep file and pointer across worker processes
        return (_rebuild_generation_error, (self.message, self.file, self.pointer))


def _rebuild_generation_error(message: str, file: str | None, pointer: str) -> GenerationError:
    return GenerationError(message, file=file, pointer=pointer)


class PinError(Exception):
    """A schema file whose content does not match its pin, or a pin file that cannot be read."""


def escape_pointer_token(token: str) -> str:
    """Escape one JSON pointer reference token (RFC 6901)."""
    return token.replace("~", "~0").replace("/", "~1")


def unescape_pointer_token(token: str) -> str:
    """Undo `escape_pointer_token`."""
    return token.replace("~1", "/").replace("~0", "~")


def join_pointer(*tokens: str | int) -> str:
    """Build a JSON pointer from raw tokens."""
    return "".join("/" + escape_pointer_token(str(t)) for t in tokens)

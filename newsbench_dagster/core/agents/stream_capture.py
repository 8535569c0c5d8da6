"""A child process's output stream, read to its end and kept within a cap: its first and last
halves, with the secrets it was given redacted (the `command` adapter keeps what its command
printed this way).
"""

from __future__ import annotations

import asyncio

from newsbench_dagster.core.secrets import Redactor

OUTPUT_CAP = 256 * 1024  # bytes kept of each stream: the first and last halves
READ_CHUNK = 64 * 1024


class StreamCapture:
    """A stream read to its end, keeping the first and last OUTPUT_CAP/2 bytes."""

    def __init__(self, cap: int = OUTPUT_CAP) -> None:
        self.half = cap // 2
        self.head = bytearray()
        self.tail = bytearray()
        self.total = 0

    async def read(self, stream: asyncio.StreamReader) -> None:
        while chunk := await stream.read(READ_CHUNK):
            self.total += len(chunk)
            room = self.half - len(self.head)
            if room > 0:
                self.head += chunk[:room]
                chunk = chunk[room:]
            if chunk:
                self.tail += chunk
                del self.tail[: max(0, len(self.tail) - self.half)]

    def ending(self) -> str:
        """The end of the stream as text (all of it when nothing was dropped): where an
        answer line or the last error message is."""
        whole = self.total == len(self.head) + len(self.tail)
        data = bytes(self.head + self.tail) if whole else bytes(self.tail)
        return data.decode("utf-8", errors="replace")

    def text(self, secrets: Redactor) -> bytes:
        """What is kept of the stream, a marker where bytes were dropped, secrets redacted."""
        dropped = self.total - len(self.head) - len(self.tail)
        if dropped <= 0:
            return secrets.bytes(bytes(self.head + self.tail))
        # Cut at line ends so a secret (never multi-line) is not split across the gap, where
        # neither half would redact it.
        head, tail = bytes(self.head), bytes(self.tail)
        if b"\n" in head:
            head = head[: head.rindex(b"\n") + 1]
        if b"\n" in tail:
            tail = tail[tail.index(b"\n") + 1 :]
        gap = self.total - len(head) - len(tail)
        marker = f"\n[... {gap} bytes not kept ...]\n".encode()
        return secrets.bytes(head) + marker + secrets.bytes(tail)

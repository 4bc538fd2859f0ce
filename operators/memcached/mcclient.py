"""A minimal memcached ASCII-protocol client, for the demo and the tests that talk to the
real pods of the process runtime (memcached and the mcrouter stand-in)."""

from __future__ import annotations

import asyncio
from types import TracebackType


class MemcacheClient:
    """One connection; ``async with MemcacheClient(host, port) as mc: await mc.set(...)``."""

    def __init__(self, host: str, port: int = 11211, timeout: float = 5.0) -> None:
        self.host, self.port, self.timeout = host, port, timeout
        self._reader: asyncio.StreamReader | None = None
        self._writer: asyncio.StreamWriter | None = None

    def __repr__(self) -> str:
        return f"MemcacheClient({self.host}:{self.port})"

    async def __aenter__(self) -> MemcacheClient:
        async with asyncio.timeout(self.timeout):
            self._reader, self._writer = await asyncio.open_connection(self.host, self.port)
        return self

    async def __aexit__(self, *exc: type[BaseException] | BaseException | TracebackType | None
                        ) -> None:
        if self._writer is not None:
            self._writer.close()

    async def _call(self, request: bytes, value: bool = False) -> bytes:
        assert self._reader is not None and self._writer is not None
        async with asyncio.timeout(self.timeout):
            self._writer.write(request)
            await self._writer.drain()
            if not value:
                return await self._reader.readuntil(b"\r\n")
            out = b""
            while True:
                line = await self._reader.readuntil(b"\r\n")
                if not line.startswith(b"VALUE "):
                    return out + line
                size = int(line.split()[3])
                out += line + await self._reader.readexactly(size + 2)

    async def set(self, key: str, value: str) -> str:
        data = value.encode()
        reply = await self._call(f"set {key} 0 0 {len(data)}\r\n".encode() + data + b"\r\n")
        return reply.decode().strip()

    async def get(self, key: str) -> str | None:
        reply = await self._call(f"get {key}\r\n".encode(), value=True)
        if not reply.startswith(b"VALUE "):
            if reply != b"END\r\n":
                raise OSError(reply.decode().strip())
            return None
        header, _, rest = reply.partition(b"\r\n")
        size = int(header.split()[3])
        return rest[:size].decode()

    async def items(self) -> int:
        """``curr_items`` of a memcached server (not of the proxy)."""
        assert self._reader is not None and self._writer is not None
        async with asyncio.timeout(self.timeout):
            self._writer.write(b"stats\r\n")
            await self._writer.drain()
            count = 0
            while (line := await self._reader.readuntil(b"\r\n")) != b"END\r\n":
                words = line.split()
                if len(words) == 3 and words[1] == b"curr_items":
                    count = int(words[2])
            return count

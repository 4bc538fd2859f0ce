"""A container's terminal (``tty: true``): a pseudo-terminal between the program and the
runtime.

The program gets the slave end as its stdin, stdout, stderr and controlling terminal; the
runtime keeps the master end. What the program writes comes out of the master as one stream,
which the log records as ``stdout`` (a terminal has no separate stderr: containerd logs a tty
container the same way); ``kubectl attach -it`` writes the user's keys into the master and
its resizes set the terminal's size (pkg/kubelet/cri/streaming/remotecommand: a tty session
has no stderr stream and a resize stream).
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import fcntl
import os
import struct
import termios
from typing import Any


class _TerminalOutput(asyncio.StreamReaderProtocol):
    """Reads the master; the end of the program's output is EOF, not an error."""

    def connection_lost(self, exc: Exception | None) -> None:
        # once every holder of the slave end has closed it, reading the master fails with
        # EIO: that is how a terminal's output ends
        if isinstance(exc, OSError) and exc.errno == errno.EIO:
            exc = None
        super().connection_lost(exc)


class Terminal:
    """One pseudo-terminal; :meth:`open_streams` once the program holds the slave."""

    def __init__(self) -> None:
        self.master, self.slave = os.openpty()
        self.input: asyncio.StreamWriter | None = None

    def __repr__(self) -> str:
        return f"Terminal(master={self.master})"

    def release_slave(self) -> None:
        """Close the runtime's copy of the slave end (the program has its own): otherwise
        the master would never see the end of the output."""
        if self.slave >= 0:
            os.close(self.slave)
            self.slave = -1

    async def open_streams(self, limit: int) -> asyncio.StreamReader:
        """The program's output, as a stream; :attr:`input` is then its keyboard."""
        loop = asyncio.get_running_loop()
        output = asyncio.StreamReader(limit=limit)
        await loop.connect_read_pipe(lambda: _TerminalOutput(output),
                                     os.fdopen(os.dup(self.master), "rb", buffering=0))
        keyboard: Any = os.fdopen(os.dup(self.master), "wb", buffering=0)
        transport, protocol = await loop.connect_write_pipe(
            lambda: asyncio.StreamReaderProtocol(asyncio.StreamReader()), keyboard)
        self.input = asyncio.StreamWriter(transport, protocol, None, loop)
        return output

    def resize(self, width: int, height: int) -> None:
        with contextlib.suppress(OSError):
            fcntl.ioctl(self.master, termios.TIOCSWINSZ,
                        struct.pack("HHHH", height, width, 0, 0))

    def close(self) -> None:
        self.release_slave()
        if self.input is not None:
            self.input.close()
        if self.master >= 0:
            os.close(self.master)
            self.master = -1

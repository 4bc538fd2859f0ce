"""Run an embedded API server under a small file limit (for tests of connection limits).

Usage: python -m tests.cluster.serve_limited NOFILE READ_HEADER_TIMEOUT_S [asyncio|uvloop]
(the event loop: the TLS protocol differs, uvloop's compiled one or asyncio's).
Prints one JSON line (url, token, ca_file) once it listens; stops when stdin closes.
"""

from __future__ import annotations

import asyncio
import json
import resource
import sys

from setpoint.cluster import serve
from setpoint.cluster.endpoints.connections import ConnectionLimits


async def main(nofile: int, read_header_timeout_s: float) -> None:
    resource.setrlimit(resource.RLIMIT_NOFILE, (nofile, nofile))
    limits = ConnectionLimits(read_header_timeout_s=read_header_timeout_s)
    async with serve(limits=limits) as cluster:
        print(json.dumps({"url": cluster.url, "token": cluster.token,
                          "ca_file": str(cluster.ca_file)}), flush=True)
        await asyncio.get_running_loop().run_in_executor(None, sys.stdin.read)


if __name__ == "__main__":
    coroutine = main(int(sys.argv[1]), float(sys.argv[2]))
    if sys.argv[3:] == ["uvloop"]:
        import uvloop

        uvloop.run(coroutine)
    else:
        asyncio.run(coroutine)

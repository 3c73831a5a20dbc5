"""The floor under groupcoord's start-up: an asyncio server (uvloop when installed) that
answers every request with a fixed ApiVersions v0 response (ApiVersions 0-4 only).

``python -m bench.bare_server PORT`` is what any asyncio broker pays before its first
answer: the interpreter, `import asyncio` and uvloop, a listener. `bench/startup.py` times it
in the same run as the brokers.
"""

from __future__ import annotations

import asyncio
import struct
import sys
from typing import Any

# correlation id (filled in), error 0, one API: ApiVersions (18) versions 0-4.
_BODY = struct.pack(">hihhh", 0, 1, 18, 0, 4)


class _Answer(asyncio.Protocol):
    def connection_made(self, transport: Any) -> None:  # uvloop's is no asyncio.Transport
        self.transport, self.buf = transport, b""

    def data_received(self, data: bytes) -> None:
        self.buf += data
        while len(self.buf) >= 4:
            (size,) = struct.unpack_from(">i", self.buf)
            if len(self.buf) < 4 + size:
                return
            (corr,) = struct.unpack_from(">i", self.buf, 8)
            self.buf = self.buf[4 + size:]
            self.transport.write(struct.pack(">ii", 4 + len(_BODY), corr) + _BODY)


async def _serve(port: int) -> None:
    server = await asyncio.get_running_loop().create_server(_Answer, "127.0.0.1", port)
    async with server:
        await server.serve_forever()


def main() -> None:
    try:
        import uvloop
    except ImportError:
        asyncio.run(_serve(int(sys.argv[1])))
    else:
        uvloop.run(_serve(int(sys.argv[1])))


if __name__ == "__main__":
    main()

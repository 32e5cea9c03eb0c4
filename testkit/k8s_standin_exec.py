"""The stand-in's exec relay (k8s_standin.py): a docker exec's hijacked socket to and from the WebSocket
channel protocol (`v5.channel.k8s.io` / `v4.channel.k8s.io`), and the final status on channel 3."""

from __future__ import annotations

import asyncio
import contextlib
import socket
from typing import Any

from aiohttp import WSMsgType, web

from testkit.k8s_standin_objects import status_body


def exit_status(code: int | None) -> dict[str, Any]:
    if code == 0:
        return {"metadata": {}, "status": "Success"}
    return status_body(
        500,
        "NonZeroExitCode",
        f"command terminated with non-zero exit code: exit code {code}",
        causes=[{"reason": "ExitCode", "message": str(code if code is not None else 1)}],
    )


async def send(ws: web.WebSocketResponse, data: bytes) -> None:
    with contextlib.suppress(Exception):
        await ws.send_bytes(data)


async def pump_out(raw: socket.socket, ws: web.WebSocketResponse) -> None:
    """Docker's multiplexed exec stream (8-byte frame headers) to channel-prefixed WebSocket messages."""
    loop, buf = asyncio.get_running_loop(), bytearray()
    while True:
        try:
            chunk = await loop.sock_recv(raw, 65536)
        except OSError:
            return
        if not chunk:
            return
        buf += chunk
        while len(buf) >= 8 and len(buf) >= 8 + (size := int.from_bytes(buf[4:8], "big")):
            kind, payload = buf[0], bytes(buf[8 : 8 + size])
            del buf[: 8 + size]
            await send(ws, bytes([kind if kind in (1, 2) else 1]) + payload)


async def pump_in(raw: socket.socket, ws: web.WebSocketResponse) -> None:
    """Channel 0 to the exec's stdin; v5's close of channel 0 half-closes it (the command sees EOF)."""
    loop = asyncio.get_running_loop()
    async for msg in ws:
        if msg.type not in (WSMsgType.BINARY, WSMsgType.TEXT):
            continue
        data = msg.data if isinstance(msg.data, bytes) else msg.data.encode()
        with contextlib.suppress(OSError):
            if data[:1] == b"\x00":
                await loop.sock_sendall(raw, data[1:])
            elif data[:2] == b"\xff\x00":
                raw.shutdown(socket.SHUT_WR)
    # The client closed the stream: the handler stops relaying (the command's processes are not signalled).

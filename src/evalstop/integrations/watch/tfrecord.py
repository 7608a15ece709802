"""TensorBoard event files read record by record from an open descriptor.

An event file is a sequence of TFRecords: an 8-byte little-endian length, its masked
CRC-32C, the data (one ``Event`` protobuf), the data's masked CRC-32C. Reading them here
(instead of with tensorboard's ``EventAccumulator``, which opens files by path and reads
a whole file per reload) lets the controller open each file through ``walk`` (never
leaving the root), resume from a byte offset, stop at a budget, and tell a record still
being written (wait) from a corrupt one (refused, said once).
"""

from __future__ import annotations

import os
import struct
from dataclasses import dataclass

from evalstop.integrations._extras import require
from evalstop.integrations.watch.walk import read_n

HEADER = 12  # length (8) + its CRC (4)
MAX_EVENT = 16 * 1024 * 1024  # bytes; a scalar event is ~50, an image event can be MBs


class Corrupt(ValueError):
    """The file is not a valid event file from ``pos`` on."""

    def __init__(self, pos: int, why: str) -> None:
        super().__init__(f"{why} at byte {pos}")
        self.pos = pos


@dataclass(slots=True)
class Read:
    """What one read gave: ``events`` (decoded ``Event`` protobufs), ``pos`` where the
    next read starts, ``nbytes`` read, ``oversize`` records passed over (too large)."""

    events: list
    pos: int
    nbytes: int = 0
    oversize: int = 0


def _crc():
    return require("tensorboard.compat.tensorflow_stub.pywrap_tensorflow",
                   what="evalstop watch --tensorboard", extra="watch").masked_crc32c


def _event_pb2():
    return require("tensorboard.compat.proto.event_pb2", what="evalstop watch --tensorboard",
                   extra="watch")


def read_events(fd: int, pos: int, *, max_events: int, max_bytes: int) -> Read:
    """Complete records of ``fd`` from ``pos``, up to ``max_events`` / ``max_bytes``
    (at least one record when there is one). :class:`Corrupt` on a bad checksum or an
    undecodable event; a record cut short at the end of the file is left for later."""
    crc, event_pb2 = _crc(), _event_pb2()
    out = Read([], pos)
    os.lseek(fd, pos, os.SEEK_SET)
    while len(out.events) < max_events and (out.nbytes < max_bytes or not out.events):
        head = read_n(fd, HEADER)
        if len(head) < HEADER:
            return out  # the writer is still on it
        (length,) = struct.unpack("<Q", head[:8])
        if struct.unpack("<I", head[8:])[0] != crc(head[:8]):
            raise Corrupt(out.pos, "bad record length checksum")
        if length > MAX_EVENT:  # framing is sound (checked): pass it over unread
            end = out.pos + HEADER + length + 4
            if os.fstat(fd).st_size < end:
                return out
            os.lseek(fd, end, os.SEEK_SET)
            out.pos, out.oversize = end, out.oversize + 1
            continue
        body = read_n(fd, length + 4)
        if len(body) < length + 4:
            return out
        data = body[:length]
        if struct.unpack("<I", body[length:])[0] != crc(data):
            raise Corrupt(out.pos, "bad record data checksum")
        ev = event_pb2.Event()
        try:
            ev.ParseFromString(data)
        except Exception as exc:  # noqa: BLE001 - protobuf's DecodeError and kin
            raise Corrupt(out.pos, f"undecodable event ({type(exc).__name__})") from None
        out.events.append(ev)
        out.pos += HEADER + length + 4
        out.nbytes += HEADER + length + 4
    return out

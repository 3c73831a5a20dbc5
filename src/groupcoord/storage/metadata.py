"""Small text files Kafka keeps next to the logs: ``partition.metadata`` and checkpoints.

Mirrors ``org.apache.kafka.storage.internals.checkpoint.PartitionMetadataFile`` (``version:
0`` / ``topic_id: <id>``, the id printed as ``Uuid.toString()``: URL-safe base64 without
padding) and ``OffsetCheckpointFile`` (``0``, entry count, then ``topic partition offset``
lines) used for ``log-start-offset-checkpoint`` and ``recovery-point-offset-checkpoint``.

Every write goes to a temporary file that is fsynced and renamed over the old one.
"""

from __future__ import annotations

import base64
import os

from groupcoord.storage.fileio import OS_FILE_IO, FileIO

PARTITION_METADATA = "partition.metadata"
LOG_START_OFFSET_CHECKPOINT = "log-start-offset-checkpoint"
RECOVERY_POINT_CHECKPOINT = "recovery-point-offset-checkpoint"


def topic_id_to_str(topic_id: bytes) -> str:
    """Kafka's ``Uuid.toString``."""
    return base64.urlsafe_b64encode(topic_id).decode().rstrip("=")


def topic_id_from_str(text: str) -> bytes:
    """Kafka's ``Uuid.fromString``."""
    raw = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
    if len(raw) != 16:
        raise ValueError(f"topic id {text!r} is not 16 bytes")
    return raw


def atomic_write(path: str, text: str, io: FileIO = OS_FILE_IO) -> None:
    io.replace_file(path, text.encode("utf-8"))


def write_partition_metadata(partition_dir: str, topic_id: bytes,
                             io: FileIO = OS_FILE_IO) -> None:
    text = f"version: 0\ntopic_id: {topic_id_to_str(topic_id)}\n"
    atomic_write(os.path.join(partition_dir, PARTITION_METADATA), text, io)


def read_partition_metadata(partition_dir: str, io: FileIO = OS_FILE_IO) -> bytes | None:
    """The topic id recorded for a partition directory, or None if there is no file."""
    try:
        lines = io.read_text(os.path.join(partition_dir, PARTITION_METADATA)).splitlines()
    except FileNotFoundError:
        return None
    fields = dict(line.split(": ", 1) for line in lines if ": " in line)
    if fields.get("version") != "0" or "topic_id" not in fields:
        raise ValueError(f"malformed {PARTITION_METADATA} in {partition_dir}")
    return topic_id_from_str(fields["topic_id"].strip())


def write_checkpoint(path: str, entries: dict[tuple[str, int], int],
                     io: FileIO = OS_FILE_IO) -> None:
    lines = [f"{topic} {partition} {offset}" for (topic, partition), offset in
             sorted(entries.items())]
    atomic_write(path, "\n".join(["0", str(len(lines)), *lines]) + "\n", io)


def read_checkpoint(path: str, io: FileIO = OS_FILE_IO) -> dict[tuple[str, int], int]:
    """Entries of an offset checkpoint file; an absent or malformed file reads as empty."""
    try:
        lines = io.read_text(path).splitlines()
    except FileNotFoundError:
        return {}
    if len(lines) < 2 or lines[0] != "0":
        return {}
    out: dict[tuple[str, int], int] = {}
    for line in lines[2 : 2 + int(lines[1])]:
        topic, partition, offset = line.rsplit(" ", 2)
        out[(topic, int(partition))] = int(offset)
    return out

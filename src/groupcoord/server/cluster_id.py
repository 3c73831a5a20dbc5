"""The cluster id: given on the command line, else kept in `<data-dir>/meta.properties`.

Mirrors Kafka's `meta.properties` (`cluster.id`, `node.id`, `version`): a restarted broker
keeps its cluster id, which clients compare across metadata responses. `groupcoord serve`
reads (or makes up) the id before it binds its listeners and has the broker store it, with
an fsync, after the bind and before it answers anything but ApiVersions (`Broker.start`).
"""

from __future__ import annotations

import os

from groupcoord.storage.fileio import OS_FILE_IO, FileIO
from groupcoord.wire.kafka_uuid import random_uuid, uuid_text

META_FILE = "meta.properties"


def _read(path: str, io: FileIO) -> dict[str, str]:
    props: dict[str, str] = {}
    try:
        text = io.read_text(path)
    except FileNotFoundError:
        return props
    for line in text.splitlines():
        line = line.strip()
        if line and not line.startswith("#") and "=" in line:
            key, _, value = line.partition("=")
            props[key.strip()] = value.strip()
    return props


def stored_cluster_id(data_dir: str, io: FileIO = OS_FILE_IO) -> str | None:
    """The id in the data dir's `meta.properties`, None without one."""
    return _read(os.path.join(data_dir, META_FILE), io).get("cluster.id") or None


def new_cluster_id() -> str:
    """A fresh Kafka-style cluster id (a random UUID in Kafka's base64 text)."""
    return uuid_text(random_uuid(os.urandom))


def store_cluster_id(data_dir: str, cluster_id: str, io: FileIO = OS_FILE_IO) -> None:
    """Make `meta.properties` name `cluster_id` (written and fsynced only when it does not
    already), creating the data dir if needed."""
    io.makedirs(data_dir)
    path = os.path.join(data_dir, META_FILE)
    props = _read(path, io)
    if props.get("cluster.id") != cluster_id:
        props.update({"version": "1", "cluster.id": cluster_id})
        io.replace_file(path, "".join(f"{k}={v}\n" for k, v in props.items()).encode())


def load_or_create_cluster_id(data_dir: str, given: str | None,
                              io: FileIO = OS_FILE_IO) -> str:
    """The stored id (or `given`, which replaces it); a new Kafka-style id otherwise. Stored
    before it is returned."""
    cluster_id = given or stored_cluster_id(data_dir, io) or new_cluster_id()
    store_cluster_id(data_dir, cluster_id, io)
    return cluster_id

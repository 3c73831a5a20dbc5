"""The cluster id: given on the command line, else kept in `<data-dir>/meta.properties`.

Mirrors Kafka's `meta.properties` (`cluster.id`, `node.id`, `version`): a restarted broker
keeps its cluster id, which clients compare across metadata responses.
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


def load_or_create_cluster_id(data_dir: str, given: str | None,
                              io: FileIO = OS_FILE_IO) -> str:
    """The stored id (or `given`, which replaces it); a new Kafka-style id otherwise."""
    io.makedirs(data_dir)
    path = os.path.join(data_dir, META_FILE)
    props = _read(path, io)
    cluster_id = given or props.get("cluster.id")
    if not cluster_id:
        cluster_id = uuid_text(random_uuid(os.urandom))
    if props.get("cluster.id") != cluster_id:
        props.update({"version": "1", "cluster.id": cluster_id})
        io.replace_file(path, "".join(f"{k}={v}\n" for k, v in props.items()).encode())
    return cluster_id

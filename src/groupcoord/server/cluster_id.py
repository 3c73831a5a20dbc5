"""The cluster id: given on the command line, else kept in `<data-dir>/meta.properties`.

Mirrors Kafka's `meta.properties` (`cluster.id`, `node.id`, `version`): a restarted broker
keeps its cluster id, which clients compare across metadata responses.
"""

from __future__ import annotations

import os

from groupcoord.wire.kafka_uuid import random_uuid, uuid_text

META_FILE = "meta.properties"


def _read(path: str) -> dict[str, str]:
    props: dict[str, str] = {}
    try:
        with open(path, encoding="utf-8") as fh:
            for line in fh:
                line = line.strip()
                if line and not line.startswith("#") and "=" in line:
                    key, _, value = line.partition("=")
                    props[key.strip()] = value.strip()
    except FileNotFoundError:
        pass
    return props


def load_or_create_cluster_id(data_dir: str, given: str | None) -> str:
    """The stored id (or `given`, which replaces it); a new Kafka-style id otherwise."""
    os.makedirs(data_dir, exist_ok=True)
    path = os.path.join(data_dir, META_FILE)
    props = _read(path)
    cluster_id = given or props.get("cluster.id")
    if not cluster_id:
        cluster_id = uuid_text(random_uuid(os.urandom))
    if props.get("cluster.id") != cluster_id:
        props.update({"version": "1", "cluster.id": cluster_id})
        tmp = path + ".tmp"
        with open(tmp, "w", encoding="utf-8") as fh:
            fh.writelines(f"{k}={v}\n" for k, v in props.items())
        os.replace(tmp, path)
    return cluster_id

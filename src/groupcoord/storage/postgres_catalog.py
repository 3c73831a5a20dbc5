"""The cluster's topic catalog in PostgreSQL, beside its partitions
(``storage.postgres_store``, whose ``ensure_schema`` creates these tables too):

- ``topics``: every topic with partitions in PostgreSQL, its id and partition count, the
  truth a node opens its partitions from (the file log's partition directories and their
  ``partition.metadata``);
- ``cluster_documents``: the cluster id and the metadata documents kept whole, and
  ``cluster_counters``, the counters ids are claimed from in blocks (``storage.documents``).

Deleting a topic removes its catalog row and batches in one transaction and resets its
partitions' rows, but keeps them and bumps their leader epochs: a topic created again under
the name starts at offset 0 with epochs no leader of the old one ever held, so nothing of a
node that still believes it leads the old one is ever appended to the new one.
"""

from __future__ import annotations

from dataclasses import dataclass

from groupcoord.storage.postgres_session import READ_ISOLATION, WRITE_ISOLATION, PostgresSession


@dataclass(frozen=True)
class CatalogTopic:
    """A topic as the catalog keeps it."""

    name: str
    topic_id: bytes
    partitions: int


def register_partition(session: PostgresSession, topic: str, partition: int,
                       topic_id: bytes) -> bytes:
    """Record the topic (under ``topic_id`` unless it is known already) with at least
    ``partition + 1`` partitions, and the partition's row; return the topic's stored id."""
    with session.transaction(WRITE_ISOLATION) as cur:
        cur.execute("INSERT INTO topics (name, topic_id, partitions) VALUES (%s, %s, %s)"
                    " ON CONFLICT (name) DO UPDATE"
                    " SET partitions = greatest(topics.partitions, excluded.partitions)"
                    " RETURNING topic_id", (topic, topic_id, partition + 1))
        found = cur.fetchone()
        cur.execute("INSERT INTO partition_state (topic, partition_index) VALUES (%s, %s)"
                    " ON CONFLICT DO NOTHING", (topic, partition))
    assert found is not None  # RETURNING of an upsert always yields its row
    return bytes(found[0])


def list_topics(session: PostgresSession) -> dict[str, CatalogTopic]:
    """Every topic of the catalog, by name."""
    with session.transaction(READ_ISOLATION) as cur:
        cur.execute("SELECT name, topic_id, partitions FROM topics")
        return {name: CatalogTopic(name, bytes(topic_id), partitions)
                for name, topic_id, partitions in cur.fetchall()}


def delete_topic(session: PostgresSession, topic: str) -> None:
    """Remove the topic and every batch of it; its partitions' rows stay, reset, with their
    epochs bumped (fencing whoever led them)."""
    with session.transaction(WRITE_ISOLATION) as cur:
        # The rows first: their locks wait out appends in flight, whose batches the delete
        # below then sees.
        cur.execute("UPDATE partition_state SET log_start_offset = 0, log_end_offset = 0,"
                    " leader_node_id = NULL, lease_expiry_ms = 0,"
                    " leader_epoch = leader_epoch + 1 WHERE topic = %s", (topic,))
        cur.execute("DELETE FROM partition_batches WHERE topic = %s", (topic,))
        cur.execute("DELETE FROM topics WHERE name = %s", (topic,))


CLUSTER_ID_DOCUMENT = "cluster.id"


def cluster_id(session: PostgresSession, proposed: str) -> str:
    """The cluster's id: the one stored, else ``proposed``, stored now (by the first node
    started on the database; every later one adopts it)."""
    with session.transaction(WRITE_ISOLATION) as cur:
        cur.execute("INSERT INTO cluster_documents (name, body) VALUES (%s, %s)"
                    " ON CONFLICT (name) DO NOTHING", (CLUSTER_ID_DOCUMENT, proposed.encode()))
        cur.execute("SELECT body FROM cluster_documents WHERE name = %s", (CLUSTER_ID_DOCUMENT,))
        found = cur.fetchone()
    assert found is not None  # inserted above unless already there
    return bytes(found[0]).decode()


def read_document(session: PostgresSession, name: str) -> bytes | None:
    """The document's body, None if it was never written."""
    with session.statement() as cur:
        cur.execute("SELECT body FROM cluster_documents WHERE name = %s", (name,))
        found = cur.fetchone()
    return None if found is None else bytes(found[0])


class PostgresDocuments:
    """``storage.documents.MetadataDocuments`` in the ``cluster_documents`` table."""

    def __init__(self, session: PostgresSession) -> None:
        self._session = session

    def read(self, name: str) -> bytes | None:
        return read_document(self._session, name)

    def write(self, name: str, body: bytes) -> None:
        with self._session.transaction(WRITE_ISOLATION) as cur:
            cur.execute("INSERT INTO cluster_documents (name, body) VALUES (%s, %s)"
                        " ON CONFLICT (name) DO UPDATE SET body = excluded.body", (name, body))

    def claim_block(self, name: str, first_id: int, size: int) -> int:
        """One statement on the counter's row: concurrent claims (other nodes) are
        serialized by its lock, so their blocks never overlap."""
        with self._session.transaction(WRITE_ISOLATION) as cur:
            cur.execute("INSERT INTO cluster_counters AS c (name, next_id) VALUES (%s, %s)"
                        " ON CONFLICT (name) DO UPDATE"
                        " SET next_id = greatest(c.next_id, %s) + %s RETURNING next_id",
                        (name, first_id + size, first_id, size))
            found = cur.fetchone()
        assert found is not None  # RETURNING of an upsert always yields its row
        return int(found[0]) - size

"""The names of the internal topics whose logs hold coordinator records: the one place they
are spelled. In logformat because the name says which record schemas a log holds (the
group table for `__consumer_offsets`, the share table for `__share_group_state`), and
because every layer that reads those logs (storage, coordinator, server, analytics) may
import it."""

from __future__ import annotations

# Kafka's `Topic.GROUP_METADATA_TOPIC_NAME`: offsets and group metadata.
OFFSETS_TOPIC = "__consumer_offsets"
# Kafka's `Topic.SHARE_GROUP_STATE_TOPIC_NAME`: share-partition state (KIP-932).
SHARE_STATE_TOPIC = "__share_group_state"
# Kafka's `Topic.TRANSACTION_STATE_TOPIC_NAME`: transaction coordinator state.
TXN_TOPIC = "__transaction_state"
# Ours: the group event stream the analytics pipeline reads (not a Kafka topic).
GROUP_EVENTS_TOPIC = "__group_events"

# The internal topics Kafka itself defines (`Topic.INTERNAL_TOPICS` of a KRaft broker).
KAFKA_INTERNAL_TOPICS = frozenset({OFFSETS_TOPIC, SHARE_STATE_TOPIC, TXN_TOPIC})

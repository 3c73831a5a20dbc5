"""The coordinator runtime (Kafka's coordinator-common): the shards of a coordinator topic,
each a task that replays its partition and then runs queued operations, writing their
records through the broker's append path (`shard_runtime`, `shard_task`), the group
coordinator's runtime over `__consumer_offsets` (`coordinator_runtime`), shard loading and
snapshots, the runtime's metrics, and the clock and heap settling they run on."""

"""The broker's Prometheus endpoint (`groupcoord serve --metrics-listen`, docs/metrics.md).

- `exposition`: the Prometheus text format.
- `counters`: what group events and the coordinator's stats count (rebalances by cause,
  offset commits, expirations, deletions), with Kafka's windowed rates.
- `groups`: a read of every loaded coordinator shard: group counts by protocol and state,
  and the exported groups with their members and committed offsets.
- `lag`: lag per group partition in records and seconds, messages lost to retention and
  the retention margin, computed from the committed offsets and the partition logs.
- `families`: the metric families of one scrape, under Kafka's and klag-exporter's names.
- `http`: the HTTP server on the broker's event loop (`/metrics`, `/health`, `/ready`).
"""

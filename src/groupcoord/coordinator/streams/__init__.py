"""KIP-1071 streams groups: the broker-side task assignment of Kafka Streams."""

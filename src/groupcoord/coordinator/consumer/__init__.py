"""KIP-848 consumer groups: the `consumer` rebalance protocol (Kafka's
`modern/consumer` package and the consumer half of `GroupMetadataManager`)."""

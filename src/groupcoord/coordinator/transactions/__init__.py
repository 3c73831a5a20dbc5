"""The transaction coordinator as pure state machines (Kafka's `kafka.coordinator.transaction`).

`state`: TransactionState, its transition table and TransactionMetadata / TxnTransit;
`coordinator`: the decisions of InitProducerId, AddPartitionsToTxn, EndTxn, timeouts and
expiration. The asyncio side (appends to `__transaction_state`, markers) lives in
`groupcoord.server.transactions`.
"""

"""The transaction coordinator (KIP-98, KIP-360, KIP-447, KIP-890).

`state` holds the per-transactional-id state machine, `core` the coordinator's decisions
(Kafka's TransactionCoordinator, trio-free and testable with a fake clock), `log` the
`__transaction_state` record format, `markers` the marker writer, `producer_ids` the
producer id allocator and `coordinator` the trio service that ties them to the broker.
"""


def __getattr__(name):
    if name == "TransactionCoordinator":
        from .coordinator import TransactionCoordinator
        return TransactionCoordinator
    raise AttributeError(name)

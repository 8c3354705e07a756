"""One adapter per Kafka client, all with the interface of `base.Client`.

Feature tests are written once and parametrized over the adapters (see ``conftest.client``),
so ``-m java`` selects a client and ``-m compression`` a feature.
"""

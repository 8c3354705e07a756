"""Spark's Kafka connector against a Kafka-compatible broker (see conftest.py)."""

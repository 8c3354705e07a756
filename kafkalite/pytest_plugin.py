"""pytest fixtures for testing against a Kafka-compatible broker (kafkalite by default)."""

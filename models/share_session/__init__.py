"""Share sessions (KIP-932): a share consumer's sessions with the brokers that lead its partitions,
their epochs, and where the consumer routes fetches and acknowledgements."""

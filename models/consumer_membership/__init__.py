"""The KIP-848 consumer's membership manager: how the client reconciles the target assignment the
group coordinator sends with the topic names its metadata has resolved."""

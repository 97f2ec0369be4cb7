"""kmc.cluster: real Kafka. A KRaft cluster on loopback started by the toolkit (release.py, node.py,
cluster.py, with its faults in faults.py and network.py and its users in users.py), workloads
through a real client and their histories, the checkers of those histories, the decoded metadata
log mapped onto the models and validated against them, and campaigns that put it all together.
The engine (kmc.checker) never imports this package."""

"""kmc.oracles: Kafka's own Java classes as the reference the models are compared with.

Each module adapts one model to the Kafka classes that decide what the model's steps decide
(``kmc conform MODEL``); :mod:`kmc.oracles.jvm` starts the JVM on the pinned release's jars. The
engine never imports this package: oracles are found through the ``kmc.oracles`` entry points.
"""

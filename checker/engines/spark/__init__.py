"""The spark engine: the BFS across Spark executors. engine.py is the engine; job.py what a search
is; context.py starts Spark; driver.py and task.py are the driver's and the executors' sides;
shards.py the work directory; cluster.py a standalone cluster on loopback for tests and benchmarks."""

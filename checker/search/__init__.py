"""What every engine's search shares: the kernel (expanding a state, keys, the bound properties
and the first violation of each, the result), the explored graph, the observers (coverage, counted
in C by _c/counts.c where it was built, and the graph recorder), the liveness check, traces
rebuilt from keys, and progress reporting."""

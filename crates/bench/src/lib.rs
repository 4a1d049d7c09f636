//! storage-bench: the native I/O engine and the PiBenchmarks test set.

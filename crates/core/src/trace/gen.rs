//! Synthetic workloads (TODO by the generator work).

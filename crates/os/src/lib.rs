//! OS-primitive benchmarks.

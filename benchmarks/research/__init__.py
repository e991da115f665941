"""Research the benchmarks run and the product does not ship: fleet floors, lulls, blips
and the stress shapes (the benchmark scripts beside this package import it)."""

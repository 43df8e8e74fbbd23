"""Timing shared by the peer benchmarks: the median of repeats after a warm-up, as
bench/BenchSupport.h times dlc."""
import statistics
import time


def median_seconds(work, warmup, repeats):
    for _ in range(warmup):
        work()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        work()
        times.append(time.perf_counter() - start)
    return statistics.median(times)

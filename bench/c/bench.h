/* Shared by the benchmark programs: a monotonic clock in ns, and a comparator for qsort. */
#ifndef DEVICEID_BENCH_H
#define DEVICEID_BENCH_H
#include <time.h>

static inline double now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e9 + t.tv_nsec;
}

static inline int compare_doubles(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}
#endif

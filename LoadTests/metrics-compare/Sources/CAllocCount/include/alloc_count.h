#ifndef ALLOC_COUNT_H
#define ALLOC_COUNT_H
#include <stdint.h>

/// Starts counting allocations made by the calling thread (malloc, calloc, realloc, memalign,
/// posix_memalign, aligned_alloc), from zero.
void alloc_count_start(void);
/// Stops counting on the calling thread.
void alloc_count_stop(void);
/// Allocations and bytes requested on the calling thread since the last start.
uint64_t alloc_count_calls(void);
uint64_t alloc_count_bytes(void);

#endif

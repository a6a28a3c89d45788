// Interposes glibc's allocator entry points in the executable and forwards each to glibc's own
// __libc_* implementation, counting calls and requested bytes on threads that asked for it.
// Linux/glibc only: the benchmark runs on Parley's machines, which are.
#include "alloc_count.h"
#include <errno.h>
#include <stddef.h>

extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void *__libc_memalign(size_t, size_t);
extern void __libc_free(void *);

static __thread int counting;
static __thread uint64_t calls;
static __thread uint64_t bytes;

void alloc_count_start(void) { calls = 0; bytes = 0; counting = 1; }
void alloc_count_stop(void) { counting = 0; }
uint64_t alloc_count_calls(void) { return calls; }
uint64_t alloc_count_bytes(void) { return bytes; }

static inline void note(size_t n) {
    if (counting) { calls += 1; bytes += n; }
}

void *malloc(size_t n) { note(n); return __libc_malloc(n); }
void *calloc(size_t k, size_t n) { note(k * n); return __libc_calloc(k, n); }
void *realloc(void *p, size_t n) { note(n); return __libc_realloc(p, n); }
void free(void *p) { __libc_free(p); }
void *memalign(size_t a, size_t n) { note(n); return __libc_memalign(a, n); }
void *aligned_alloc(size_t a, size_t n) { note(n); return __libc_memalign(a, n); }
int posix_memalign(void **out, size_t a, size_t n) {
    note(n);
    void *p = __libc_memalign(a, n);
    if (!p) return ENOMEM;
    *out = p;
    return 0;
}

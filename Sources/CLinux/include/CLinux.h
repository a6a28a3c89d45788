// Linux interfaces that Swift's Glibc module does not export. Nothing else belongs here.
#ifndef PARLEY_CLINUX_H
#define PARLEY_CLINUX_H

#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/timerfd.h>
#include <sys/resource.h>
#include <sys/uio.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <malloc.h>
#include <pthread.h>

// accept4(2) for a non-blocking, close-on-exec socket, and pthread_setname_np(3). Both need
// _GNU_SOURCE, which this header must not define: it would change glibc's types here and make them
// clash with Swift's own Glibc module. CLinux.c defines it and implements these.
int parley_accept(int fd);
int parley_set_thread_name(pthread_t thread, const char *name);
// prctl(PR_SET_PDEATHSIG): `signal` comes when the parent process dies (a worker of `parley serve
// --workers` must not outlive its supervisor). -1 if the parent is no longer `expected_parent`.
int parley_die_with_parent(int signal, int expected_parent);

#endif

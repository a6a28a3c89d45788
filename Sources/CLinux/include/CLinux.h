// Linux interfaces that Swift's Glibc module does not export. Nothing else belongs here.
#ifndef PARLEY_CLINUX_H
#define PARLEY_CLINUX_H

#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/timerfd.h>
#include <sys/resource.h>
#include <sys/uio.h>
#include <sys/socket.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <malloc.h>
#include <pthread.h>

// accept4(2) for a non-blocking, close-on-exec socket, and pthread_setname_np(3). Both need
// _GNU_SOURCE, which this header must not define: it would change glibc's types here and make them
// clash with Swift's own Glibc module. CLinux.c defines it and implements these.
int parley_accept(int fd);
// pipe2(2) with O_CLOEXEC: both ends close-on-exec from the start, with no moment in which a
// process spawned by another thread could inherit them.
int parley_pipe_cloexec(int fds[2]);
int parley_set_thread_name(pthread_t thread, const char *name);
// prctl(PR_SET_PDEATHSIG): `signal` comes when the parent process dies (a worker of `parley serve
// --workers` must not outlive its supervisor). -1 if the parent is no longer `expected_parent`.
int parley_die_with_parent(int signal, int expected_parent);
// A mutex in memory that several processes map (MAP_SHARED): process-shared and robust, so that a
// process killed while holding it hands it to the next locker instead of stopping everyone.
// `parley_shared_mutex_size` bytes at `memory`, which must be suitably aligned (8 bytes).
int parley_shared_mutex_size(void);
int parley_shared_mutex_init(void *memory);
// 0 once held; what the dead holder was doing is left as it was (the caller's data must be
// consistent after any single store), so EOWNERDEAD is absorbed here.
int parley_shared_mutex_lock(void *memory);
int parley_shared_mutex_unlock(void *memory);
// Receive timestamps (SO_TIMESTAMPNS, whose value glibc's headers choose by the size of time_t, a
// macro Swift cannot import), and recvmsg(2) of one datagram with the time the kernel took it in
// (CLOCK_REALTIME nanoseconds; 0 when the datagram carried none), read from its control message
// with the CMSG_ macros. -1 with errno as recvmsg sets it.
int parley_enable_receive_timestamps(int fd);
long parley_receive_timestamped(int fd, void *buffer, unsigned long length, struct sockaddr *from, socklen_t *from_length,
                                long long *received_ns);

#endif

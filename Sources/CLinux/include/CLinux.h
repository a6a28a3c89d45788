// Linux interfaces that Swift's Glibc module does not export. Nothing else belongs here.
#ifndef PARLEY_CLINUX_H
#define PARLEY_CLINUX_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE  // accept4, pthread_setname_np
#endif
#include <sys/socket.h>
#include <pthread.h>

#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/timerfd.h>
#include <sys/resource.h>
#include <sys/uio.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <malloc.h>

// accept4(2) for a non-blocking, close-on-exec socket. (Under _GNU_SOURCE its address parameter is
// a transparent union that Swift cannot pass nil to.)
static inline int parley_accept(int fd) {
    return accept4(fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
}

#endif

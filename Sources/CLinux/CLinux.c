#define _GNU_SOURCE
#include <sys/socket.h>
#include <pthread.h>
#include <sys/prctl.h>
#include <unistd.h>
#include <errno.h>
#include <string.h>
#include <time.h>
#include <fcntl.h>
#include "CLinux.h"

int parley_accept(int fd) {
    return accept4(fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
}

int parley_pipe_cloexec(int fds[2]) {
    return pipe2(fds, O_CLOEXEC);
}

int parley_set_thread_name(pthread_t thread, const char *name) {
    return pthread_setname_np(thread, name);
}

int parley_die_with_parent(int signal, int expected_parent) {
    if (prctl(PR_SET_PDEATHSIG, signal) != 0) return -1;
    // The parent may have gone before the request took effect: then no signal will come.
    return getppid() == expected_parent ? 0 : -1;
}

int parley_shared_mutex_size(void) {
    return (int)sizeof(pthread_mutex_t);
}

int parley_shared_mutex_init(void *memory) {
    pthread_mutexattr_t attributes;
    int failed = pthread_mutexattr_init(&attributes);
    if (failed) return failed;
    failed = pthread_mutexattr_setpshared(&attributes, PTHREAD_PROCESS_SHARED);
    if (!failed) failed = pthread_mutexattr_setrobust(&attributes, PTHREAD_MUTEX_ROBUST);
    if (!failed) failed = pthread_mutex_init((pthread_mutex_t *)memory, &attributes);
    pthread_mutexattr_destroy(&attributes);
    return failed;
}

int parley_shared_mutex_lock(void *memory) {
    pthread_mutex_t *mutex = (pthread_mutex_t *)memory;
    int result = pthread_mutex_lock(mutex);
    if (result == EOWNERDEAD) result = pthread_mutex_consistent(mutex);
    return result;
}

int parley_shared_mutex_unlock(void *memory) {
    return pthread_mutex_unlock((pthread_mutex_t *)memory);
}

int parley_enable_receive_timestamps(int fd) {
    int on = 1;
    return setsockopt(fd, SOL_SOCKET, SO_TIMESTAMPNS, &on, sizeof on);
}

long parley_receive_timestamped(int fd, void *buffer, unsigned long length, struct sockaddr *from, socklen_t *from_length,
                                long long *received_ns) {
    struct iovec piece = { buffer, length };
    char control[CMSG_SPACE(sizeof(struct timespec))];
    struct msghdr message = { .msg_name = from, .msg_namelen = *from_length, .msg_iov = &piece, .msg_iovlen = 1,
                              .msg_control = control, .msg_controllen = sizeof control };
    ssize_t n = recvmsg(fd, &message, 0);
    if (n < 0) return -1;
    *from_length = message.msg_namelen;
    *received_ns = 0;
    for (struct cmsghdr *c = CMSG_FIRSTHDR(&message); c != NULL; c = CMSG_NXTHDR(&message, c)) {
        if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_TIMESTAMPNS) {
            struct timespec at;
            memcpy(&at, CMSG_DATA(c), sizeof at);
            *received_ns = (long long)at.tv_sec * 1000000000LL + at.tv_nsec;
        }
    }
    return (long)n;
}

#define _GNU_SOURCE
#include <sys/socket.h>
#include <pthread.h>
#include "CLinux.h"

int parley_accept(int fd) {
    return accept4(fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
}

int parley_set_thread_name(pthread_t thread, const char *name) {
    return pthread_setname_np(thread, name);
}

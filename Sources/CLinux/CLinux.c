#define _GNU_SOURCE
#include <sys/socket.h>
#include <pthread.h>
#include <sys/prctl.h>
#include <unistd.h>
#include "CLinux.h"

int parley_accept(int fd) {
    return accept4(fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
}

int parley_set_thread_name(pthread_t thread, const char *name) {
    return pthread_setname_np(thread, name);
}

int parley_die_with_parent(int signal, int expected_parent) {
    if (prctl(PR_SET_PDEATHSIG, signal) != 0) return -1;
    // The parent may have gone before the request took effect: then no signal will come.
    return getppid() == expected_parent ? 0 : -1;
}

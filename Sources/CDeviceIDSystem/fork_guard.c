// What fork() must not split, in one file because one prepare handler takes both locks, in order.
//
// The descriptors only the parent keeps (the TPM room's connections), closed in a forked child: the child of a program that
// forked while another thread talked to the TPM must not keep the parent's connection (swtpm
// serves one connection at a time; /dev/tpmrm0 keeps a connection's objects until its last copy
// is closed). A socket or a device is opened and registered, and unregistered and closed, under
// one lock that fork()'s prepare handler takes: a child is never forked between the two steps.
//
// And ESAPI's computing, which is libcrypto's under its locks (and DeviceID's own libcrypto calls,
// dids_computing_begin): a child forked while another thread
// held one of them (tpm2-tss frees an OSSL_LIB_CTX in Esys_CreatePrimary_Finish) waited for it for
// good in its own first TPM call (1 run in 40 of Tests/tpm/test_tpm_changes.py's fork test under
// load). ESAPI is called under a read lock that the prepare handler takes for writing, so fork()
// waits for the computing under way, never for the TPM: a TCTI's waits release it (dids_computing_pause).
#define _GNU_SOURCE
#include "CDeviceIDSystem.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <sys/socket.h>
#include <unistd.h>

#define TRACKED 256
static _Atomic int tracked[TRACKED];  // fd + 1, 0 where free
static pthread_mutex_t births = PTHREAD_MUTEX_INITIALIZER;

static pthread_rwlock_t computing;
static _Thread_local int computing_here;  // this thread's depth of dids_computing_begin
// Whether this thread holds the read lock: pthread_rwlock_rdlock may refuse (EAGAIN past glibc's
// reader count), and unlocking a lock not held is undefined. Refused, the computing goes on
// unlocked: a fork then may not wait for it, as before the lock existed.
static _Thread_local int computing_held;

static void make_computing_lock(void) {
    pthread_rwlockattr_t attr;
    pthread_rwlockattr_init(&attr);
    // A fork waiting for the lock goes before new computing (readers never nest: computing_here).
    pthread_rwlockattr_setkind_np(&attr, PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
    pthread_rwlock_init(&computing, &attr);
    pthread_rwlockattr_destroy(&attr);
}

void dids_computing_begin(void) {
    if (computing_here++ == 0) computing_held = pthread_rwlock_rdlock(&computing) == 0;
}
void dids_computing_end(void) {
    if (--computing_here == 0 && computing_held) {
        computing_held = 0;
        pthread_rwlock_unlock(&computing);
    }
}
int dids_computing_pause(void) {
    if (computing_here == 0 || !computing_held) return 0;
    computing_held = 0;
    pthread_rwlock_unlock(&computing);
    return 1;
}
void dids_computing_resume(int paused) {
    if (paused) computing_held = pthread_rwlock_rdlock(&computing) == 0;
}

// The order is computing, then births: a thread computing may make a socket.
static void before_fork(void) {
    pthread_rwlock_wrlock(&computing);
    pthread_mutex_lock(&births);
}
static void in_parent(void) {
    pthread_mutex_unlock(&births);
    pthread_rwlock_unlock(&computing);
}
// Made anew, not unlocked: glibc's rwlock knows its writer by thread ID, which the child's one
// thread does not share with the parent's thread that took it (unlocking it hung the fork test).
static void in_child(void) {
    pthread_mutex_init(&births, NULL);
    make_computing_lock();
    for (size_t i = 0; i < TRACKED; i++) {
        int slot = atomic_exchange(&tracked[i], 0);
        if (slot > 0) (void)close(slot - 1);
    }
}

// Registered when the library is loaded: fork() runs only the handlers registered before it began.
__attribute__((constructor)) static void install_fork_handler(void) {
    make_computing_lock();
    (void)pthread_atfork(before_fork, in_parent, in_child);
}

static int track(int fd) {
    for (size_t i = 0; i < TRACKED; i++) {
        int free_slot = 0;
        if (atomic_compare_exchange_strong(&tracked[i], &free_slot, fd + 1)) return 0;
    }
    return -1;
}

static void untrack(int fd) {
    for (size_t i = 0; i < TRACKED; i++) {
        int slot = fd + 1;
        if (atomic_compare_exchange_strong(&tracked[i], &slot, 0)) return;
    }
}

int dids_parent_only_socket(void) {
    pthread_mutex_lock(&births);
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd >= 0 && track(fd) != 0) {  // one a child would keep: none
        (void)close(fd);
        fd = -1;
        errno = EMFILE;
    }
    pthread_mutex_unlock(&births);
    return fd;
}

int dids_parent_only_open(const char *path, int flags) {
    pthread_mutex_lock(&births);
    int fd = open(path, flags | O_CLOEXEC | O_NOCTTY);
    int error = errno;
    if (fd >= 0 && track(fd) != 0) {  // one a child would keep: none
        (void)close(fd);
        fd = -1;
        error = EMFILE;
    }
    pthread_mutex_unlock(&births);
    errno = error;
    return fd;
}

void dids_parent_only_close(int fd, int busy) {
    if (fd < 0) return;
    pthread_mutex_lock(&births);
    untrack(fd);
    // Closing a device whose command is still running waits in the kernel for the command
    // (tpm_common_release flushes its work): not under the lock fork() takes. A child forked in
    // between keeps a copy of a connection whose command was abandoned, until it exits or execs.
    if (!busy) (void)close(fd);
    pthread_mutex_unlock(&births);
    if (busy) (void)close(fd);
}

void dids_parent_only_close_socket(int fd) {
    if (fd < 0) return;
    pthread_mutex_lock(&births);
    (void)shutdown(fd, SHUT_RDWR);  // the connection ends for every copy, wherever one is left
    untrack(fd);
    (void)close(fd);
    pthread_mutex_unlock(&births);
}

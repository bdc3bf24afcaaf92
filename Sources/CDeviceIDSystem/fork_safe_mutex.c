// Every mutex of the library, in one list that a pthread_atfork child handler walks: a child
// forked while another thread held any of them (a cache lookup, a store's lock) starts with all
// of them free instead of inheriting a lock held by a thread that does not exist there. The list
// has a lock of its own, taken across fork() (prepare/parent/child), so that the child never sees
// it half-changed.
#include "CDeviceIDSystem.h"

#include <pthread.h>
#include <stdlib.h>
#include <time.h>

struct dids_mutex {
    pthread_mutex_t mutex;
    struct dids_mutex *previous, *next;
    int listed;  // in the list; read with __atomic builtins, written under the registry's lock
};

static pthread_mutex_t registry = PTHREAD_MUTEX_INITIALIZER;
static struct dids_mutex *all;

static void before_fork(void) { pthread_mutex_lock(&registry); }
static void in_parent(void) { pthread_mutex_unlock(&registry); }
static void in_child(void) {
    pthread_mutex_init(&registry, NULL);
    for (struct dids_mutex *m = all; m; m = m->next) pthread_mutex_init(&m->mutex, NULL);
}
// Registered when the library is loaded: fork() runs only the handlers registered before it began
// (glibc counts them, then runs the prepare handlers with its lock released), so one registered by
// another thread's first call during a fork was skipped in that child (docs/ROBUSTNESS.md, "A TPM
// that changes, a process that forks").
//
// Swift's lazy globals are initialised under swift_once: a child forked while another thread is
// inside such an initialiser finds it in progress for good (measured: a child spinning in
// swift_once for DeviceIdentity.shared, forked during another thread's first call). So a prepare
// handler runs the initialisers the C entry points need before fork(), waiting for another
// thread's to finish; the entry points name them (dids_fork_settle) on their first call. It is
// registered after the handlers above, so that it runs before them (prepare handlers run
// last-registered first) and may still create mutexes.
static void (*settle_initialisers)(void);  // __atomic builtins only
static void settle(void) {
    void (*initialisers)(void) = __atomic_load_n(&settle_initialisers, __ATOMIC_ACQUIRE);
    if (initialisers) initialisers();
}
__attribute__((constructor)) static void install_handlers(void) {
    pthread_atfork(before_fork, in_parent, in_child);
    pthread_atfork(settle, NULL, NULL);
}

void dids_fork_settle(void (*initialisers)(void)) {
    if (!__atomic_load_n(&settle_initialisers, __ATOMIC_ACQUIRE))
        __atomic_store_n(&settle_initialisers, initialisers, __ATOMIC_RELEASE);
}

// A mutex joins the list at its first lock, not when it is made: it is made inside Swift's lazy
// initialisers (a global's Locked), and one blocked on the registry's lock, which fork() holds,
// was in progress in the child for good (measured: a child spinning in swift_once for
// Surroundings.detected, forked while another thread's first seal made it; 1 run in 15 of
// Tests/python/test_fork.py's sealing case). A mutex never locked needs no re-making in a child.
struct dids_mutex *dids_mutex_create(void) {
    struct dids_mutex *m = calloc(1, sizeof *m);
    if (!m) return NULL;
    pthread_mutex_init(&m->mutex, NULL);
    return m;
}

static void list(struct dids_mutex *m) {
    if (__atomic_load_n(&m->listed, __ATOMIC_ACQUIRE)) return;
    pthread_mutex_lock(&registry);
    if (!m->listed) {
        m->next = all;
        if (all) all->previous = m;
        all = m;
        __atomic_store_n(&m->listed, 1, __ATOMIC_RELEASE);
    }
    pthread_mutex_unlock(&registry);
}

void dids_mutex_destroy(struct dids_mutex *m) {
    if (!m) return;
    pthread_mutex_lock(&registry);
    if (m->listed) {
        if (m->previous) m->previous->next = m->next; else all = m->next;
        if (m->next) m->next->previous = m->previous;
    }
    pthread_mutex_unlock(&registry);
    pthread_mutex_destroy(&m->mutex);
    free(m);
}

void dids_mutex_lock(struct dids_mutex *m) {
    list(m);
    pthread_mutex_lock(&m->mutex);
}
void dids_mutex_unlock(struct dids_mutex *m) { pthread_mutex_unlock(&m->mutex); }

int dids_mutex_lock_until(struct dids_mutex *m, const struct timespec *realtime_deadline) {
    list(m);
    return pthread_mutex_timedlock(&m->mutex, realtime_deadline);
}

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
};

static pthread_mutex_t registry = PTHREAD_MUTEX_INITIALIZER;
static struct dids_mutex *all;
static pthread_once_t handlers_once = PTHREAD_ONCE_INIT;

static void before_fork(void) { pthread_mutex_lock(&registry); }
static void in_parent(void) { pthread_mutex_unlock(&registry); }
static void in_child(void) {
    pthread_mutex_init(&registry, NULL);
    for (struct dids_mutex *m = all; m; m = m->next) pthread_mutex_init(&m->mutex, NULL);
}
static void install_handlers(void) { pthread_atfork(before_fork, in_parent, in_child); }

struct dids_mutex *dids_mutex_create(void) {
    pthread_once(&handlers_once, install_handlers);
    struct dids_mutex *m = calloc(1, sizeof *m);
    if (!m) return NULL;
    pthread_mutex_init(&m->mutex, NULL);
    pthread_mutex_lock(&registry);
    m->next = all;
    if (all) all->previous = m;
    all = m;
    pthread_mutex_unlock(&registry);
    return m;
}

void dids_mutex_destroy(struct dids_mutex *m) {
    if (!m) return;
    pthread_mutex_lock(&registry);
    if (m->previous) m->previous->next = m->next; else all = m->next;
    if (m->next) m->next->previous = m->previous;
    pthread_mutex_unlock(&registry);
    pthread_mutex_destroy(&m->mutex);
    free(m);
}

void dids_mutex_lock(struct dids_mutex *m) { pthread_mutex_lock(&m->mutex); }
void dids_mutex_unlock(struct dids_mutex *m) { pthread_mutex_unlock(&m->mutex); }

int dids_mutex_lock_until(struct dids_mutex *m, const struct timespec *realtime_deadline) {
    return pthread_mutex_timedlock(&m->mutex, realtime_deadline);
}

// swift_once for the Embedded build (libdeviceid, the command): the one-time initialisation of
// every lazy Swift global, made safe across fork().
//
// The Embedded standard library's own swift_once marks a global "in progress" (1) and has every
// other caller spin until the initialising thread marks it done (-1). A child forked while some
// thread of its parent was inside an initialiser has no such thread: its first use of that global
// spins for good. LazyGlobals settles the library's locks before fork(), but every other lazy
// global (tables, texts, the redaction list's contents) stayed exposed (docs/ROBUSTNESS.md).
//
// Here "in progress" is the initialising thread's ID. A caller that finds a global in progress
// waits while that thread exists in this process; when it does not (this is a child forked during
// the initialiser, or the thread ended inside it), the caller takes the initialisation over. A
// child thus makes its own copy of a half-made global; what the parent's thread had half made is
// left to it, as everything else the fork copied is.
//
// The Embedded standard library's definition is weak (every Embedded module carries one), so this
// strong one is the one the link keeps (scripts/stages/abi checks that the library's swift_once is
// this one). The normal Swift build uses the runtime's swift_once, whose layout differs: this file
// compiles to nothing there.
#ifdef DEVICEID_EMBEDDED

#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <sys/syscall.h>
#include <unistd.h>

void swift_once(intptr_t *predicate, void (*initialiser)(void *), void *context);

enum { DONE = -1, NOT_STARTED = 0 };

static intptr_t this_thread(void) { return (intptr_t)syscall(SYS_gettid); }

// Whether the thread `tid` exists in this process (a signal 0 tests without sending).
static int thread_exists(intptr_t tid) {
    int saved = errno;
    int exists = !(syscall(SYS_tgkill, getpid(), (pid_t)tid, 0) == -1 && errno == ESRCH);
    errno = saved;
    return exists;
}

void swift_once(intptr_t *predicate, void (*initialiser)(void *), void *context) {
    intptr_t state = __atomic_load_n(predicate, __ATOMIC_ACQUIRE);
    if (state == DONE) return;
    intptr_t self = 0;
    for (;;) {
        if (state == NOT_STARTED || !thread_exists(state)) {
            if (!self) self = this_thread();
            if (__atomic_compare_exchange_n(predicate, &state, self, 0, __ATOMIC_ACQUIRE, __ATOMIC_ACQUIRE)) {
                initialiser(context);
                __atomic_store_n(predicate, DONE, __ATOMIC_RELEASE);
                return;
            }
            if (state == DONE) return;
            continue;  // another caller took it over first: wait for that one
        }
        int saved = errno;
        sched_yield();
        errno = saved;
        state = __atomic_load_n(predicate, __ATOMIC_ACQUIRE);
        if (state == DONE) return;
    }
}

#endif

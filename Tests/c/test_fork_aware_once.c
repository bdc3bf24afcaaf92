// fork_aware_once.c, the Embedded build's swift_once, on its own: each global is made once in a
// process; a child forked while another thread of its parent is inside an initialiser makes the
// global itself instead of waiting for a thread it does not have (the Embedded standard library's
// swift_once spins there for good); a thread that ends inside an initialiser hands it on.
//
//   cc -DDEVICEID_EMBEDDED -pthread Tests/c/test_fork_aware_once.c Sources/CDeviceIDSystem/fork_aware_once.c
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

void swift_once(intptr_t *predicate, void (*initialiser)(void *), void *context);

static int passed;
#define CHECK(cond, ...)                                                                            \
    do {                                                                                            \
        if (!(cond)) { fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__); fprintf(stderr, __VA_ARGS__); \
                       fputc('\n', stderr); exit(1); }                                              \
        passed++;                                                                                   \
    } while (0)

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec / 1e9;
}

// --- many threads, one global: the initialiser runs once, and every caller returns after it
static intptr_t counted_token;
static int runs;
static int value;
static void counted(void *context) {
    __atomic_add_fetch(&runs, 1, __ATOMIC_SEQ_CST);
    struct timespec pause = {0, 20 * 1000 * 1000};
    nanosleep(&pause, NULL);  // long enough for every other thread to arrive and wait
    value = *(int *)context;
}
static void *call_counted(void *unused) {
    (void)unused;
    static int forty_two = 42;
    swift_once(&counted_token, counted, &forty_two);
    return (void *)(intptr_t)value;
}

// --- a child forked while a parent's thread is inside the initialiser
static intptr_t slow_token;
static pthread_mutex_t gate = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t entered_cond = PTHREAD_COND_INITIALIZER, release_cond = PTHREAD_COND_INITIALIZER;
static int entered, released;
static const char *made_by;
static void slow(void *context) {
    pthread_mutex_lock(&gate);
    entered = 1;
    pthread_cond_broadcast(&entered_cond);
    while (!released) pthread_cond_wait(&release_cond, &gate);
    pthread_mutex_unlock(&gate);
    made_by = context;
}
static void quick(void *context) { made_by = context; }
static void *call_slow(void *unused) {
    (void)unused;
    swift_once(&slow_token, slow, "the parent's thread");
    return NULL;
}

// --- a thread that ends inside an initialiser
static intptr_t abandoned_token;
static void abandon(void *unused) { (void)unused; pthread_exit(NULL); }
static void *call_abandon(void *unused) {
    (void)unused;
    swift_once(&abandoned_token, abandon, NULL);
    return NULL;
}

int main(void) {
    pthread_t threads[16];
    for (int i = 0; i < 16; i++) pthread_create(&threads[i], NULL, call_counted, NULL);
    for (int i = 0; i < 16; i++) {
        void *seen;
        pthread_join(threads[i], &seen);
        CHECK((intptr_t)seen == 42, "a caller returned before the global was made: it saw %ld", (long)(intptr_t)seen);
    }
    CHECK(runs == 1, "16 threads ran the initialiser %d times, not once", runs);
    CHECK(counted_token == -1, "the global is not marked made: %ld", (long)counted_token);

    pthread_t maker;
    pthread_create(&maker, NULL, call_slow, NULL);
    pthread_mutex_lock(&gate);
    while (!entered) pthread_cond_wait(&entered_cond, &gate);
    pthread_mutex_unlock(&gate);
    pid_t child = fork();
    if (child == 0) {
        alarm(5);  // the Embedded standard library's swift_once spins here for good
        swift_once(&slow_token, quick, "the child");
        _exit(made_by && made_by[4] == 'c' && slow_token == -1 ? 0 : 3);
    }
    double started = now();
    int status = 0;
    waitpid(child, &status, 0);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0,
          "the child forked inside the parent's initialiser did not make the global itself (status %#x, %.1f s)",
          status, now() - started);
    CHECK(now() - started < 1, "the child took %.1f s", now() - started);
    CHECK(made_by == NULL, "the child's initialiser ran in the parent");
    pthread_mutex_lock(&gate);
    released = 1;
    pthread_cond_broadcast(&release_cond);
    pthread_mutex_unlock(&gate);
    pthread_join(maker, NULL);
    CHECK(made_by && made_by[4] == 'p' && slow_token == -1, "the parent's global is not its own thread's");
    swift_once(&slow_token, quick, "a later caller");
    CHECK(made_by[4] == 'p', "a made global was made again");

    pthread_t quitter;
    pthread_create(&quitter, NULL, call_abandon, NULL);
    pthread_join(quitter, NULL);
    CHECK(abandoned_token > 0, "the quitter's initialiser is not in progress: %ld", (long)abandoned_token);
    made_by = NULL;
    swift_once(&abandoned_token, quick, "the next caller");
    CHECK(made_by && made_by[4] == 'n' && abandoned_token == -1, "an initialiser whose thread ended was not taken over");

    printf("once: %d passed\n", passed);
    return 0;
}

/* A stand-in for an optional library whose loading takes long: its constructor says it has
 * begun (a byte on the descriptor $SLOW_LIBRARY_READY_FD), then sleeps 400 ms, inside dlopen().
 * Built as libtss2-esys.so.0 and put first on LD_LIBRARY_PATH for test_fork_load, where the real
 * library's load is too quick to fork inside on purpose. It has none of the real one's functions:
 * DeviceID finds it "too old" and answers UNAVAILABLE. */
#include <stdlib.h>
#include <unistd.h>

__attribute__((constructor)) static void load_slowly(void) {
    const char *fd = getenv("SLOW_LIBRARY_READY_FD");
    if (fd != NULL) (void)!write(atoi(fd), "r", 1);
    usleep(400 * 1000);
}

#define _GNU_SOURCE
#include "CDeviceIDLibc.h"

int dids_errno(void) { return errno; }

void dids_set_errno(int value) { errno = value; }

int dids_open(const char *path, int flags, mode_t mode) { return open(path, flags, mode); }

int dids_openat(int directory, const char *path, int flags, mode_t mode) {
    return openat(directory, path, flags, mode);
}

int dids_fcntl_lock(int fd, int command, struct flock *lock) { return fcntl(fd, command, lock); }

const char *dids_dirent_name(const struct dirent *entry) { return entry->d_name; }

int dids_pipe_cloexec(int ends[2]) { return pipe2(ends, O_CLOEXEC); }

#ifndef CDEVICEID_LIBC_H
#define CDEVICEID_LIBC_H
// The C library, as DeviceID's Swift code sees it in both builds. Embedded Swift has no Glibc
// module, so the headers come through this module there and here alike; what Swift cannot import
// from them (the errno macro, the variadic open/openat/fcntl) has a plain function below.
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <limits.h>
#include <net/if.h>
#include <netpacket/packet.h>
#include <poll.h>
#include <pthread.h>
#include <pwd.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

/// The calling thread's errno.
int dids_errno(void);
void dids_set_errno(int value);

/// open(2) and openat(2) with the mode always passed (they are variadic in C).
int dids_open(const char *path, int flags, mode_t mode);
int dids_openat(int directory, const char *path, int flags, mode_t mode);

/// fcntl(2) for the record-lock commands (F_SETLK, F_SETLKW, F_GETLK).
int dids_fcntl_lock(int fd, int command, struct flock *lock);

/// pipe2(2) with O_CLOEXEC (a GNU extension the headers show only with _GNU_SOURCE).
int dids_pipe_cloexec(int ends[2]);

/// A directory entry's name, read in place: readdir's records are only as long as their name.
const char *dids_dirent_name(const struct dirent *entry);

#endif

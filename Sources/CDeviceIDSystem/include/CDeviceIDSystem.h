#ifndef CDEVICEID_SYSTEM_H
#define CDEVICEID_SYSTEM_H
// The system calls the library's Swift cannot make, each in C for a stated reason:
//   ethtool.c             SIOCETHTOOL: ioctl is variadic and struct ethtool_perm_addr ends in a
//                         flexible array member, neither of which Swift imports;
//   secure_environment.c  secure_getenv needs _GNU_SOURCE, which the Swift importer does not set;
//   atomic_counter.c      C11 atomics: Embedded Swift on Linux has no Synchronization module;
//   fork_safe_mutex.c     every mutex in one list a pthread_atfork child handler frees, with
//                         prepare/parent handlers around it (three C function pointers), and
//                         the prepare handler that settles Swift's lazy globals before a fork;
//   fork_guard.c          what fork() waits for (libcrypto's computing) and the descriptors a
//                         forked child closes, under one prepare handler that takes its two locks
//                         in order.
// Internal to libdeviceid: the dids_ prefix keeps them out of the exported deviceid_* set.
#include <stddef.h>
#include <stdint.h>

/// Reads the permanent hardware address of `ifname` with ETHTOOL_GPERMADDR.
/// Returns the address length (6 for Ethernet) and fills `out`, 0 when the driver reports none,
/// or -errno (-EOPNOTSUPP when the driver has no ethtool support).
int dids_permanent_address(const char *ifname, unsigned char *out, size_t out_size);

/// An atomic 64-bit counter (acquire loads, acquire-release increments), for Swift code that
/// must build without the Synchronization module (Embedded Swift on Linux).
uint64_t dids_counter_load(const uint64_t *counter);
void dids_counter_increment(uint64_t *counter);

/// A pthread mutex the library's one atfork child handler re-initialises in every forked child
/// (with every other one), so that no child inherits it held by a thread that is not there.
/// create returns NULL when memory runs out.
struct timespec;
typedef struct dids_mutex dids_mutex;
dids_mutex *dids_mutex_create(void);
void dids_mutex_destroy(dids_mutex *m);
void dids_mutex_lock(dids_mutex *m);
void dids_mutex_unlock(dids_mutex *m);
/// pthread_mutex_timedlock: 0, or ETIMEDOUT at the CLOCK_REALTIME deadline.
int dids_mutex_lock_until(dids_mutex *m, const struct timespec *realtime_deadline);

/// Registers, once per process, a pthread_atfork prepare handler that calls `initialisers` (the
/// Swift lazy globals the entry points use) before every fork: none is then mid-initialisation in
/// a child. The first caller's function is kept.
void dids_fork_settle(void (*initialisers)(void));

/// Computing that fork() waits for: libcrypto's work, DeviceID's own and tpm2-tss's ESAPI (whose
/// computing is libcrypto's), is done between begin and end (they nest), under a lock fork()'s
/// prepare handler takes for writing, so that a child is never forked while another thread holds
/// one of libcrypto's locks (an implicit fetch in EVP_EncryptInit_ex takes its store's lock), which
/// the child's own first call would wait for for good. Waiting is not computing: a thread that
/// waits for a device pauses it (pause's answer goes to resume), and fork() need not wait for that.
void dids_computing_begin(void);
void dids_computing_end(void);
int dids_computing_pause(void);
void dids_computing_resume(int paused);

/// Descriptors only the parent keeps: closed in every forked child (a child must not keep its
/// parent's connection to a TPM). A Unix stream socket born non-blocking and close-on-exec (-1 and
/// errno), and its end: shut down for every copy, then closed; a file opened close-on-exec with
/// `flags` (-1 and errno), and its end (`busy`: a command is still running, whose end the close
/// waits for in the kernel: then closed outside the lock fork() takes). EMFILE when 256 are open.
int dids_parent_only_socket(void);
void dids_parent_only_close_socket(int fd);
int dids_parent_only_open(const char *path, int flags);
void dids_parent_only_close(int fd, int busy);

/// secure_getenv(3): NULL in a set-user-ID, set-group-ID or capability-raised process.
const char *dids_secure_getenv(const char *name);

#endif

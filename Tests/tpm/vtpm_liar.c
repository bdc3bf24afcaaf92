// A TPM that lies behind a resource manager of the kernel's own, in the qemu guest
// (Tests/tpm/test_hostile_tpm_device.py): the kernel's vtpm proxy (/dev/vtpmx) makes a new TPM,
// /dev/tpmN with its resource manager /dev/tpmrmN, whose commands come to this program; each is
// sent on to the real TPM (/dev/tpm0, the raw device: /dev/tpmrmN's resource manager is the one
// that keeps each connection's objects apart) and its answer given back, but for one answer, the
// first that RULE picks, which is rewritten once; every later answer is the TPM's own:
//
//   replay SOURCE TARGET   a CreatePrimary whose template holds TARGET (a unique's 32 bytes, hex)
//                          is never sent: it gets the answer the TPM gave earlier to one holding
//                          SOURCE (another app's key, in an answer of exactly the shape asked for)
//   flip CODE              the last byte of the parameters of the first answer to command CODE
//                          (hex; one of no response handles: Certify, Sign) flipped
//   short INDEX N          the N-th NV_ReadPublic of INDEX (hex) answered with its first 12
//                          bytes, its header saying 12: whole as far as the transport can tell
//
// Prints the resource manager's path (/dev/tpmrmN) on a line of its own, then serves until its
// new TPM is closed or it is killed.
//
//   vtpm_liar RULE ARGS...
#define _GNU_SOURCE  // memmem
#include <fcntl.h>
#include <linux/vtpm_proxy.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#define TPM2_CC_CREATE_PRIMARY 0x131u
#define TPM2_CC_NV_READ_PUBLIC 0x169u
#define LARGEST 4096

static uint32_t be32(const uint8_t *p) {
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static void put_be32(uint8_t *p, uint32_t v) {
    for (int i = 0; i < 4; i++) p[i] = (uint8_t)(v >> (24 - 8 * i));
}

static int unhex(const char *text, uint8_t *out, size_t size) {
    if (strlen(text) != 2 * size) return -1;
    for (size_t i = 0; i < size; i++) {
        unsigned byte;
        if (sscanf(text + 2 * i, "%2x", &byte) != 1) return -1;
        out[i] = (uint8_t)byte;
    }
    return 0;
}

static int holds(const uint8_t *data, size_t size, const uint8_t *part, size_t n) {
    return memmem(data, size, part, n) != NULL;
}

// The TPM's answer to `command` into `answer`; its size, or -1.
static ssize_t forward(int tpm, const uint8_t *command, size_t size, uint8_t *answer) {
    if (write(tpm, command, size) != (ssize_t)size) return -1;
    ssize_t n = read(tpm, answer, LARGEST);
    return n >= 10 && be32(answer + 2) == (uint32_t)n ? n : -1;
}

static int fail(const char *what) {
    perror(what);
    return 1;
}

static int usage(void) {
    fputs("usage: vtpm_liar replay SOURCE TARGET | flip CODE | short INDEX N\n", stderr);
    return 2;
}

int main(int argc, char **argv) {
    if (argc < 3) return usage();
    const char *rule = argv[1];
    uint8_t source[32], target[32];
    uint32_t code = 0, index = 0, nth = 0;
    if (strcmp(rule, "replay") == 0 && argc == 4) {
        if (unhex(argv[2], source, 32) || unhex(argv[3], target, 32)) return usage();
    } else if (strcmp(rule, "flip") == 0 && argc == 3) {
        code = (uint32_t)strtoul(argv[2], NULL, 16);
    } else if (strcmp(rule, "short") == 0 && argc == 4) {
        index = (uint32_t)strtoul(argv[2], NULL, 16);
        nth = (uint32_t)strtoul(argv[3], NULL, 10);
    } else {
        return usage();
    }

    int tpm = open("/dev/tpm0", O_RDWR);
    int vtpmx = open("/dev/vtpmx", O_RDWR);
    if (tpm < 0 || vtpmx < 0) return fail("open /dev/tpm0, /dev/vtpmx");
    struct vtpm_proxy_new_dev made = {.flags = VTPM_PROXY_FLAG_TPM2};
    if (ioctl(vtpmx, VTPM_PROXY_IOC_NEW_DEV, &made) != 0) return fail("VTPM_PROXY_IOC_NEW_DEV");
    close(vtpmx);
    printf("/dev/tpmrm%u\n", made.tpm_num);
    fflush(stdout);

    uint8_t command[LARGEST], answer[LARGEST], kept[LARGEST];
    ssize_t kept_size = 0;
    int done = 0;
    uint32_t seen = 0;
    for (;;) {
        ssize_t size = read((int)made.fd, command, sizeof command);
        if (size < 10) return 0;  // the new TPM was closed
        uint32_t cc = be32(command + 6);
        ssize_t n;
        if (cc == TPM2_CC_SET_LOCALITY) {  // the proxy's own command, for the TPM behind it
            static const uint8_t ok[10] = {0x80, 0x01, 0, 0, 0, 10, 0, 0, 0, 0};
            memcpy(answer, ok, sizeof ok);
            n = sizeof ok;
        } else if (!done && cc == TPM2_CC_CREATE_PRIMARY && kept_size && holds(command, (size_t)size, target, 32)) {
            memcpy(answer, kept, (size_t)kept_size);
            n = kept_size;
            done = 1;
        } else if ((n = forward(tpm, command, (size_t)size, answer)) < 0) {
            return fail("the TPM's answer");
        } else if (done || be32(answer + 6) != 0) {
            // answered as the TPM answered
        } else if (strcmp(rule, "replay") == 0 && cc == TPM2_CC_CREATE_PRIMARY && !kept_size
                   && holds(command, (size_t)size, source, 32)) {
            memcpy(kept, answer, (size_t)n);
            kept_size = n;
        } else if (strcmp(rule, "flip") == 0 && cc == code && n >= 14) {
            // header (10), parameterSize (4), the parameters, then the sessions' part
            size_t end = 14 + be32(answer + 10);
            if (end > 14 && end <= (size_t)n) {
                answer[end - 1] ^= 1;
                done = 1;
            }
        } else if (strcmp(rule, "short") == 0 && cc == TPM2_CC_NV_READ_PUBLIC && size >= 14
                   && be32(command + 10) == index && ++seen == nth && n > 12) {
            put_be32(answer + 2, 12);
            n = 12;
            done = 1;
        }
        if (write((int)made.fd, answer, (size_t)n) != n) return fail("answering");
    }
}

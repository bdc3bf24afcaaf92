#include "CDeviceIDUUID.h"

#include <errno.h>
#include <sys/random.h>

int dids_random_fill(void *buffer, size_t size) {
    unsigned char *p = buffer;
    size_t got = 0;
    while (got < size) {
        ssize_t n = getrandom(p + got, size - got, 0);
        if (n < 0) {
            if (errno == EINTR) continue;
            return -errno;
        }
        got += (size_t)n;
    }
    return 0;
}

void dids_make_v4(unsigned char bytes[16]) {
    bytes[6] = (unsigned char)((bytes[6] & 0x0F) | 0x40);
    bytes[8] = (unsigned char)((bytes[8] & 0x3F) | 0x80);
}

void dids_hex_encode(const unsigned char *bytes, size_t size, int uppercase, char *out) {
    const char *digits = uppercase ? "0123456789ABCDEF" : "0123456789abcdef";
    for (size_t i = 0; i < size; i++) {
        out[2 * i] = digits[bytes[i] >> 4];
        out[2 * i + 1] = digits[bytes[i] & 15];
    }
    out[2 * size] = '\0';
}

void dids_uuid_format(const unsigned char bytes[16], int uppercase, int compact, char *out) {
    if (compact) {
        dids_hex_encode(bytes, 16, uppercase, out);
        return;
    }
    /* 8-4-4-4-12: the groups' byte ranges. */
    static const unsigned char groups[5][2] = {{0, 4}, {4, 6}, {6, 8}, {8, 10}, {10, 16}};
    char *p = out;
    for (int g = 0; g < 5; g++) {
        if (g) *p++ = '-';
        dids_hex_encode(bytes + groups[g][0], (size_t)(groups[g][1] - groups[g][0]), uppercase, p);
        p += 2 * (groups[g][1] - groups[g][0]);
    }
    *p = '\0';
}

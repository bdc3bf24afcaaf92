#include "CDeviceIDFastPaths.h"

#include <string.h>

#include "deviceid.h"

static _Thread_local char last_error[DEVICEID_REASON_MAX];

void dids_copy_text(char *out, size_t size, const char *text) {
    size_t n = strnlen(text, size - 1);
    /* A text cut short must stay valid UTF-8: never end inside a multi-byte character. Back off
       over continuation bytes (10xxxxxx) to the lead byte of the character that was cut, and drop
       it too unless the whole character fits. */
    if (text[n] != '\0') {
        size_t start = n;
        while (start > 0 && ((unsigned char)text[start] & 0xC0) == 0x80) start--;
        n = start;
    }
    memcpy(out, text, n);
    out[n] = '\0';
}

void dids_set_last_error(const char *text) {
    if (text == NULL) {
        last_error[0] = '\0';
        return;
    }
    dids_copy_text(last_error, sizeof last_error, text);
}

const char *dids_last_error(void) { return last_error; }

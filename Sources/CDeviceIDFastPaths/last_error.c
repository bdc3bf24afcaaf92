#include "CDeviceIDFastPaths.h"

#include <string.h>

static _Thread_local char last_error[512];

void dids_set_last_error(const char *text) {
    if (text == NULL) {
        last_error[0] = '\0';
        return;
    }
    size_t n = strnlen(text, sizeof last_error - 1);
    /* A text cut short must stay valid UTF-8: never end inside a multi-byte character. Back off
       over continuation bytes (10xxxxxx) to the lead byte of the character that was cut, and drop
       it too unless the whole character fits. */
    if (text[n] != '\0') {
        size_t start = n;
        while (start > 0 && ((unsigned char)text[start] & 0xC0) == 0x80) start--;
        n = start;
    }
    memcpy(last_error, text, n);
    last_error[n] = '\0';
}

const char *dids_last_error(void) { return last_error; }

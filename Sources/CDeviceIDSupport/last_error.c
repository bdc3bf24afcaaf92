#include "CDeviceIDSupport.h"

#include <string.h>

static _Thread_local char last_error[512];

void dids_set_last_error(const char *text) {
    if (text == NULL) {
        last_error[0] = '\0';
        return;
    }
    size_t n = strnlen(text, sizeof last_error - 1);
    memcpy(last_error, text, n);
    last_error[n] = '\0';
}

const char *dids_last_error(void) { return last_error; }

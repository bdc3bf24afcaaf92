#include "CDeviceIDCLI.h"

static int saved_argc;
static char **saved_argv;

static void keep_arguments(int argc, char **argv, char **envp) {
    (void)envp;
    saved_argc = argc;
    saved_argv = argv;
}

__attribute__((section(".init_array"), used))
static void (*const keep_arguments_entry)(int, char **, char **) = keep_arguments;

int dids_cli_argc(void) { return saved_argc; }

const char *dids_cli_argument(int index) {
    return index >= 0 && index < saved_argc ? saved_argv[index] : 0;
}

/* A C program that asks for its ID once: the peak-RSS subject beside the CLI. */
#include <deviceid.h>
#include <stdio.h>

int main(int argc, char **argv) {
    char id[DEVICEID_UUID_STRING_MAX];
    if (deviceid_get(argc > 1 ? argv[1] : "bench.app", id, sizeof id) != 0) return 1;
    puts(id);
    return 0;
}

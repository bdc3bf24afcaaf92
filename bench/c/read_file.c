/* The floor of a mirror-first answer: a C program that opens and reads one small file (the
 * mirror record is about 200 bytes) and prints it. Whole-process time is what bench/run compares.
 *
 *   read_file PATH */
#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>

int main(int argc, char **argv) {
    if (argc != 2) return 2;
    char buffer[512];
    int fd = open(argv[1], O_RDONLY | O_CLOEXEC);
    if (fd < 0) return 1;
    ssize_t n = read(fd, buffer, sizeof buffer);
    close(fd);
    if (n <= 0) return 1;
    fwrite(buffer, 1, (size_t)n, stdout);
    return 0;
}

/* The floor of every load benchmark: read(2) the file into a 1 MiB buffer and count newlines.
   (`cat >/dev/null` may copy nothing: it can splice.) Built by bench/formats.py. */
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char **argv) {
    static char buf[1 << 20];
    unsigned long long lines = 0;
    for (int i = 1; i < argc; i++) {
        int fd = open(argv[i], O_RDONLY);
        if (fd < 0) { perror(argv[i]); return 2; }
        ssize_t n;
        while ((n = read(fd, buf, sizeof buf)) > 0) {
            const char *p = buf, *end = buf + n;
            while ((p = memchr(p, '\n', end - p)) != NULL) { lines++; p++; }
        }
        if (n < 0) { perror(argv[i]); return 2; }
        close(fd);
    }
    printf("%llu\n", lines);
    return 0;
}

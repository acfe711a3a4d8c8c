/* SPDX-License-Identifier: MIT */
/* Sanitizer builds: a writev() whose buffer runs past its allocation, made through preon's interposed writev()
 * (src/interpose/, linked in here as into preon), must still be reported by AddressSanitizer: the layer passes the
 * call on to the next definition, the sanitizer's interceptor, rather than to the system call behind its back.
 * Exits 0 if nothing was reported (the test then fails); ASan ends it with its report otherwise. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/uio.h>
#include <unistd.h>
#include "preon/interpose.h"

int main(void)
{
    if (!preon_interpose_linked) {
        fprintf(stderr, "asan_writev: src/interpose/ is not linked in\n");
        return 2;
    }
    int fd = open("/dev/null", O_WRONLY | O_CLOEXEC);
    char *buf = malloc(16);
    struct iovec iov = {.iov_base = buf, .iov_len = 32}; /* 16 bytes past the end */
    for (int i = 0; i < 16; i++)
        buf[i] = 'x';
    ssize_t n = writev(fd, &iov, 1);
    printf("asan_writev: writev wrote %zd bytes unseen\n", n);
    free(buf);
    close(fd);
    return 0;
}

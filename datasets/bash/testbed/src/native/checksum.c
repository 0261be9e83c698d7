#include <stdio.h>
#include "checksum.h"

#define MOD_ADLER 65521

uint32_t adler32(const unsigned char *data, size_t len)
{
    uint32_t a = 1, b = 0;
    for (size_t i = 0; i < len; i++) {
        a = (a + data[i]) % MOD_ADLER;
        b = (b + a) % MOD_ADLER;
    }
    return (b << 16) | a;
}

int main(int argc, char **argv)
{
    unsigned char buf[4096];
    size_t n;
    uint32_t sum = 1;
    FILE *f = argc > 1 ? fopen(argv[1], "rb") : stdin;
    if (!f) {
        perror("fopen");
        return 1;
    }
    while ((n = fread(buf, 1, sizeof buf, f)) > 0)
        sum = adler32(buf, n); /* TODO: combine checksums of successive blocks */
    printf("%08x\n", sum);
    return 0;
}

/*
 * hdr_check: records the delays (ns, one per line on stdin) into swtester's histogram (hdr.h) and prints it as
 * swtester does, so that a test can compare it with the hdrhistogram library's own recording of the same delays.
 */
#include "hdr.h"

int main(void) {
    struct hdr h;
    if (!hdr_init(&h)) {
        fputs("hdr_check: out of memory for the histogram\n", stderr);
        return 2;
    }
    unsigned long long value;
    while (scanf("%llu", &value) == 1) hdr_record(&h, value);
    hdr_print(&h, stdout);
    putchar('\n');
    free(h.counts);
    return 0;
}

/*
 * pacing_check: one sender's schedule (pacing.h) driven by made-up clocks, so that a test can check its catch-up
 * and slips without a network or a real stall. Arguments: rate (frames/s) and frames; stdin: the times (ns after
 * the schedule's start, ascending) at which the sender gets its CPU. At each, it sends what pacing_take() says is
 * due, back to back and in no time, until nothing is. Prints one JSON document: every send as [time, first frame,
 * frames], the frames sent and the schedule's figures.
 */
#include <stdio.h>
#include <stdlib.h>

#include "pacing.h"

#define ORIGIN 1000000000ull /* ns: the schedule's start on the made-up clock (any time after 0) */

int main(int argc, char **argv) {
    if (argc != 3 || atof(argv[1]) <= 0 || atoll(argv[2]) <= 0) {
        fputs("usage: pacing_check RATE FRAMES < wake-up times (ns after the start)\n", stderr);
        return 2;
    }
    struct pacing p = {.start = ORIGIN, .ns_per_frame = 1e9 / atof(argv[1]), .frames = (uint64_t)atoll(argv[2])};
    uint64_t seq = 0, next = 0;
    unsigned long long at;
    printf("{\"sends\": [");
    for (int first = 1; seq < p.frames && scanf("%llu", &at) == 1;) {
        uint64_t n;
        while (seq < p.frames && (n = pacing_take(&p, ORIGIN + at, seq, &next)) > 0) {
            printf("%s[%llu, %llu, %llu]", first ? "" : ", ", at, (unsigned long long)seq, (unsigned long long)n);
            seq += n;
            first = 0;
        }
    }
    printf("], \"sent\": %llu, \"max_lag_ns\": %llu, \"max_burst\": %llu, \"slips\": %llu, \"slip_ns\": %llu, "
           "\"catch_up_limit\": %d}\n", (unsigned long long)seq, (unsigned long long)p.max_lag_ns,
           (unsigned long long)p.max_burst, (unsigned long long)p.slips, (unsigned long long)p.slip_ns, CATCH_UP);
    return 0;
}

/*
 * pacing_check: one sender's schedule (pacing.h) driven by made-up clocks, so that a test can check its catch-up
 * and slips without a network or a real stall. Arguments: rate (frames/s) and frames; stdin: the times (ns after
 * the schedule's start, ascending) at which the sender gets its CPU. At each, it sends what pacing_take() says is
 * due, back to back and in no time, until nothing is. Prints one JSON document: every send as [time, first frame,
 * frames], the frames sent and the schedule's figures.
 */
#define _GNU_SOURCE /* clockid_t in tool.h */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "pacing.h"
#include "tool.h"

#define ORIGIN 1000000000ull /* ns: the schedule's start on the made-up clock (any time after 0) */
/* swtester's own bounds (--rate; frames per direction, numbered in 32 bits), so that what is checked here is a
 * schedule swtester could run. */
#define MAX_RATE 1e9
#define MIN_RATE 0.001
#define MAX_FRAMES (1ll << 32)

static void die(const char *msg) {
    fprintf(stderr, "pacing_check: %s\n", msg);
    exit(2);
}

int main(int argc, char **argv) {
    if (argc != 3) {
        fprintf(stderr, "pacing_check: usage: pacing_check RATE [%g-%g] FRAMES [1-%lld] < wake-up times (ns after the "
                "start)\n", MIN_RATE, MAX_RATE, MAX_FRAMES);
        return 2;
    }
    /* Checked, not atof/atoll: those read "1x" as 1, "abc" as 0 and "1.5" frames as 1, and ran another schedule. */
    double rate = parse_number(argv[1], "RATE", MIN_RATE, MAX_RATE);
    struct pacing p = {.start = ORIGIN, .ns_per_frame = 1e9 / rate,
                       .frames = (uint64_t)parse_integer(argv[2], "FRAMES", 1, MAX_FRAMES)};
    uint64_t seq = 0, next = 0;
    /* Every wake-up is read before anything is printed: scanf("%llu") stopped at a mistyped one ("1000x") and the
     * schedule ran without the wake-ups after it, and a refusal must leave no partial report on stdout. */
    size_t count = 0, room = 1024;
    unsigned long long *wakes = malloc(room * sizeof *wakes);
    char token[64];
    while (wakes && scanf("%63s", token) == 1) {
        if (count == room) wakes = realloc(wakes, (room *= 2) * sizeof *wakes);
        if (wakes) wakes[count++] = (unsigned long long)parse_integer(token, "wake-up time", 0, INT64_MAX);
    }
    if (!wakes) die("out of memory for the wake-up times");
    printf("{\"sends\": [");
    for (size_t w = 0, first = 1; seq < p.frames && w < count; w++) {
        unsigned long long at = wakes[w];
        uint64_t n;
        while (seq < p.frames && (n = pacing_take(&p, ORIGIN + at, seq, &next)) > 0) {
            printf("%s[%llu, %llu, %llu]", first ? "" : ", ", at, (unsigned long long)seq, (unsigned long long)n);
            seq += n;
            first = 0;
        }
    }
    printf("], \"sent\": %llu, \"max_lag_ns\": %llu, \"start_lag_ns\": %llu, \"max_burst\": %llu, \"slips\": %llu, "
           "\"slip_ns\": %llu, \"catch_up_limit\": %d}\n", (unsigned long long)seq, (unsigned long long)p.max_lag_ns,
           (unsigned long long)p.start_lag_ns, (unsigned long long)p.max_burst, (unsigned long long)p.slips,
           (unsigned long long)p.slip_ns, CATCH_UP);
    return 0;
}

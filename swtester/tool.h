/*
 * What swtester and stall_probe share: the clock they read and their checks of a number on the command line.
 * A number out of range or mistyped is one line on stderr and exit status 2 (die(), which the including
 * program defines with its own name), never a run with another value: atof, atoi, strtoull and sscanf read
 * "1x" as 1, "x" as 0, "-1" as 2^64-1 and "nan" as a number that passes no range check and fails none.
 */
#ifndef SWTESTER_TOOL_H
#define SWTESTER_TOOL_H

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static void die(const char *msg); /* the including program's: "<program>: msg" on stderr, exit 2 */

static inline uint64_t now_ns(clockid_t clock) {
    struct timespec ts;
    clock_gettime(clock, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static double parse_number(const char *text, const char *what, double low, double high) {
    char *end;
    double v = strtod(text, &end);
    /* Written so that NaN fails too: strtod takes "nan", and a NaN tail never ended the receiver, a NaN timeout
     * counted no frame late, a NaN rate or duration made the frame count undefined. */
    if (*text == '\0' || *end != '\0' || !(v >= low && v <= high)) {
        char msg[160];
        snprintf(msg, sizeof msg, "%s=%s: allowed %g..%g", what, text, low, high);
        die(msg);
    }
    return v;
}

/* A count, a size or an index: a decimal integer within low..high. parse_number's value cast to int dropped a
 * fraction without a word (--size0 100.5 sent 100-byte frames, --threads 2.5 two threads). */
static long parse_integer(const char *text, const char *what, long low, long high) {
    char *end;
    errno = 0;
    long v = strtol(text, &end, 10);
    if (*text == '\0' || *end != '\0' || errno || v < low || v > high) {
        char msg[160];
        snprintf(msg, sizeof msg, "%s=%s: allowed %ld..%ld (an integer)", what, text, low, high);
        die(msg);
    }
    return v;
}

#endif

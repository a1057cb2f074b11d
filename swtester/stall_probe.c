/*
 * stall_probe: the stalls a sender on this CPU cannot avoid, measured by a thread that does nothing else. It sleeps
 * to a deadline every pacing quantum, as a paced swtester sender does (pacing.h), on one CPU and in the realtime
 * class where allowed (as swtester's threads), and records every wake-up that came late by at least --min-ns: the
 * time the CPU was not given to it (a hypervisor stopping the virtual CPU, interrupts, higher-priority work).
 * A sender that keeps its schedule everywhere else still loses, in a 100 ms window that ends in such a stall, the
 * frames due during it: the longest stall over the window is the best worst-window figure any sender on this CPU
 * can have, and a stall longer than pacing.h's catch-up limit slips the schedule of even a perfect sender. The
 * pacing benchmark (benchmarks/swtester_figures.py) prints both as the platform's floor beside the tools.
 *
 * Usage: stall_probe SECONDS CPU [MIN_NS]. Prints one JSON document: the wake-ups that came late, each as
 * [deadline in ns after the start, lateness in ns] (the first MAX_LATE of them; "late_total" counts all),
 * the longest lateness, the sum of all latenesses, the quantum and the catch-up limit, and whether it ran realtime.
 */
#define _GNU_SOURCE
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "pacing.h"
#include "tool.h"

#define MAX_LATE 100000 /* late wake-ups listed; more are counted only */

static void die(const char *msg) {
    fprintf(stderr, "stall_probe: %s\n", msg);
    exit(2);
}

int main(int argc, char **argv) {
    if (argc < 3 || argc > 4) {
        fprintf(stderr, "usage: stall_probe SECONDS [0.001-3600] CPU [0-%d] [MIN_NS [1-1e9], default 100000]\n",
                CPU_SETSIZE - 1);
        return 2;
    }
    double seconds = parse_number(argv[1], "SECONDS", 1e-3, 3600);
    int cpu = (int)parse_integer(argv[2], "CPU", 0, CPU_SETSIZE - 1);
    uint64_t min_ns = argc > 3 ? (uint64_t)parse_integer(argv[3], "MIN_NS", 1, 1000000000) : 100000;
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    if (sched_setaffinity(0, sizeof set, &set) != 0) {
        fprintf(stderr, "stall_probe: CPU %d: not available to this process\n", cpu);
        return 2;
    }
    struct sched_param sp = {.sched_priority = sched_get_priority_min(SCHED_FIFO)};
    int realtime = sched_setscheduler(0, SCHED_FIFO, &sp) == 0;
    static uint64_t late[MAX_LATE][2];
    uint64_t listed = 0, total = 0, longest = 0, sum = 0;
    uint64_t start = now_ns(CLOCK_MONOTONIC) + PACING_QUANTUM_NS, end = start + (uint64_t)(seconds * 1e9);
    for (uint64_t deadline = start; deadline < end;) {
        struct timespec ts = {.tv_sec = (time_t)(deadline / 1000000000ull), .tv_nsec = (long)(deadline % 1000000000ull)};
        clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL);
        uint64_t woke = now_ns(CLOCK_MONOTONIC), lateness = woke > deadline ? woke - deadline : 0;
        if (lateness >= min_ns) {
            if (listed < MAX_LATE) {
                late[listed][0] = deadline - start;
                late[listed][1] = lateness;
                listed++;
            }
            total++;
            sum += lateness;
            if (lateness > longest) longest = lateness;
        }
        /* The next deadline after this wake-up: the ones it slept through were part of this stall (a wake-up before
         * the deadline, by a signal, sleeps to the same one again). */
        if (woke >= deadline) deadline += PACING_QUANTUM_NS * ((woke - deadline) / PACING_QUANTUM_NS + 1);
    }
    printf("{\"cpu\": %d, \"seconds\": %g, \"realtime\": %s, \"quantum_ns\": %d, \"catch_up_limit\": %d, "
           "\"min_ns\": %llu, \"late_total\": %llu, \"longest_ns\": %llu, \"late_sum_ns\": %llu, \"late\": [",
           cpu, seconds, realtime ? "true" : "false", PACING_QUANTUM_NS, CATCH_UP, (unsigned long long)min_ns,
           (unsigned long long)total, (unsigned long long)longest, (unsigned long long)sum);
    for (uint64_t i = 0; i < listed; i++)
        printf("%s[%llu, %llu]", i ? ", " : "", (unsigned long long)late[i][0], (unsigned long long)late[i][1]);
    printf("]}\n");
    return 0;
}

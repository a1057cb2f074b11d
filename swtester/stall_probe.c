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
 * A sleeping probe cannot tell a stall of the CPU from a slow wake-up of an idle one: asleep, the virtual CPU halts
 * (this project's VMs halt at once, haltpoll with guest_halt_poll_ns 0) and the hypervisor wakes it when the timer
 * fires, or later. --spin tells them apart: the thread never sleeps, it reads CLOCK_MONOTONIC back to back and
 * records every gap of at least MIN_NS between two readings (a gap is what a deadline inside it came late by). A gap
 * it sees is a stall no sender on this CPU avoids even by never sleeping; a stall only the sleeping probe sees is a
 * slow wake-up, which a sender that spins instead of sleeping would not have. Each gap is split by the thread's own
 * accounting, read after it (CLOCK_THREAD_CPUTIME_ID, and run_delay from /proc/thread-self/schedstat), over the time
 * since the previous reading: waited = its run_delay grew (the guest ran other work: another task, the realtime
 * throttle, the normal class's fair server), hidden = the rest of that time that was neither its CPU time nor
 * waited (the kernel's steal clock keeps the hypervisor's stops out of a task's CPU time: CONFIG_PARAVIRT_TIME_
 * ACCOUNTING), and the remainder is time charged to the thread that it did not run (interrupts, in a kernel without
 * CONFIG_IRQ_TIME_ACCOUNTING). A spinning realtime thread keeps its CPU from every normal task, so the kernel stops
 * it for up to sched_rt_period_us - sched_rt_runtime_us of each period (50 ms of 1 s) once a normal task waits there
 * (the realtime throttle, or the fair server of kernels from 6.12 on): those gaps are waited ones, the probe's own.
 * --policy other spins in the normal class instead (the gaps are then the other tasks' time slices).
 *
 * --early NS is the sender in between: it sleeps to NS before each deadline and spins from its wake-up to the
 * deadline, as a sender would that spins through the last part of each quantum to be awake on time: lateness is
 * then counted from the deadline, and "cpu_share" (its CPU time over the run, in every mode) says what it costs.
 *
 * Usage: stall_probe [--spin | --early NS] [--policy fifo|other] SECONDS CPU [MIN_NS]. Prints one JSON document:
 * the deadlines met late (--spin: the gaps), each as [deadline (gap start) in ns after the start, lateness (gap)
 * in ns] and with --spin also [..., waited ns, hidden ns] (the first MAX_LATE of them; "late_total" counts all),
 * the longest lateness, the sum of all latenesses, the quantum and the catch-up limit, whether it ran realtime and
 * its CPU share; with --spin also the longest gap less its waited part (a stall no scheduling in this guest
 * explains; a lower bound, as waited may include a wait before the gap), and the run's wall, CPU and waited time.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "pacing.h"
#include "tool.h"

#define MAX_LATE 100000 /* late wake-ups listed; more are counted only */

static void die(const char *msg) {
    fprintf(stderr, "stall_probe: %s\n", msg);
    exit(2);
}

static void usage(void) {
    fprintf(stderr, "usage: stall_probe [--spin | --early NS [0-1e9]] [--policy fifo|other] SECONDS [0.001-3600] "
                    "CPU [0-%d] [MIN_NS [1-1e9], default 100000]\n", CPU_SETSIZE - 1);
    exit(2);
}

/* This thread's run_delay (ns it waited runnable, not running): the second figure of its schedstat; 0 where the
 * kernel keeps none (waited then never grows: every gap counts as not waited, the conservative side). */
static uint64_t run_delay_ns(int schedstat) {
    char text[128];
    unsigned long long run = 0, wait = 0;
    ssize_t got = schedstat >= 0 ? pread(schedstat, text, sizeof text - 1, 0) : -1;
    if (got <= 0) return 0;
    text[got] = '\0';
    return sscanf(text, "%llu %llu", &run, &wait) == 2 ? wait : 0;
}

static uint64_t late[MAX_LATE][4];
static uint64_t listed, total, longest, longest_unwaited, sum;

static void record(uint64_t at, uint64_t lateness, uint64_t waited, uint64_t hidden) {
    if (listed < MAX_LATE) {
        late[listed][0] = at;
        late[listed][1] = lateness;
        late[listed][2] = waited;
        late[listed][3] = hidden;
        listed++;
    }
    total++;
    sum += lateness;
    if (lateness > longest) longest = lateness;
    /* waited counts from the previous gap's reading: a wait between the gaps lowers this figure, never raises it */
    if (lateness - waited > longest_unwaited) longest_unwaited = lateness - waited;
}

/* Sleeps to early ns before a deadline every pacing quantum, spins to the deadline; records each deadline met at
 * least min_ns late. */
static void sleep_to_deadlines(uint64_t start, uint64_t end, uint64_t min_ns, uint64_t early) {
    for (uint64_t deadline = start; deadline < end;) {
        uint64_t wake = deadline > early ? deadline - early : 0, woke;
        struct timespec ts = {.tv_sec = (time_t)(wake / 1000000000ull), .tv_nsec = (long)(wake % 1000000000ull)};
        if (now_ns(CLOCK_MONOTONIC) < wake) clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL);
        while ((woke = now_ns(CLOCK_MONOTONIC)) < deadline) {
        }
        uint64_t lateness = woke > deadline ? woke - deadline : 0;
        if (lateness >= min_ns) record(deadline - start, lateness, 0, 0);
        /* The next deadline after this wake-up: the ones it slept through were part of this stall (a wake-up before
         * the deadline, by a signal, sleeps to the same one again). */
        if (woke >= deadline) deadline += PACING_QUANTUM_NS * ((woke - deadline) / PACING_QUANTUM_NS + 1);
    }
}

/* Reads the clock back to back, never sleeping; records each gap of at least min_ns with its accounting (above).
 * The accounting is read after a gap only, and the clock again after it: its reading is no gap. */
static void spin(uint64_t start, uint64_t end, uint64_t min_ns, int schedstat, uint64_t *wall, uint64_t *cpu,
                 uint64_t *waited) {
    while (now_ns(CLOCK_MONOTONIC) < start) {
    }
    uint64_t cpu0 = now_ns(CLOCK_THREAD_CPUTIME_ID), waited0 = run_delay_ns(schedstat);
    uint64_t last = now_ns(CLOCK_MONOTONIC), mark = last, mark_cpu = cpu0, mark_waited = waited0;
    while (last < end) {
        uint64_t t = now_ns(CLOCK_MONOTONIC);
        if (t - last >= min_ns) {
            uint64_t t_cpu = now_ns(CLOCK_THREAD_CPUTIME_ID), t_waited = run_delay_ns(schedstat);
            uint64_t since = t - mark, ran = t_cpu - mark_cpu, waited_in = t_waited - mark_waited;
            uint64_t hidden = since > ran + waited_in ? since - ran - waited_in : 0;
            uint64_t gap = t - last;
            record(last - start, gap, waited_in < gap ? waited_in : gap, hidden < gap ? hidden : gap);
            mark = t = now_ns(CLOCK_MONOTONIC);
            mark_cpu = now_ns(CLOCK_THREAD_CPUTIME_ID);
            mark_waited = t_waited;
        }
        last = t;
    }
    *wall = last - start;
    *cpu = now_ns(CLOCK_THREAD_CPUTIME_ID) - cpu0;
    *waited = run_delay_ns(schedstat) - waited0;
}

int main(int argc, char **argv) {
    int spinning = 0, policy = SCHED_FIFO, a = 1;
    uint64_t early = 0;
    for (; a < argc && strncmp(argv[a], "--", 2) == 0; a++) {
        if (strcmp(argv[a], "--spin") == 0) {
            spinning = 1;
        } else if (strcmp(argv[a], "--early") == 0 && a + 1 < argc) {
            early = (uint64_t)parse_integer(argv[++a], "--early", 0, 1000000000);
        } else if (strcmp(argv[a], "--policy") == 0 && a + 1 < argc) {
            a++;
            if (strcmp(argv[a], "fifo") == 0) policy = SCHED_FIFO;
            else if (strcmp(argv[a], "other") == 0) policy = SCHED_OTHER;
            else {
                char msg[160];
                snprintf(msg, sizeof msg, "--policy %.40s: allowed fifo, other", argv[a]);
                die(msg);
            }
        } else {
            usage();
        }
    }
    if (argc - a < 2 || argc - a > 3) usage();
    if (spinning && early) die("--spin and --early: choose one (--spin never sleeps)");
    double seconds = parse_number(argv[a], "SECONDS", 1e-3, 3600);
    int cpu = (int)parse_integer(argv[a + 1], "CPU", 0, CPU_SETSIZE - 1);
    uint64_t min_ns = argc - a > 2 ? (uint64_t)parse_integer(argv[a + 2], "MIN_NS", 1, 1000000000) : 100000;
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    if (sched_setaffinity(0, sizeof set, &set) != 0) {
        fprintf(stderr, "stall_probe: CPU %d: not available to this process\n", cpu);
        return 2;
    }
    struct sched_param sp = {.sched_priority = sched_get_priority_min(SCHED_FIFO)};
    int realtime = policy == SCHED_FIFO && sched_setscheduler(0, SCHED_FIFO, &sp) == 0;
    int schedstat = spinning ? open("/proc/thread-self/schedstat", O_RDONLY) : -1;
    uint64_t wall = 0, cpu_time = 0, waited = 0;
    uint64_t start = now_ns(CLOCK_MONOTONIC) + PACING_QUANTUM_NS, end = start + (uint64_t)(seconds * 1e9);
    if (spinning) {
        spin(start, end, min_ns, schedstat, &wall, &cpu_time, &waited);
    } else {
        uint64_t cpu0 = now_ns(CLOCK_THREAD_CPUTIME_ID);
        sleep_to_deadlines(start, end, min_ns, early);
        cpu_time = now_ns(CLOCK_THREAD_CPUTIME_ID) - cpu0;
        wall = now_ns(CLOCK_MONOTONIC) - start;
    }
    printf("{\"mode\": \"%s\", \"cpu\": %d, \"seconds\": %g, \"realtime\": %s, \"quantum_ns\": %d, "
           "\"catch_up_limit\": %d, \"min_ns\": %llu, \"late_total\": %llu, \"longest_ns\": %llu, "
           "\"late_sum_ns\": %llu, \"early_ns\": %llu, \"cpu_share\": %.4f, ",
           spinning ? "spin" : "sleep", cpu, seconds, realtime ? "true" : "false", PACING_QUANTUM_NS, CATCH_UP,
           (unsigned long long)min_ns, (unsigned long long)total, (unsigned long long)longest,
           (unsigned long long)sum, (unsigned long long)early, (double)cpu_time / (double)wall);
    if (spinning)
        printf("\"longest_unwaited_ns\": %llu, \"wall_ns\": %llu, \"cpu_ns\": %llu, \"waited_ns\": %llu, "
               "\"schedstat\": %s, ", (unsigned long long)longest_unwaited, (unsigned long long)wall,
               (unsigned long long)cpu_time, (unsigned long long)waited, schedstat >= 0 ? "true" : "false");
    printf("\"late\": [");
    for (uint64_t i = 0; i < listed; i++) {
        printf("%s[%llu, %llu", i ? ", " : "", (unsigned long long)late[i][0], (unsigned long long)late[i][1]);
        if (spinning) printf(", %llu, %llu", (unsigned long long)late[i][2], (unsigned long long)late[i][3]);
        printf("]");
    }
    printf("]}\n");
    return 0;
}

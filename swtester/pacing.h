/*
 * Pacing: the constant-rate schedule of one sender and how far it fell behind it. Kept apart from how frames go
 * out (transmit ring or sendmmsg), so that any sender carries it, and from swtester.c, so that pacing_check can
 * drive it with made-up clocks: ask pacing_take() how many frames to send now, send them back to back, ask again.
 *
 * Frame seq is due start + seq / rate after the trial starts. A sender finds itself behind its schedule now and
 * then (it sleeps to the next due time and wakes late; at high rates a batch takes longer than a frame interval)
 * and catches up by sending the frames due back to back: at most CATCH_UP of them. When more are due at once,
 * the sender was stalled long (descheduled on a shared CPU, its virtual CPU stopped by the hypervisor, or blocked
 * in a send) or cannot keep up. It then catches up CATCH_UP frames and moves the rest of its schedule later by the
 * time it lost beyond them (a slip). RFC 2544 offers the DUT a constant rate, and a long catch-up burst is a load
 * above it: a DUT that buffers or polices loses frames to a burst larger than its buffer (a token bucket of 1,000
 * frames at 40 kfps holds a 25 ms backlog), which it would not lose at the offered load, and the trial would
 * charge that loss to the DUT. A burst of at most its buffer it absorbs after any stall that long or longer:
 * during the stall its queue drained (its bucket filled) by at least as many frames as the burst then brings.
 * CATCH_UP is therefore the smallest receive queue a DUT commonly has, 512 descriptors: stalls of a few ms, which
 * a 2-vCPU tester shared with its DUT has every second (2-8 ms measured in the demo's 3 s trials), are caught up,
 * and send_burst_max discloses it; a longer one slips by its excess only. (Slipping by the whole lag, as swtester
 * did before, threw away the catch-up the DUT absorbs: at 100 kfps 512 frames are 5.1 ms, and the hypervisor of
 * this project's 2-vCPU machines stops a vCPU for 5.3-6.7 ms now and then - in one 3 s trial every 100 ms, its
 * CPU quota period - so each such stall slipped 5-7 ms, 0.2 % of a 3 s trial, where 0.2-1.6 ms remain now.)
 * siitperf, with a core of its own, never slips: it sends each frame at its due time or as soon after as it can,
 * and flags a trial whose sending took longer than its tolerance; swtester flags one the same way (below).
 * Skipping the frames instead would offer the load with holes and count frames never sent as lost. After a slip
 * every frame is still sent, at the rate, and the trial's send time grows by the slips: the trial contract
 * (trexlab/trial.py) marks a trial stretched when that exceeds its overrun tolerance (0.1 % of the duration),
 * exactly as it does for a sender too slow for the rate.
 */
#ifndef SWTESTER_PACING_H
#define SWTESTER_PACING_H

#include <stdint.h>

#define CATCH_UP 512 /* frames: the largest burst sent to catch up with the schedule */
/* ns: the pacing quantum. A wake-up costs a sender far more CPU than the frame it sends (about 17 us per frame
 * when paced one by one on this project's 2-vCPU machines, so two directions at 28 kfps each took 95 % of the
 * tester's CPU, and the realtime throttle then stopped them ~50 ms every second). Above one frame per quantum a
 * sender wakes once per quantum and sends the frames due in it back to back: the load is constant over any
 * interval longer than the quantum (over a 100 ms window the count is off by at most one quantum's frames, 0.05 %)
 * and the burst is a few frames (2 at 40 kfps), which a DUT's smallest queue absorbs. Reported in the output. */
#define PACING_QUANTUM_NS 50000

struct pacing {
    uint64_t start;      /* CLOCK_MONOTONIC ns at which frame 0 is due, moved later by each slip */
    double ns_per_frame; /* 1e9 / rate */
    uint64_t frames;     /* frames of the trial */
    uint64_t max_lag_ns; /* the largest lag found: now minus the due time of the next frame to send (0: on time) */
    uint64_t start_lag_ns; /* the lag of frame 0: how late the sender started its schedule */
    uint64_t max_burst;  /* the most frames sent back to back at once (1: never more than one frame due) */
    uint64_t slips;      /* times more than CATCH_UP frames were due at once: the schedule moved later */
    uint64_t slip_ns;    /* ns the schedule moved later in all */
};

static inline uint64_t pacing_due_ns(const struct pacing *p, uint64_t seq) {
    return p->start + (uint64_t)((double)seq * p->ns_per_frame);
}

/* How many frames to send now from frame seq on (0: none is due yet, the next is due at *next_ns). */
static inline uint64_t pacing_take(struct pacing *p, uint64_t now, uint64_t seq, uint64_t *next_ns) {
    uint64_t due = now < p->start ? 0 : (uint64_t)((double)(now - p->start) / p->ns_per_frame) + 1;
    if (due > p->frames) due = p->frames;
    if (due <= seq) {
        *next_ns = pacing_due_ns(p, seq);
        return 0;
    }
    uint64_t scheduled = pacing_due_ns(p, seq), lag = now > scheduled ? now - scheduled : 0;
    if (lag > p->max_lag_ns) p->max_lag_ns = lag;
    if (seq == 0) p->start_lag_ns = lag;
    uint64_t n = due - seq;
    if (n > CATCH_UP) {
        /* A slip by the excess: frames seq .. seq + CATCH_UP - 1 stay due now (the last of them exactly now), the
         * ones after them at the rate from now on. More than CATCH_UP due means a lag of at least CATCH_UP frame
         * intervals, so the move is positive. */
        uint64_t kept = (uint64_t)((double)(CATCH_UP - 1) * p->ns_per_frame), move = lag > kept ? lag - kept : 0;
        p->start += move;
        p->slip_ns += move;
        p->slips++;
        n = CATCH_UP;
    }
    if (n > p->max_burst) p->max_burst = n;
    return n;
}

#endif

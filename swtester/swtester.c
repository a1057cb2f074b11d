/*
 * swtester: an RFC 2544 / RFC 8219 software tester over AF_PACKET.
 *
 * One trial per run: a sender per active direction sends UDP test frames at a
 * constant rate (each frame when its time has come on CLOCK_MONOTONIC, in
 * batches, bypassing the qdisc: through a PACKET_TX_RING where the kernel
 * grants one, else with sendmmsg; --send-method, reported as send_method), a
 * receiver per direction counts them by sequence number (the frames it need not
 * time in the kernel, where allowed: at the port's tc ingress in a trial that
 * times no frame, else in its receive socket's filter; open_counting;
 * --receive-method, reported as receive_method), reads the others from a
 * TPACKET_V3 ring and takes one-way delays from kernel receive timestamps
 * against the send timestamp carried in the frame (both CLOCK_REALTIME on the
 * same host). The result is one JSON document on stdout. Design after siitperf
 * (Lencse 2021): one sender and one receiver per direction, pinned to CPUs,
 * timestamps in the payload, and a trial whose sending overran its duration is
 * reported as such. A sender stalled by the machine catches up with a burst of
 * at most 512 frames and moves the rest of its schedule later, reporting the lag
 * (pacing.h), whatever its send method; its threads run in the realtime
 * class (SCHED_FIFO) where allowed, so that the machine's other work stalls
 * them less. With --threads T a direction has T
 * sender threads, each with every T-th sequence number and a schedule of its own
 * (struct txq); sender thread j of direction i runs on the (2i + j)-th CPU of
 * --cpus, its receiver on the (2i + 1)-th, both modulo the list's length.
 *
 * Latency (RFC 8219 section 7.2): with --latency tagged, the --tagged frames go
 * into frames sent at least --tag-delay s after the trial starts (the DUT's
 * warm-up is not measured), one at a pseudorandom position in each of equal
 * slots of the rest of the trial (evenly spread, yet no alias with a DUT that
 * drops or delays every Nth frame); with --latency all every frame is measured.
 * Every measured frame received within the frame timeout has its one-way delay
 * counted in a histogram (hdr.h); the others are counted as lost or late.
 *
 * Directions: forward = port 0 -> port 1, reverse = port 1 -> port 0.
 * Test payload (16 bytes, right after the UDP header; the rest of the frame is
 * zero so it adds nothing to the UDP checksum):
 *   u32 seq | u64 send time ns | u16 trial id | u8 flags (bit0 stream, bit1 tagged) | u8 magic 0xA5
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <linux/if_packet.h>
#include <net/ethernet.h>
#include <net/if.h>
#include <linux/bpf.h>
#include <linux/filter.h>
#include <linux/virtio_net.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "hdr.h"
#include "tool.h"

#define MAGIC 0xA5
#define PAYLOAD_LEN 16
#define BATCH 64
#define MAX_FRAME 9018
#define FCS_LEN 4
/* IPv4 flags and fragment offset (header bytes 6-7): More Fragments and the 13-bit offset. A datagram with either
 * is a fragment. IPv6 marks one with a Fragment header (next header 44), whose bytes 2-3 hold its 13-bit offset
 * (IPV6_FRAGMENT_OFFSET), two reserved bits and its More flag (bit 0). */
#define IPV4_MORE_FRAGMENTS 0x2000
#define IPV4_FRAGMENT_OFFSET 0x1fff
#define IPV4_FRAGMENT (IPV4_MORE_FRAGMENTS | IPV4_FRAGMENT_OFFSET)
#define IPV6_FRAGMENT_HEADER 44
#define IPV6_FRAGMENT_OFFSET 0xfff8
#define IPV6_MORE_FRAGMENTS 1
/* Ethernet's smallest frame, FCS included; an IPv6 header is SIIT_DELTA bytes longer than an IPv4 one. A test frame
 * holds its headers and PAYLOAD_LEN (IPv6: 82 B); the IPv6 side of a SIIT trial (ports of different versions) starts
 * at MIN_FRAME + SIIT_DELTA, as translated it must still be a whole Ethernet frame, not one the DUT pads (trexlab's
 * trial spec: trexlab/trial.py MIN_FRAME_SIZE_BY_VERSION, MIN_SIIT_IPV6_FRAME_SIZE, where the reasons are). */
#define MIN_FRAME 64
#define SIIT_DELTA 20
#define MAX_OVERRUN 0.1 /* sending stops at 110 % of the duration */
#define MAX_THREADS 8   /* sender threads per direction */
/* Receive ring (TPACKET_V3): the kernel copies each frame's first SNAP_LEN bytes into
 * blocks and wakes the receiver once per block, not once per frame. A receive socket
 * that queues every frame as an skb costs the CPU that delivers the frames (on veth: the
 * sender's) a clone and a wake-up per frame, and took half of the sender's rate. */
#define RX_BLOCK_TIMEOUT_MS 2 /* a block that is not full is handed over after this */
/* The ring's size and its blocks (rx_ring_geometry). A block that is not full is handed over after the timeout all
 * the same, so at a low rate each block holds the frames of one timeout: the ring was 64 blocks of 1 MiB, at any rate
 * below 2.3 Mfps 64 timeouts (128 ms) of frames, and a receiver held up longer (the realtime throttle stops a thread
 * for up to 50 ms a second, a hypervisor a vCPU for more) found it full; the kernel dropped the frames after that
 * (tester_drops), and each counted as the DUT's loss. Now a block holds about one timeout of frames at the trial's
 * rate, RX_BLOCK_MIN..RX_BLOCK_MAX bytes. A block is handed over at the timeout t or when full, whichever comes first
 * (rx_block_seconds; measured: 20.5 frames a block at 10 kfps, 2.05 ms), so n blocks of B bytes hold
 * n * min(t, B / (r * RX_FRAME_BYTES(kept))) s of frames at r frames a second (the figures given here before took
 * B / t + r * RX_FRAME_BYTES(kept) bytes a second, counting a block's frames twice: a bound). A ring that keeps
 * SNAP_LEN bytes of each frame is RX_RING_BYTES: 2.0 s of frames up to 146 kfps (the largest rate of 64 KiB
 * blocks), 1.0 s at 200 kfps, 0.26 s at 1 Mfps, 0.13 s at 2 Mfps. The ring alone keeps whole frames (7.2 times the
 * bytes of SNAP_LEN at 1518 B), and 64 MiB of them held 2.0 s up to 20 kfps, 0.26 s at 100-146 kfps, 0.13 s at
 * 200 kfps, 0.04 s at 1 Mfps: it now gets as many blocks as hold the seconds of the SNAP_LEN ring at the trial's
 * rate, RX_RING_BYTES at least, within its share of the machine's memory (rx_ring_limit). At 1518 B that is up to
 * 512 MiB (1,024 blocks of 512 KiB at 100-146 kfps, 512 of 1 MiB at 200 kfps, 394 of 1 MiB from 500 kfps on);
 * 9018 B frames' ring takes 512 MiB and holds 0.59 s at 100 kfps, 0.29 s at 200 kfps, 0.06 s at 1 Mfps
 * (swtester/ring_check counts them). */
#define RX_RING_BYTES (64u << 20)
/* A ring's blocks are kernel memory, all of it taken when the ring is set up: the rings of a trial together take at
 * most 1/RX_RING_MEMORY_SHARE of the machine's memory, each at most RX_RING_MAX_BYTES (what the ring alone needs at
 * 1518 B; a larger frame's ring holds fewer seconds than a SNAP_LEN one), and never less than RX_RING_BYTES (every
 * ring's size before whole frames were kept). A bidirectional trial's rings at 1518 B get their 512 MiB each on a
 * machine of 8 GiB or more; on a smaller one they hold fewer seconds (ring_blocks, ring_block_bytes). */
#define RX_RING_MAX_BYTES (512u << 20)
#define RX_RING_MEMORY_SHARE 8
#define RX_BLOCK_MIN (64u << 10)
#define RX_BLOCK_MAX (1u << 20) /* the receiver wakes once per block: at high rates, once per 4,681 frames or more */
#define RX_FRAME_SIZE 2048      /* tp_frame_size: only checked by TPACKET_V3, which packs frames at their length */
#define SNAP_LEN 128          /* headers and test payload of any test frame */
/* Ring bytes one frame takes at most: its header and address, the MAC header aligned, and the bytes of it kept:
 * SNAP_LEN with a counting filter, the whole frame with --receive-method ring (its UDP checksum is verified over the
 * whole frame: udp_checksum_ok). */
#define RX_FRAME_BYTES(kept) (TPACKET_ALIGN(TPACKET3_HDRLEN + 16) + (kept))
/* The UDP checksum's sum starts at the frame's byte CHECKSUM_FROM: the IPv6 source address, 4 bytes before the IPv4
 * one (TTL, protocol, header checksum: taken out again). At tc ingress the counting program sums a frame whose bytes
 * are all in the skb's linear part in place: CSUM_DIFF_MAX bytes (the kernel's bound) per bpf_csum_diff call, a last
 * part of up to DIRECT_WORDS_MAX bytes loaded word by word (cheaper than a call). A socket filter may do neither: it
 * copies the bytes with one call into a buffer of its CPU's (a map: the stack's 512 bytes took a copy per
 * CHECKSUM_CHUNK bytes) and adds their words CHECKSUM_CHUNK bytes at a time, as tc does with a frame in pages. One
 * run of the program on a 1518 B frame took 67 ns with bpf_csum_diff, 96 ns loading each word in place, 124 ns
 * copying, 29 ns without the check (tcx, BPF_PROG_TEST_RUN, 10^6 runs; on 64 B frames 33 ns and 29 ns; this
 * project's Intel Xeon VM, kernel 6.18, 2026-11-27); the socket filter, best of 5 such test runs at 07:20 the same
 * day: 131 ns with a copy per chunk, 101 ns with the one copy (1001 B: 84 ns; 64 B: 46 and 45 ns). */
#define CHECKSUM_FROM (14 + 8)
#define CHECKSUM_CHUNK 392
#define CSUM_DIFF_MAX 512
#define DIRECT_WORDS_MAX 64
/* Transmit ring (TPACKET_V2, PACKET_TX_RING): the sender writes each frame into a slot the kernel maps, and one
 * send() hands every slot marked TP_STATUS_SEND_REQUEST to the driver. The kernel builds each skb around the
 * slot's page (no copy of the frame, no per-message header to import) and gives the slot back
 * (TP_STATUS_AVAILABLE) when the skb is freed. Slots hold a whole frame each: a power of two >= the frame plus
 * the slot header, so no 64 B frame shares a page boundary; the ring is at most TX_RING_BYTES. */
#define TX_RING_SLOTS 1024
#define TX_RING_BYTES (16u << 20)
#define TX_RING_BLOCK (64u << 10)
#define TX_DATA_OFFSET (TPACKET2_HDRLEN - sizeof(struct sockaddr_ll)) /* frame data in a slot (no PACKET_TX_HAS_OFF) */

enum send_method { SEND_AUTO, SEND_TX_RING, SEND_SENDMMSG, SEND_METHODS /* how many */ };
static const char *const send_method_names[] = {"auto", "tx_ring", "sendmmsg"};
/* How a direction's receiver counts its frames (see open_counting): RECEIVE_TCX counts every test frame in the kernel
 * at the port's tc ingress, no socket (trials that time no frame); RECEIVE_BPF counts the test frames it need not
 * look at in the kernel, in its receive socket's filter; RECEIVE_RING reads every frame from the receive ring;
 * RECEIVE_AUTO: TCX where the trial times no frame, else (or where refused) BPF, else the ring. */
enum receive_method { RECEIVE_AUTO, RECEIVE_BPF, RECEIVE_RING, RECEIVE_TCX, RECEIVE_METHODS /* how many */ };
static const char *const receive_method_names[] = {"auto", "bpf", "ring", "tcx"};

struct port {
    const char *name;
    uint8_t mac[6], peer[6];
    struct in_addr ip4;
    struct in6_addr ip6;
    int ip_version; /* of the frames this port sends */
    int frame_size; /* of the frames this port sends, FCS included */
};

struct config {
    struct port port[2];
    double rate, duration, tail, timeout; /* timeout < 0: none */
    double tag_delay;                       /* s from the trial start before the first tagged frame */
    int directions;                         /* bit0 forward, bit1 reverse */
    int rfc4814, networks, latency_mode;    /* latency: 0 none, 1 tagged, 2 all */
    long tagged;
    int cpus[CPU_SETSIZE], ncpus; /* a CPU may come more than once; at most every CPU there is, once */
    uint16_t trial_id;
    double overrun_tolerance;
    int dont_fragment; /* IPv4 DF bit: a router must drop, not fragment, a frame too big for its next link */
    enum send_method send_method; /* asked for; SEND_AUTO: the TX ring, else sendmmsg */
    enum receive_method receive_method; /* asked for; RECEIVE_AUTO: tcx or the eBPF filter, else the ring */
    int threads;                  /* sender threads per direction */
    int normal_priority; /* --no-realtime: the threads stay in the normal scheduling class */
    int realtime;        /* the threads run SCHED_FIFO (see main) */
    long rt_runtime_us, rt_period_us; /* the kernel's realtime throttle (see main); -2: unreadable */
    uint64_t start;               /* CLOCK_MONOTONIC ns at which frame 0 of every direction is due */
};

#include "pacing.h"

struct direction;

/* One sender thread of a direction. With T threads, thread j sends the frames seq = j, j + T, j + 2T, ... (its own
 * sequence space: the receiver counts each frame exactly once, whatever thread sent it), frame seq when it is due
 * (seq / rate after the start, as one sender would), through its own socket, from its own UDP source port
 * (1024 + j with fixed ports: one flow per thread, which a receiver's RSS keeps on one queue, in order). */
struct txq {
    struct direction *d;
    int j;
    int fd;
    uint64_t frames, sent, tags_sent, rng; /* frames: those of its sequence space */
    uint64_t end;                          /* CLOCK_MONOTONIC ns when its last frame left (or it stopped) */
    double cpu;                            /* s of its CPU time */
    int64_t waited_ns;                     /* ns it waited runnable, not running (waited_ns()); -1: unread */
    pid_t tid;                             /* its thread's, and the clock of the thread's CPU time: whence */
    clockid_t cpu_clock;                   /* main reads both figures at the start (start_senders), the trial's
                                            * last sender at the end (end_of_sending) */
    uint64_t cpu_start;                    /* ns of the thread's CPU time when sending started */
    int64_t waited_start;                  /* waited_ns() when sending started */
    uint8_t *ring;                         /* transmit ring: slots slots of slot bytes */
    size_t ring_len;
    unsigned slots, slot, head;            /* head: the next slot to fill */
    unsigned frame;                        /* offset of the frame in a slot */
    uint32_t len;                          /* tp_len of every slot */
    struct sockaddr_ll to;                 /* the transmit ring's send(): the port and the frames' EtherType */
    struct pacing pacing;                  /* its schedule (of its frames) and how far it fell behind it */
};

struct direction {
    int index;   /* 0 forward, 1 reverse */
    struct config *cfg;
    struct port *tx, *rx;
    uint64_t intended, sent, received, late, duplicates, reordered, tester_drops, foreign;
    uint64_t fragments; /* this trial's test frames that arrived as fragments (their first fragment): not received */
    uint64_t wrong_length; /* this trial's test frames of another length than they were sent (arriving_size) */
    uint64_t zero_checksum; /* this trial's IPv6 test frames whose UDP checksum field is zero: not received */
    uint64_t bad_checksum; /* this trial's test frames whose UDP checksum does not verify (udp_checksum_ok) */
    uint64_t bad_ipv4_header_checksum; /* this trial's IPv4 test frames whose header checksum does not verify */
    uint64_t atomic_fragments; /* this trial's test frames that arrived as IPv6 atomic fragments: not received */
    uint64_t ipv4_options; /* this trial's test frames that arrived with IPv4 options (sent without): not received */
    double send_duration, send_cpu; /* s of wall time and of the sender threads' CPU time */
    int64_t send_waited_ns;         /* the most ns any of its senders waited runnable (-1: not measured) */
    int udp, dst_var;                 /* offsets of the UDP header and of the network byte x */
    uint32_t ip_sum, udp_sum;         /* checksum sums of the frame's constant fields */
    uint8_t *seen;        /* one bit per intended frame */
    uint8_t *tag;         /* --latency tagged: one bit per intended frame, set for the tagged ones */
    struct hdr delays;    /* one-way delays (ns) of the measured frames received within the frame timeout */
    uint64_t tags_sent, tags_received; /* measured frames: tagged ones, or every frame with --latency all */
    atomic_int send_done, senders;
    int rx_fd; /* -1 with RECEIVE_TCX */
    enum send_method send_method; /* the one this direction's senders use */
    char send_fallback[160];      /* why SEND_AUTO fell back to sendmmsg ("" if it did not) */
    struct txq txq[MAX_THREADS];
    uint8_t *ring; /* receive ring: rx_blocks blocks of rx_block_size bytes (rx_ring_geometry) */
    uint32_t rx_blocks, rx_block_size;
    int rx_kept; /* bytes the ring keeps of each frame (open_receiver) */
    enum receive_method receive_method; /* the one this direction's receiver uses */
    char receive_fallback[400];         /* why RECEIVE_AUTO fell back from tcx or to the ring ("" if it did not) */
    int bpf_link, bpf_prog, bpf_state_fd, bpf_seen_fd, bpf_buffer_fd; /* TCX, BPF: the program and its maps, TCX its
                                                                        * link (-1: none) */
    uint64_t *bpf_state;                /* TCX, BPF: the program's counters, mapped (BPF_WORDS words) */
    uint64_t ring_frames;               /* frames the receiver read from its ring */
    struct pacing pacing; /* its senders' figures: the largest lag, burst and slip_ns of any, slips of all */
    uint64_t rng;
};

/* The start of sending (main, sender): each sender, pinned, counts itself ready and blocks until main has read every
 * sender's start figures and set started. */
static pthread_mutex_t start_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t ready_cond = PTHREAD_COND_INITIALIZER, start_cond = PTHREAD_COND_INITIALIZER;
static int senders_ready, started;
/* ns from the senders' release (start_senders) to the start of sending, when the first frame is due: the released
 * senders wake and run before it. Set at the release itself, the start fell due before any of them had woken: a
 * wake-up from the condition variable took 19-40 us for one sender, 35-167 us for eight on one CPU and 26-249 us for
 * four on two (this project's 2-vCPU VM at a load of 3-4), and each sender sent the frames due meanwhile in a
 * catch-up burst once it ran (31-41 frames at 1 Mfps). A slower guest wakes slower (under QEMU's TCG a /proc read
 * takes ~2 ms, against 2-3 us here). The margin covers 80 times the slowest wake-up measured here, and is the time
 * the receivers had before (a sleep of as long before the release) to listen before the first frame leaves. */
#define START_MARGIN_NS 20000000
/* ns before its first frame at which a sender wakes from its sleep since the release, to yield until that frame is
 * due. Asleep to the frame itself, through the margin, a sender woke 77-109 us late at 1 Mfps (a burst of 101-109
 * frames; 20-162 us with eight senders on one CPU): a CPU idle that long wakes later than from the short sleeps of
 * its sending. Waking this early covers six times the latest, for at most as much CPU time per sender and trial,
 * yielding to the threads of its CPU. */
#define START_WAKE_NS 1000000
/* The trial's sender threads (every direction's), and how many of them have not yet sent their last frame (or
 * stopped); the others wait, blocked, until the last has read every sender's figures (end_of_sending). */
static struct txq *trial_senders[2 * MAX_THREADS];
static int trial_sender_count;
static atomic_int senders_sending;
static pthread_mutex_t figures_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t figures_read_cond = PTHREAD_COND_INITIALIZER;
static int figures_read;

static void die(const char *msg) {
    fprintf(stderr, "swtester: %s\n", msg);
    exit(2);
}

static uint64_t xorshift(uint64_t *s) {
    uint64_t x = *s;
    x ^= x << 13; x ^= x >> 7; x ^= x << 17;
    return *s = x;
}

/* Six groups of one or two hex digits separated by colons, and nothing else: sscanf's %x took "02:00:00:00:00:100"
 * (an octet of 256, kept as its low byte 00), a sign, and any text after the sixth group. */
static void parse_mac(const char *text, uint8_t mac[6], const char *what) {
    const char *p = text;
    int ok = 1;
    for (int i = 0; i < 6 && ok; i++) {
        unsigned v = 0;
        int digits = 0;
        for (; digits < 2 && isxdigit((unsigned char)*p); digits++, p++)
            v = v * 16 + (unsigned)(isdigit((unsigned char)*p) ? *p - '0' : (tolower((unsigned char)*p) - 'a' + 10));
        ok = digits > 0 && *p == (i < 5 ? ':' : '\0');
        if (i < 5) p++;
        mac[i] = (uint8_t)v;
    }
    if (!ok) {
        char msg[128];
        snprintf(msg, sizeof msg, "%s=%s: allowed a MAC address aa:bb:cc:dd:ee:ff", what, text);
        die(msg);
    }
}

/* The index of `text` among `names` (an enum's names, in its order), or a one-line error naming the choices. */
static int parse_choice(const char *text, const char *what, const char *const *names, int count) {
    char msg[160];
    int used = snprintf(msg, sizeof msg, "%s: allowed", what);
    for (int i = 0; i < count; i++) {
        if (!strcmp(text, names[i])) return i;
        used += snprintf(msg + used, sizeof msg - (size_t)used, "%s %s", i ? "," : "", names[i]);
    }
    die(msg);
    return -1; /* not reached */
}

/* One's complement sum of 16-bit words. */
static uint32_t sum16(const uint8_t *p, size_t len, uint32_t sum) {
    for (size_t i = 0; i + 1 < len; i += 2) sum += (uint32_t)(p[i] << 8 | p[i + 1]);
    if (len & 1) sum += (uint32_t)(p[len - 1] << 8);
    return sum;
}

/* Whether the UDP checksum of a received frame (f, its frame_len bytes; UDP header at udp, right after the
 * addresses: IPv4 without options, IPv6 without extension headers) verifies: the one's complement sum of the
 * pseudo-header (the addresses the frame arrived with: a SIIT DUT translates them; protocol; the UDP length field),
 * the UDP header and the whole payload is 0xffff, 0 modulo 0xffff (RFC 1071: a sum != 0 folds to 0xffff exactly
 * then). Summed as the machine loads 32-bit words, as the counting program does: a sum of words whose bytes are
 * swapped is the sum's own times 256 modulo 0xffff, so 0 where it is 0. A checksum of zero over IPv4 is none
 * (RFC 768): it verifies. */
static int udp_checksum_ok(const uint8_t *f, int udp, size_t frame_len) {
    if (f[udp + 6] == 0 && f[udp + 7] == 0) return f[12] == 0x08; /* zero over IPv6: none, which IPv6 forbids */
    size_t from = (size_t)udp - (f[12] == 0x08 ? 8 : 32), i = from;
    uint16_t protocol, length;
    memcpy(&protocol, (const uint8_t[]){0, 17}, 2);
    memcpy(&length, f + udp + 4, 2);
    uint64_t sum = (uint64_t)protocol + length;
    uint32_t word = 0;
    for (; i + 4 <= frame_len; i += 4) {
        memcpy(&word, f + i, 4);
        sum += word;
    }
    uint8_t last[4] = {0};
    memcpy(last, f + i, frame_len - i);
    memcpy(&word, last, 4);
    return (sum + word) % 0xffff == 0;
}

static uint16_t fold(uint32_t sum) {
    while (sum >> 16) sum = (sum & 0xffff) + (sum >> 16);
    return (uint16_t)~sum;
}

/* Whether the header checksum of a received IPv4 frame's header (20 bytes at 14: without options) verifies: the one's
 * complement sum of its 16-bit words, the checksum's among them, is 0xffff (RFC 791, RFC 1071). */
static int ipv4_header_checksum_ok(const uint8_t *f) { return fold(sum16(f + 14, 20, 0)) == 0; }

/* Build the frame template (network 0, per-frame fields zero) and the checksum sums of its constant
 * fields, so that each frame needs only its own fields written and added (RFC 1071 section 2). */
static void build_frame(struct direction *d, uint8_t *f, int len) {
    struct port *p = d->tx;
    memset(f, 0, (size_t)len);
    memcpy(f, p->peer, 6);
    memcpy(f + 6, p->mac, 6);
    int l3 = 14, udp, v4 = p->ip_version == 4;
    int udp_len = len - l3 - (v4 ? 20 : 40);
    /* Destination for network x: forward 198.19.x.2 / 2001:2:0:90xx::2, reverse 198.18.x.2 / 2001:2:0:80xx::2. */
    if (v4) {
        f[12] = 0x08; f[13] = 0x00;
        f[l3] = 0x45;
        uint16_t total = (uint16_t)(len - l3);
        f[l3 + 2] = (uint8_t)(total >> 8); f[l3 + 3] = (uint8_t)total;
        if (d->cfg->dont_fragment) f[l3 + 6] = 0x40; /* path MTU trials (RFC 6349): too big = lost */
        f[l3 + 8] = 64; f[l3 + 9] = 17;
        memcpy(f + l3 + 12, &p->ip4, 4);
        uint8_t dst[4] = {198, (uint8_t)(d->index == 0 ? 19 : 18), 0, 2};
        memcpy(f + l3 + 16, dst, 4);
        d->dst_var = l3 + 18;
        udp = l3 + 20;
    } else {
        f[12] = 0x86; f[13] = 0xdd;
        f[l3] = 0x60;
        f[l3 + 4] = (uint8_t)(udp_len >> 8); f[l3 + 5] = (uint8_t)udp_len;
        f[l3 + 6] = 17; f[l3 + 7] = 64;
        memcpy(f + l3 + 8, &p->ip6, 16);
        uint8_t dst[16] = {0x20, 0x01, 0, 2, 0, 0, (uint8_t)(d->index == 0 ? 0x90 : 0x80), 0, 0, 0, 0, 0, 0, 0, 0, 2};
        memcpy(f + l3 + 24, dst, 16);
        d->dst_var = l3 + 31;
        udp = l3 + 40;
    }
    f[udp + 4] = (uint8_t)(udp_len >> 8); f[udp + 5] = (uint8_t)udp_len;
    uint8_t *pl = f + udp + 8;
    pl[12] = (uint8_t)(d->cfg->trial_id >> 8); pl[13] = (uint8_t)d->cfg->trial_id;
    pl[15] = MAGIC;
    d->udp = udp;
    d->ip_sum = v4 ? sum16(f + l3, 20, 0) : 0;
    /* Pseudo-header addresses, protocol and length; UDP header; payload (the rest of the frame is zero). */
    d->udp_sum = sum16(f + (v4 ? l3 + 12 : l3 + 8), v4 ? 8 : 32, 17 + (uint32_t)udp_len);
    d->udp_sum = sum16(f + udp, 8 + PAYLOAD_LEN, d->udp_sum);
}

static uint32_t word_sum(uint64_t v, int words) {
    uint32_t sum = 0;
    for (int i = 0; i < words; i++) sum += (uint32_t)((v >> (16 * i)) & 0xffff);
    return sum;
}

/* Write the per-frame fields of frame seq (network x = seq % networks, ports, sequence number, send time, tag) and
 * its checksums. The caller keeps x (next_network): no division per frame. */
static void stamp_frame(struct txq *q, uint8_t *f, uint64_t seq, uint32_t x, uint64_t t) {
    struct direction *d = q->d;
    struct config *c = d->cfg;
    int udp = d->udp;
    f[d->dst_var] = (uint8_t)x;
    /* The network byte is the high byte of its 16-bit word when it sits at an even offset. */
    uint32_t x_word = d->dst_var % 2 == 0 ? x << 8 : x;
    uint16_t sport = (uint16_t)(1024 + q->j), dport = 1024;
    if (c->rfc4814) { /* RFC 4814 section 4.5 (and siitperf): source ports 1024..65535, destination 1..49151 */
        sport = (uint16_t)(1024 + xorshift(&q->rng) % (65535 - 1024 + 1));
        dport = (uint16_t)(1 + xorshift(&q->rng) % 49151);
    }
    f[udp] = (uint8_t)(sport >> 8); f[udp + 1] = (uint8_t)sport;
    f[udp + 2] = (uint8_t)(dport >> 8); f[udp + 3] = (uint8_t)dport;
    uint8_t *pl = f + udp + 8;
    uint32_t s32 = htonl((uint32_t)seq);
    memcpy(pl, &s32, 4);
    for (int i = 0; i < 8; i++) pl[4 + i] = (uint8_t)(t >> (56 - 8 * i));
    int tagged = c->latency_mode == 2 || (c->latency_mode == 1 && (d->tag[seq >> 3] & (1u << (seq & 7))));
    q->tags_sent += (uint64_t)tagged;
    uint8_t flags = (uint8_t)(d->index | (tagged ? 2 : 0));
    pl[14] = flags;
    if (d->tx->ip_version == 4) {
        uint16_t hc = fold(d->ip_sum + x_word);
        f[14 + 10] = (uint8_t)(hc >> 8); f[14 + 11] = (uint8_t)hc;
    }
    uint32_t sum = d->udp_sum + x_word + sport + dport + word_sum((uint32_t)seq, 2) + word_sum(t, 4) +
                   ((uint32_t)flags << 8);
    uint16_t uc = fold(sum);
    if (uc == 0) uc = 0xffff;
    f[udp + 6] = (uint8_t)(uc >> 8); f[udp + 7] = (uint8_t)uc;
}

/* A thread's frames seq, seq + threads, ...: the network of each next one from this one's (x), step = threads %
 * networks. */
static uint32_t next_network(uint32_t x, uint32_t step, uint32_t networks) {
    x += step;
    return x >= networks ? x - networks : x;
}

static void pin(int cpu) {
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    pthread_setaffinity_np(pthread_self(), sizeof set, &set);
}

static int interface_index(const char *ifname) {
    int index = (int)if_nametoindex(ifname);
    if (index == 0) {
        char msg[128];
        snprintf(msg, sizeof msg, "interface %s: no such interface in this network namespace", ifname);
        die(msg);
    }
    return index;
}

static int packet_socket(void) {
    /* Protocol 0: the socket receives nothing until bound to its interface. */
    int fd = socket(AF_PACKET, SOCK_RAW, 0);
    if (fd < 0) die(errno == EPERM ? "no permission for AF_PACKET sockets: run as root (CAP_NET_RAW)" : "socket(AF_PACKET) failed");
    return fd;
}

static void bind_to(int fd, int ifindex, uint16_t protocol) {
    struct sockaddr_ll sll = {.sll_family = AF_PACKET, .sll_protocol = htons(protocol), .sll_ifindex = ifindex};
    if (bind(fd, (struct sockaddr *)&sll, sizeof sll) < 0) die("bind(AF_PACKET) failed");
}

/* The port's MTU must take the frame (FCS and Ethernet header excluded): the kernel refuses a bigger frame on
 * sendmmsg, but not one in a transmit ring that starts with a virtio_net_hdr (the receiving veth would drop it).
 * The same holds for the frames a port receives (`verb` "receives"): a veth, and a NIC's receive buffers, drop a
 * frame above the MTU before any socket sees it, and every frame of the trial would count as the DUT's loss. */
static void check_mtu(int fd, const char *ifname, int port, int frame_size, int on_port, const char *verb) {
    struct ifreq ifr;
    memset(&ifr, 0, sizeof ifr);
    snprintf(ifr.ifr_name, sizeof ifr.ifr_name, "%s", ifname);
    if (ioctl(fd, SIOCGIFMTU, &ifr) < 0) return;
    if (on_port - FCS_LEN - 14 > ifr.ifr_mtu) {
        char msg[192], translated[48] = "";
        if (on_port != frame_size) snprintf(translated, sizeof translated, " (%d bytes translated)", on_port);
        snprintf(msg, sizeof msg, "size%d=%d%s: port %s's MTU is %d, it %s frames up to %d bytes", port, frame_size,
                 translated, ifname, ifr.ifr_mtu, verb, ifr.ifr_mtu + 14 + FCS_LEN);
        die(msg);
    }
}

/* The length (FCS included) at which direction d's frames arrive: the sender's, in the receiving port's IP version
 * (a SIIT DUT translates them; an IPv6 header is SIIT_DELTA bytes longer than an IPv4 one). Not the receiving port's
 * own frame size: a trial may send frames of another size each way. */
static int arriving_size(const struct direction *d) {
    return d->tx->frame_size + ((d->rx->ip_version == 6) - (d->tx->ip_version == 6)) * SIIT_DELTA;
}

static int open_sender(const char *ifname) {
    int ifindex = interface_index(ifname), fd = packet_socket(), one = 1, size = 8 << 20;
    setsockopt(fd, SOL_PACKET, PACKET_QDISC_BYPASS, &one, sizeof one);
    setsockopt(fd, SOL_SOCKET, SO_SNDBUFFORCE, &size, sizeof size);
    bind_to(fd, ifindex, 0);
    return fd;
}

/* Give sender thread q's socket a TPACKET_V2 transmit ring for frames of len bytes (FCS excluded), every slot
 * holding the frame template. Each slot starts with a virtio_net_hdr (PACKET_VNET_HDR) whose hdr_len is the whole
 * frame: the kernel then copies the frame into the skb's own buffer instead of attaching the slot's page, which
 * the veth forwarding a frame to its peer would copy into a freshly allocated page (skb_copy_ubufs) - a page
 * allocation per frame that cost more than the copy. Returns 0, or -1 with the reason in d->send_fallback. */
static int open_tx_ring(struct txq *q, int len) {
    struct direction *d = q->d;
    int version = TPACKET_V2, vnet = 1;
    unsigned slot = 64, hdr = sizeof(struct virtio_net_hdr);
    while (slot < TX_DATA_OFFSET + hdr + (unsigned)len) slot <<= 1;
    unsigned block = slot > TX_RING_BLOCK ? slot : TX_RING_BLOCK;
    unsigned slots = TX_RING_BYTES / slot < TX_RING_SLOTS ? TX_RING_BYTES / slot : TX_RING_SLOTS;
    if (slots < block / slot) slots = block / slot;
    struct tpacket_req req = {.tp_block_size = block, .tp_block_nr = slots / (block / slot), .tp_frame_size = slot,
                              .tp_frame_nr = slots};
    const char *what = NULL;
    if (setsockopt(q->fd, SOL_PACKET, PACKET_VNET_HDR, &vnet, sizeof vnet) < 0) what = "PACKET_VNET_HDR";
    else if (setsockopt(q->fd, SOL_PACKET, PACKET_VERSION, &version, sizeof version) < 0) what = "PACKET_VERSION TPACKET_V2";
    else if (setsockopt(q->fd, SOL_PACKET, PACKET_TX_RING, &req, sizeof req) < 0) what = "PACKET_TX_RING";
    else {
        q->ring_len = (size_t)block * req.tp_block_nr;
        q->ring = mmap(NULL, q->ring_len, PROT_READ | PROT_WRITE, MAP_SHARED, q->fd, 0);
        if (q->ring == MAP_FAILED) {
            q->ring = NULL;
            what = "mmap of the transmit ring";
        }
    }
    if (what) {
        snprintf(d->send_fallback, sizeof d->send_fallback, "%s refused on %s: %s", what, d->tx->name,
                 strerror(errno));
        return -1;
    }
    q->slots = slots;
    q->slot = slot;
    q->frame = TX_DATA_OFFSET + hdr;
    struct virtio_net_hdr v = {.flags = 0, .gso_type = VIRTIO_NET_HDR_GSO_NONE, .hdr_len = (uint16_t)len};
    for (unsigned i = 0; i < slots; i++) {
        uint8_t *f = q->ring + (size_t)i * slot + TX_DATA_OFFSET;
        memcpy(f, &v, sizeof v);
        build_frame(d, f + hdr, len);
    }
    q->len = (uint32_t)(hdr + (unsigned)len);
    /* Each send names the frames' EtherType: a socket bound to protocol 0 (it receives nothing) has the kernel
     * read it from each frame's Ethernet header instead, an indirect call per frame (1.3 % of the sending core at
     * 64 B, perf record on this project's Intel VM). */
    q->to = (struct sockaddr_ll){.sll_family = AF_PACKET, .sll_ifindex = interface_index(d->tx->name),
                                 .sll_protocol = htons(d->tx->ip_version == 4 ? ETH_P_IP : ETH_P_IPV6),
                                 .sll_halen = 6};
    memcpy(q->to.sll_addr, d->tx->peer, 6);
    return 0;
}

static struct tpacket2_hdr *tx_slot(struct txq *q, unsigned i) {
    return (struct tpacket2_hdr *)(q->ring + (size_t)i * q->slot);
}

/* Hand thread q's frames k.. (at most n, send time t) to the kernel through its transmit ring: as many as there
 * are free slots, all sent before it returns (a frame the driver refused is sent again, as with sendmmsg).
 * Returns how many it sent: 0 when every slot still holds a frame in flight. */
static int send_ring(struct txq *q, uint64_t k0, int n, uint64_t t, uint64_t give_up) {
    int k = 0, threads = q->d->cfg->threads;
    unsigned first = q->head, last = q->head;
    uint64_t seq = (uint64_t)q->j + k0 * (uint64_t)threads;
    uint32_t networks = (uint32_t)q->d->cfg->networks, step = (uint32_t)threads % networks;
    uint32_t x = (uint32_t)(seq % networks);
    while (k < n) {
        struct tpacket2_hdr *h = tx_slot(q, q->head);
        if (__atomic_load_n(&h->tp_status, __ATOMIC_ACQUIRE) != TP_STATUS_AVAILABLE) break;
        stamp_frame(q, (uint8_t *)h + q->frame, seq, x, t);
        seq += (uint64_t)threads;
        x = next_network(x, step, networks);
        h->tp_len = q->len;
        __atomic_store_n(&h->tp_status, TP_STATUS_SEND_REQUEST, __ATOMIC_RELEASE);
        last = q->head;
        q->head = q->head + 1 == q->slots ? 0 : q->head + 1;
        k++;
    }
    if (!k) return 0;
    /* The kernel sends slots in order from its own head, which follows ours, and stops at the first slot not
     * requested; the batch is out when its last slot is no longer requested. */
    for (;;) {
        ssize_t r = sendto(q->fd, NULL, 0, MSG_DONTWAIT, (const struct sockaddr *)&q->to, sizeof q->to);
        if (r < 0 && errno != ENOBUFS && errno != EAGAIN && errno != EINTR) {
            char msg[160];
            snprintf(msg, sizeof msg, "send on the transmit ring failed: %s", strerror(errno));
            die(msg);
        }
        unsigned status = __atomic_load_n(&tx_slot(q, last)->tp_status, __ATOMIC_ACQUIRE);
        if (status & TP_STATUS_WRONG_FORMAT) die("the kernel refused a test frame in the transmit ring (wrong format)");
        if (!(status & TP_STATUS_SEND_REQUEST)) return k;
        /* A port that takes no frame (its link down, its queue stopped: ENOBUFS on every send) kept the sender here
         * for ever. Past the trial's end it stops: the frames of the batch the kernel took are sent, in order from
         * the first; the others never leave (no send follows), and count as unsent. */
        if (now_ns(CLOCK_MONOTONIC) > give_up) {
            int taken = 0;
            for (unsigned i = first; taken < k; i = i + 1 == q->slots ? 0 : i + 1, taken++)
                if (__atomic_load_n(&tx_slot(q, i)->tp_status, __ATOMIC_ACQUIRE) & TP_STATUS_SEND_REQUEST) break;
            return taken;
        }
        sched_yield();
    }
}

/* In-kernel counting (--receive-method tcx or bpf, the default where the kernel allows one). On a veth, and on any
 * port whose receive runs on the sending CPU, each frame the receive ring takes costs the sender a lock, a 128-byte
 * copy, a timestamp and a slot: measured, 14 % of the sending core, and 22 % more frames per CPU-second when the
 * ring takes none. So an eBPF program does the receiver's bookkeeping of the frames it needs no delay of (its own
 * trial's untagged test frames, no --timeout): it marks the frame's sequence number in a seen bitmap (an atomic
 * fetch-or: a bit already set is a duplicate), counts a frame of a thread's flow that comes after a later one as
 * reordered, and counts the rest as received, in a map the receiver reads at the end; a test frame that is no frame
 * received (foreign, a fragment, an atomic fragment, of the wrong length, an IPv6 one with a zero UDP checksum, an
 * IPv4 one whose header checksum does not verify, one whose UDP checksum does not verify: receive_frame says why
 * each) it counts as receive_frame does, in the same order. The counts stay those of the
 * ring: the same frames are counted, each once. A frame that reaches the program after the receiver stopped
 * listening (the tail's end on CLOCK_MONOTONIC, which the receiver writes into the map) is left uncounted, as the
 * receiver leaves one stamped after it.
 *
 * The one program runs in one of two places (enum receive_method):
 * - tcx: the port's tc ingress hook (a BPF_PROG_TYPE_SCHED_CLS program on a BPF link: Linux 6.6 and later, gone
 *   with the link's file descriptor, so with swtester). Taken only where the trial times no frame: then no packet
 *   socket listens on the port at all. A packet socket's tap (ETH_P_ALL) gets every frame before tc ingress does,
 *   and cost the sending core 3 % of it at 64 B besides its filter (tpacket_rcv, the skb's reference). It passes
 *   every frame on (TCX_NEXT): the tester's nftables counter, which cross-checks the counts, comes after it.
 * - bpf: a socket filter on the receive socket, which keeps the frames it counted out of the ring and passes the
 *   others to it: frames the receiver must time (tagged ones, or all with --timeout) after the program's seen and
 *   reordering checks, which the receiver then skips for them, and frames that are no test frame, which the
 *   receiver ignores.
 *
 * No libbpf or compiler: the program is a few dozen instructions, assembled below and loaded with bpf(2). */
enum { BPF_RECEIVED, BPF_DUPLICATES, BPF_REORDERED, BPF_STOP, BPF_FOREIGN, BPF_FRAGMENTS, BPF_ATOMIC_FRAGMENTS,
       BPF_IPV4_OPTIONS, BPF_WRONG_LENGTH, BPF_ZERO_CHECKSUM, BPF_BAD_CHECKSUM, BPF_BAD_IPV4_HEADER_CHECKSUM,
       BPF_FLOW0, BPF_WORDS = BPF_FLOW0 + MAX_THREADS };
/* Linux 6.6's enum bpf_attach_type BPF_TCX_INGRESS and enum tcx_action_base TCX_NEXT, which Debian 12's headers
 * (Linux 6.1) lack: enumerators, so no #ifdef can ask for them. */
#define TCX_INGRESS_ATTACH 46
#define TCX_NEXT_ACTION (-1)

struct bpf_asm {
    struct bpf_insn insn[1024]; /* the checksum: 2 per 4 bytes of a chunk, twice; a call per CSUM_DIFF_MAX bytes */
    int target[1024]; /* label an instruction jumps to, -1 none */
    int label[32];   /* instruction index of each label */
    int n;
};
enum { L_SHORT, L_PARSE, L_V6_FRAGMENT, L_V4, L_PAYLOAD, L_UDP_COPIED, L_LISTENING, L_CHECKSUM_KEPT,
       L_NOT_REORDERED, L_COUNT, L_DUPLICATE, L_FOREIGN, L_FRAGMENT, L_ATOMIC_FRAGMENT, L_V4_WITHOUT_OPTIONS,
       L_IPV4_OPTIONS, L_WRONG_LENGTH, L_ZERO_CHECKSUM, L_V4_CHECKSUM, L_SUM, L_COPIED_SUM, L_CHUNK, L_SUMMED,
       L_BAD_CHECKSUM, L_BAD_IPV4_HEADER_CHECKSUM, L_DROP, L_PASS, L_LABELS };
_Static_assert(L_LABELS <= (int)(sizeof ((struct bpf_asm *)0)->label / sizeof(int)), "a place for every label");

static void emit(struct bpf_asm *a, uint8_t code, uint8_t dst, uint8_t src, int16_t off, int32_t imm) {
    if (a->n == (int)(sizeof a->insn / sizeof a->insn[0])) die("the counting program outgrew its instruction array");
    a->target[a->n] = -1;
    a->insn[a->n++] = (struct bpf_insn){.code = code, .dst_reg = dst, .src_reg = src, .off = off, .imm = imm};
}
static void jump(struct bpf_asm *a, uint8_t code, uint8_t dst, uint8_t src, int32_t imm, int label) {
    emit(a, code, dst, src, 0, imm);
    a->target[a->n - 1] = label;
}
static void place(struct bpf_asm *a, int label) { a->label[label] = a->n; }
/* A 64-bit immediate (src BPF_PSEUDO_MAP_FD: a map's file descriptor) takes two instructions. */
static void load64(struct bpf_asm *a, uint8_t dst, uint8_t src, uint64_t value) {
    emit(a, BPF_LD | BPF_DW | BPF_IMM, dst, src, 0, (int32_t)(uint32_t)value);
    emit(a, 0, 0, 0, 0, (int32_t)(uint32_t)(value >> 32));
}
static void add_one(struct bpf_asm *a, int word) { /* state[word] += 1, atomically (several CPUs may receive) */
    emit(a, BPF_ALU64 | BPF_MOV | BPF_K, BPF_REG_4, 0, 0, 1);
    emit(a, BPF_STX | BPF_DW | BPF_ATOMIC, BPF_REG_7, BPF_REG_4, (int16_t)(word * 8), BPF_ADD);
}
/* At label: count the frame in state[word] and end as a frame counted (L_DROP). */
static void count_at(struct bpf_asm *a, int label, int word) { /* label < 0: here, unlabelled */
    if (label >= 0) place(a, label);
    add_one(a, word);
    jump(a, BPF_JMP | BPF_JA, 0, 0, 0, L_DROP);
}

/* Copy len bytes of the frame (R6) from offset (from register base, or from 0 with base < 0) to the stack at
 * stack; a frame shorter than that jumps to label short_frame. Clobbers R0-R5 (a helper call). */
static void copy_frame(struct bpf_asm *a, int base, int32_t offset, int16_t stack, int32_t len, int short_frame) {
    emit(a, BPF_ALU64 | BPF_MOV | BPF_X, BPF_REG_1, BPF_REG_6, 0, 0);
    if (base >= 0) emit(a, BPF_ALU64 | BPF_MOV | BPF_X, BPF_REG_2, (uint8_t)base, 0, 0);
    else emit(a, BPF_ALU64 | BPF_MOV | BPF_K, BPF_REG_2, 0, 0, 0);
    if (offset) emit(a, BPF_ALU64 | BPF_ADD | BPF_K, BPF_REG_2, 0, 0, offset);
    emit(a, BPF_ALU64 | BPF_MOV | BPF_X, BPF_REG_3, BPF_REG_10, 0, 0);
    emit(a, BPF_ALU64 | BPF_ADD | BPF_K, BPF_REG_3, 0, 0, stack);
    emit(a, BPF_ALU64 | BPF_MOV | BPF_K, BPF_REG_4, 0, 0, len);
    emit(a, BPF_JMP | BPF_CALL, 0, 0, 0, BPF_FUNC_skb_load_bytes);
    jump(a, BPF_JMP | BPF_JNE | BPF_K, BPF_REG_0, 0, 0, short_frame);
}

/* R1 = the u64 on the stack at sum plus the words 32-bit words from register base + at (two sums, R1 and R2, so
 * that the additions need not wait on each other). Clobbers R2-R4. */
static void add_words(struct bpf_asm *a, uint8_t base, int16_t at, int words, int16_t sum) {
    emit(a, BPF_LDX | BPF_MEM | BPF_DW, BPF_REG_1, BPF_REG_10, sum, 0);
    emit(a, BPF_ALU64 | BPF_MOV | BPF_K, BPF_REG_2, 0, 0, 0);
    for (int i = 0; i < words; i++) {
        uint8_t word = i % 2 ? BPF_REG_4 : BPF_REG_3;
        emit(a, BPF_LDX | BPF_MEM | BPF_W, word, base, (int16_t)(at + 4 * i), 0);
        emit(a, BPF_ALU64 | BPF_ADD | BPF_X, i % 2 ? BPF_REG_2 : BPF_REG_1, word, 0, 0);
    }
    emit(a, BPF_ALU64 | BPF_ADD | BPF_X, BPF_REG_1, BPF_REG_2, 0, 0);
}

/* R0 = the value of key (a u32 on the stack at key) in map fd; the program passes the frame on when there is none
 * (cannot happen: an array's keys are all there). Clobbers R1-R5. */
static void lookup(struct bpf_asm *a, int fd, int16_t key) {
    load64(a, BPF_REG_1, BPF_PSEUDO_MAP_FD, (uint64_t)fd);
    emit(a, BPF_ALU64 | BPF_MOV | BPF_X, BPF_REG_2, BPF_REG_10, 0, 0);
    emit(a, BPF_ALU64 | BPF_ADD | BPF_K, BPF_REG_2, 0, 0, key);
    emit(a, BPF_JMP | BPF_CALL, 0, 0, 0, BPF_FUNC_map_lookup_elem);
    jump(a, BPF_JMP | BPF_JEQ | BPF_K, BPF_REG_0, 0, 0, L_PASS);
}

static long bpf_call(int cmd, union bpf_attr *attr) { return syscall(__NR_bpf, cmd, attr, sizeof *attr); }

/* Direction d's counting program, for method (RECEIVE_TCX or RECEIVE_BPF), with its maps (registers: R6 the frame,
 * R7 the UDP header's offset, then the state map's value; R8 the payload's flags; R9 the sequence number; the stack:
 * copies of the frame's bytes, the frame's kind, map keys). Returns 0, or -1 with the reason in d->receive_fallback. */
static int open_counting(struct direction *d, enum receive_method method) {
    struct config *c = d->cfg;
    union bpf_attr attr;
    const char *what = NULL;
    int tc = method == RECEIVE_TCX;
    d->bpf_prog = d->bpf_state_fd = d->bpf_seen_fd = d->bpf_buffer_fd = -1;
    uint64_t words = d->intended / 64 + 1;
    memset(&attr, 0, sizeof attr);
    attr.map_type = BPF_MAP_TYPE_ARRAY;
    attr.key_size = 4;
    attr.value_size = BPF_WORDS * 8;
    attr.max_entries = 1;
    attr.map_flags = BPF_F_MMAPABLE;
    if ((d->bpf_state_fd = (int)bpf_call(BPF_MAP_CREATE, &attr)) < 0) what = "BPF_MAP_CREATE (counters)";
    else if ((d->bpf_state = mmap(NULL, BPF_WORDS * 8, PROT_READ | PROT_WRITE, MAP_SHARED, d->bpf_state_fd, 0)) ==
             MAP_FAILED) {
        d->bpf_state = NULL;
        what = "mmap of the counters map";
    } else if (words > UINT32_MAX) {
        errno = E2BIG;
        what = "the seen bitmap (too many frames)";
    } else {
        d->bpf_state[BPF_STOP] = UINT64_MAX; /* until the receiver knows when it stops listening */
        memset(&attr, 0, sizeof attr);
        attr.map_type = BPF_MAP_TYPE_ARRAY;
        attr.key_size = 4;
        attr.value_size = 8;
        attr.max_entries = (uint32_t)words;
        if ((d->bpf_seen_fd = (int)bpf_call(BPF_MAP_CREATE, &attr)) < 0) what = "BPF_MAP_CREATE (seen bitmap)";
        /* The copy of the bytes the UDP checksum sums, one per CPU: the program runs with bottom halves off (tc
         * ingress, a socket's receive), so no other run on its CPU comes in between. */
        memset(&attr, 0, sizeof attr);
        attr.map_type = BPF_MAP_TYPE_PERCPU_ARRAY;
        attr.key_size = 4;
        attr.value_size = (MAX_FRAME + 7) / 8 * 8;
        attr.max_entries = 1;
        if (!what && (d->bpf_buffer_fd = (int)bpf_call(BPF_MAP_CREATE, &attr)) < 0) what = "BPF_MAP_CREATE (buffer)";
    }
    if (!what) {
        static struct bpf_asm a; /* per call: main() opens the directions one after the other */
        memset(&a, 0, sizeof a);
        const uint8_t R0 = BPF_REG_0, R1 = BPF_REG_1, R2 = BPF_REG_2, R3 = BPF_REG_3, R6 = BPF_REG_6,
                      R7 = BPF_REG_7, R8 = BPF_REG_8, R9 = BPF_REG_9, FP = BPF_REG_10;
        /* Network-order fields compare as loaded (each constant as its bytes in the frame would load). */
        uint16_t ipv4, ipv6, trial;
        memcpy(&ipv4, (const uint8_t[]){0x08, 0x00}, 2);
        memcpy(&ipv6, (const uint8_t[]){0x86, 0xdd}, 2);
        memcpy(&trial, (const uint8_t[]){(uint8_t)(c->trial_id >> 8), (uint8_t)c->trial_id}, 2);
        /* Stack copies of the frame's bytes 0..23 at HEAD, and of its UDP header and payload at UDP, where they
         * sit in an IPv4 frame without options: one copy of its first IPV4_TEST_LEN bytes fills both. HEAD is such
         * that the payload is 8-byte aligned (the verifier refuses a misaligned stack load). KIND: the frame's
         * kind, 0 a whole datagram, KIND_FRAGMENT a first fragment, KIND_ATOMIC an IPv6 atomic fragment,
         * KIND_OPTIONS a whole IPv4 datagram with options; FRAGMENT: a copy of an IPv6 Fragment header. */
        enum { HEAD = -98, HEAD_LEN = 24, IPV4_UDP = 14 + 20, IPV4_TEST_LEN = IPV4_UDP + 8 + PAYLOAD_LEN,
               UDP = HEAD + IPV4_UDP, PAYLOAD = UDP + 8, KIND = -16, FRAGMENT = -24, KIND_FRAGMENT = 1,
               KIND_ATOMIC = 2, KIND_OPTIONS = 3, SUM = -40, OFFSET = -32, DIRECT_SUM = -112,
               BUFFER = -120 };
        uint16_t udp_protocol; /* the pseudo-header's protocol word, as loaded */
        memcpy(&udp_protocol, (const uint8_t[]){0, 17}, 2);
        emit(&a, BPF_ALU64 | BPF_MOV | BPF_X, R6, R1, 0, 0);
        emit(&a, BPF_ST | BPF_MEM | BPF_DW, FP, 0, KIND, 0);
        /* Parse as receive_frame() does, from copies (bpf_skb_load_bytes: cheaper than a load per field). A copy
         * is a helper call on the sending core (on a veth) per frame: an IPv4 frame without options takes one (R9 = 1
         * until the sequence number: that copy is there), any other frame two, the HEAD_LEN bytes first when it is
         * shorter than IPV4_TEST_LEN. A frame too short for either is dropped (bpf): one the receiver would
         * ignore too. */
        emit(&a, BPF_ALU64 | BPF_MOV | BPF_K, R9, 0, 0, 1);
        copy_frame(&a, -1, 0, HEAD, IPV4_TEST_LEN, L_SHORT);
        jump(&a, BPF_JMP | BPF_JA, 0, 0, 0, L_PARSE);
        place(&a, L_SHORT);
        emit(&a, BPF_ALU64 | BPF_MOV | BPF_K, R9, 0, 0, 0);
        copy_frame(&a, -1, 0, HEAD, HEAD_LEN, L_DROP);
        place(&a, L_PARSE);
        emit(&a, BPF_LDX | BPF_MEM | BPF_H, R0, FP, HEAD + 12, 0);
        jump(&a, BPF_JMP | BPF_JEQ | BPF_K, R0, 0, ipv4, L_V4);
        jump(&a, BPF_JMP | BPF_JNE | BPF_K, R0, 0, ipv6, L_PASS);
        emit(&a, BPF_LDX | BPF_MEM | BPF_B, R0, FP, HEAD + 14 + 6, 0);
        emit(&a, BPF_ALU64 | BPF_MOV | BPF_K, R7, 0, 0, 14 + 40);
        jump(&a, BPF_JMP | BPF_JEQ | BPF_K, R0, 0, 17, L_PAYLOAD);
        jump(&a, BPF_JMP | BPF_JNE | BPF_K, R0, 0, IPV6_FRAGMENT_HEADER, L_PASS);
        /* A UDP datagram behind an IPv6 Fragment header: a later fragment is no test frame; a first one is
         * KIND_FRAGMENT, an atomic one (offset 0, More clear) KIND_ATOMIC: 2 - More. */
        place(&a, L_V6_FRAGMENT);
        copy_frame(&a, -1, 14 + 40, FRAGMENT, 8, L_PASS);
        emit(&a, BPF_LDX | BPF_MEM | BPF_B, R0, FP, FRAGMENT, 0);
        jump(&a, BPF_JMP | BPF_JNE | BPF_K, R0, 0, 17, L_PASS);
        emit(&a, BPF_LDX | BPF_MEM | BPF_H, R0, FP, FRAGMENT + 2, 0);
        emit(&a, BPF_ALU | BPF_END | BPF_TO_BE, R0, 0, 0, 16); /* network to host order */
        jump(&a, BPF_JMP | BPF_JSET | BPF_K, R0, 0, IPV6_FRAGMENT_OFFSET, L_PASS);
        emit(&a, BPF_ALU64 | BPF_AND | BPF_K, R0, 0, 0, IPV6_MORE_FRAGMENTS);
        emit(&a, BPF_ALU64 | BPF_MOV | BPF_K, R1, 0, 0, KIND_ATOMIC);
        emit(&a, BPF_ALU64 | BPF_SUB | BPF_X, R1, R0, 0, 0);
        emit(&a, BPF_STX | BPF_MEM | BPF_DW, FP, R1, KIND, 0);
        emit(&a, BPF_ALU64 | BPF_MOV | BPF_K, R7, 0, 0, 14 + 40 + 8);
        jump(&a, BPF_JMP | BPF_JA, 0, 0, 0, L_PAYLOAD);
        place(&a, L_V4);
        emit(&a, BPF_LDX | BPF_MEM | BPF_B, R0, FP, HEAD + 14 + 9, 0);
        jump(&a, BPF_JMP | BPF_JNE | BPF_K, R0, 0, 17, L_PASS);
        /* A later fragment (an offset) is no test frame; a first one (More Fragments) is KIND_FRAGMENT. */
        emit(&a, BPF_LDX | BPF_MEM | BPF_H, R0, FP, HEAD + 14 + 6, 0);
        emit(&a, BPF_ALU | BPF_END | BPF_TO_BE, R0, 0, 0, 16); /* network to host order */
        jump(&a, BPF_JMP | BPF_JSET | BPF_K, R0, 0, IPV4_FRAGMENT_OFFSET, L_PASS);
        emit(&a, BPF_ALU64 | BPF_AND | BPF_K, R0, 0, 0, IPV4_MORE_FRAGMENTS);
        emit(&a, BPF_ALU64 | BPF_RSH | BPF_K, R0, 0, 0, 13); /* IPV4_MORE_FRAGMENTS: KIND_FRAGMENT */
        emit(&a, BPF_STX | BPF_MEM | BPF_DW, FP, R0, KIND, 0);
        emit(&a, BPF_LDX | BPF_MEM | BPF_B, R7, FP, HEAD + 14, 0);
        emit(&a, BPF_ALU64 | BPF_AND | BPF_K, R7, 0, 0, 15);
        emit(&a, BPF_ALU64 | BPF_LSH | BPF_K, R7, 0, 0, 2);
        emit(&a, BPF_ALU64 | BPF_ADD | BPF_K, R7, 0, 0, 14);
        jump(&a, BPF_JMP | BPF_JEQ | BPF_K, R7, 0, IPV4_UDP, L_V4_WITHOUT_OPTIONS);
        /* A header longer than 20 bytes: options (receive_frame says why that is a changed frame), KIND_OPTIONS
         * unless a first fragment (R0: its kind), which counts among the fragments first; its UDP header and
         * payload are copied from R7. */
        jump(&a, BPF_JMP | BPF_JNE | BPF_K, R0, 0, 0, L_PAYLOAD);
        emit(&a, BPF_ST | BPF_MEM | BPF_DW, FP, 0, KIND, KIND_OPTIONS);
        jump(&a, BPF_JMP | BPF_JA, 0, 0, 0, L_PAYLOAD);
        place(&a, L_V4_WITHOUT_OPTIONS);
        jump(&a, BPF_JMP | BPF_JEQ | BPF_K, R9, 0, 1, L_UDP_COPIED);
        /* The UDP header at R7 (its checksum), then the payload: seq, send time, trial id, flags, magic. */
        place(&a, L_PAYLOAD);
        copy_frame(&a, R7, 0, UDP, 8 + PAYLOAD_LEN, L_DROP);
        place(&a, L_UDP_COPIED);
        emit(&a, BPF_LDX | BPF_MEM | BPF_B, R0, FP, PAYLOAD + 15, 0);
        jump(&a, BPF_JMP | BPF_JNE | BPF_K, R0, 0, MAGIC, L_PASS);
        /* A test frame: R7 = the counters. */
        emit(&a, BPF_ST | BPF_MEM | BPF_W, FP, 0, -4, 0);
        lookup(&a, d->bpf_state_fd, -4);
        emit(&a, BPF_ALU64 | BPF_MOV | BPF_X, R7, R0, 0, 0);
        /* The clock is read only once the receiver has set its stop time (after the last frame was sent), not
         * while the senders send: on a veth the program runs on the sending core (the imm -1 is UINT64_MAX). */
        emit(&a, BPF_LDX | BPF_MEM | BPF_DW, R1, R7, BPF_STOP * 8, 0);
        jump(&a, BPF_JMP | BPF_JEQ | BPF_K, R1, 0, -1, L_LISTENING);
        emit(&a, BPF_JMP | BPF_CALL, 0, 0, 0, BPF_FUNC_ktime_get_ns); /* CLOCK_MONOTONIC */
        emit(&a, BPF_LDX | BPF_MEM | BPF_DW, R1, R7, BPF_STOP * 8, 0);
        jump(&a, BPF_JMP | BPF_JGT | BPF_X, R0, R1, 0, L_DROP);
        place(&a, L_LISTENING);
        emit(&a, BPF_LDX | BPF_MEM | BPF_H, R0, FP, PAYLOAD + 12, 0);
        jump(&a, BPF_JMP | BPF_JNE | BPF_K, R0, 0, trial, L_FOREIGN);
        emit(&a, BPF_LDX | BPF_MEM | BPF_B, R8, FP, PAYLOAD + 14, 0);
        emit(&a, BPF_ALU64 | BPF_MOV | BPF_X, R0, R8, 0, 0);
        emit(&a, BPF_ALU64 | BPF_AND | BPF_K, R0, 0, 0, 1);
        jump(&a, BPF_JMP | BPF_JNE | BPF_K, R0, 0, d->index, L_FOREIGN);
        emit(&a, BPF_LDX | BPF_MEM | BPF_W, R9, FP, PAYLOAD, 0);
        emit(&a, BPF_ALU | BPF_END | BPF_TO_BE, R9, 0, 0, 32); /* network to host order, upper half zero */
        load64(&a, R1, 0, d->intended);
        jump(&a, BPF_JMP | BPF_JGE | BPF_X, R9, R1, 0, L_FOREIGN); /* beyond the trial */
        emit(&a, BPF_LDX | BPF_MEM | BPF_DW, R0, FP, KIND, 0);
        jump(&a, BPF_JMP | BPF_JEQ | BPF_K, R0, 0, KIND_FRAGMENT, L_FRAGMENT);
        jump(&a, BPF_JMP | BPF_JEQ | BPF_K, R0, 0, KIND_ATOMIC, L_ATOMIC_FRAGMENT);
        jump(&a, BPF_JMP | BPF_JEQ | BPF_K, R0, 0, KIND_OPTIONS, L_IPV4_OPTIONS);
        /* Of another length than sent (arriving_size): skb->len, the frame from its MAC header, no FCS (at tc
         * ingress as in a socket filter, which both run with the MAC header pushed). */
        emit(&a, BPF_LDX | BPF_MEM | BPF_W, R0, R6, offsetof(struct __sk_buff, len), 0);
        jump(&a, BPF_JMP | BPF_JNE | BPF_K, R0, 0, arriving_size(d) - FCS_LEN, L_WRONG_LENGTH);
        /* The UDP checksum, as udp_checksum_ok verifies it: the sum of the frame's bytes from CHECKSUM_FROM to its
         * end (the addresses, then the UDP header and the whole payload; over IPv4 also its TTL, protocol and header
         * checksum, taken out again), its protocol and UDP length (the rest of the pseudo-header), must be 0 modulo
         * 0xffff. Summed as the machine loads 32-bit words: a sum of words whose bytes are swapped is the sum's own
         * times 256 modulo 0xffff, 0 where it is 0 (bpf_csum_diff's 32-bit sums are such sums too). Only frames of
         * the length sent get here, so the sizes are the program's constants. tc: in place where the frame is linear
         * (its start, a packet pointer, at OFFSET; the sum of its parts at DIRECT_SUM), else (a socket filter always)
         * its copy in the CPU's buffer: CHECKSUM_CHUNK bytes at a time (a loop, its offset at OFFSET, the buffer's
         * address at BUFFER: a helper call clobbers R1-R5), then the rest (R1, R2, the sum so far at SUM). An IPv4 checksum of zero is none (RFC 768); an IPv6 one is
         * counted above (zero_checksum). */
        const int32_t sum_len = arriving_size(d) - FCS_LEN - CHECKSUM_FROM, chunks = sum_len / CHECKSUM_CHUNK,
                      tail = sum_len % CHECKSUM_CHUNK;
        emit(&a, BPF_LDX | BPF_MEM | BPF_H, R0, FP, UDP + 6, 0);
        emit(&a, BPF_LDX | BPF_MEM | BPF_H, R1, FP, HEAD + 12, 0);
        jump(&a, BPF_JMP | BPF_JNE | BPF_K, R1, 0, ipv6, L_V4_CHECKSUM);
        jump(&a, BPF_JMP | BPF_JEQ | BPF_K, R0, 0, 0, L_ZERO_CHECKSUM);
        emit(&a, BPF_ALU64 | BPF_MOV | BPF_K, R1, 0, 0, 0);
        jump(&a, BPF_JMP | BPF_JA, 0, 0, 0, L_SUM);
        place(&a, L_V4_CHECKSUM);
        /* The IPv4 header checksum first (receive_frame says why): its 20 bytes are in the first copy (an IPv4 frame
         * of the length sent, without options), 5 words from HEAD + 14, 4-byte aligned; their sum must be 0 modulo
         * 0xffff, summed as the UDP checksum's below. R0 (the UDP checksum field) is kept. */
        emit(&a, BPF_LDX | BPF_MEM | BPF_W, R1, FP, HEAD + 14, 0);
        for (int k = 1; k < 5; k++) {
            emit(&a, BPF_LDX | BPF_MEM | BPF_W, R2, FP, (int16_t)(HEAD + 14 + 4 * k), 0);
            emit(&a, BPF_ALU64 | BPF_ADD | BPF_X, R1, R2, 0, 0);
        }
        emit(&a, BPF_ALU64 | BPF_MOD | BPF_K, R1, 0, 0, 0xffff);
        jump(&a, BPF_JMP | BPF_JNE | BPF_K, R1, 0, 0, L_BAD_IPV4_HEADER_CHECKSUM);
        jump(&a, BPF_JMP | BPF_JEQ | BPF_K, R0, 0, 0, L_CHECKSUM_KEPT);
        /* Minus the IPv4 header's bytes 8-11 (TTL to header checksum), which the sum takes from CHECKSUM_FROM: in
         * the first copy (a frame of the length sent is longer than IPV4_TEST_LEN). 0xffffffff - w is -w modulo
         * 0xffff (0xffffffff is 0). The 32-bit move zero-extends. */
        emit(&a, BPF_LDX | BPF_MEM | BPF_W, R0, FP, HEAD + CHECKSUM_FROM, 0);
        emit(&a, BPF_ALU | BPF_MOV | BPF_K, R1, 0, 0, -1);
        emit(&a, BPF_ALU64 | BPF_SUB | BPF_X, R1, R0, 0, 0);
        place(&a, L_SUM);
        emit(&a, BPF_LDX | BPF_MEM | BPF_H, R0, FP, UDP + 4, 0);
        emit(&a, BPF_ALU64 | BPF_ADD | BPF_X, R1, R0, 0, 0);
        emit(&a, BPF_ALU64 | BPF_ADD | BPF_K, R1, 0, 0, udp_protocol);
        emit(&a, BPF_STX | BPF_MEM | BPF_DW, FP, R1, SUM, 0);
        if (tc) { /* a socket filter may neither read the frame in place nor call bpf_csum_diff */
            const int32_t frame_end = arriving_size(d) - FCS_LEN, odd = sum_len % 4, odd_from = frame_end - odd;
            emit(&a, BPF_LDX | BPF_MEM | BPF_W, R2, R6, offsetof(struct __sk_buff, data), 0);
            emit(&a, BPF_LDX | BPF_MEM | BPF_W, R3, R6, offsetof(struct __sk_buff, data_end), 0);
            emit(&a, BPF_ALU64 | BPF_MOV | BPF_X, R0, R2, 0, 0);
            emit(&a, BPF_ALU64 | BPF_ADD | BPF_K, R0, 0, 0, frame_end);
            jump(&a, BPF_JMP | BPF_JGT | BPF_X, R0, R3, 0, L_COPIED_SUM);
            emit(&a, BPF_STX | BPF_MEM | BPF_DW, FP, R2, OFFSET, 0);
            emit(&a, BPF_ST | BPF_MEM | BPF_DW, FP, 0, DIRECT_SUM, 0);
            for (int32_t at = CHECKSUM_FROM; at + 4 <= frame_end; at += CSUM_DIFF_MAX) {
                int32_t len = (frame_end - at) / 4 * 4;
                emit(&a, BPF_LDX | BPF_MEM | BPF_DW, R3, FP, OFFSET, 0);
                if (len <= DIRECT_WORDS_MAX) { /* a few words: loaded, cheaper than a call */
                    emit(&a, BPF_LDX | BPF_MEM | BPF_DW, R1, FP, DIRECT_SUM, 0);
                    for (int32_t k = 0; k < len; k += 4) {
                        emit(&a, BPF_LDX | BPF_MEM | BPF_W, R0, R3, (int16_t)(at + k), 0);
                        emit(&a, BPF_ALU64 | BPF_ADD | BPF_X, R1, R0, 0, 0);
                    }
                    emit(&a, BPF_STX | BPF_MEM | BPF_DW, FP, R1, DIRECT_SUM, 0);
                    break;
                }
                emit(&a, BPF_ALU64 | BPF_ADD | BPF_K, R3, 0, 0, at);
                emit(&a, BPF_ALU64 | BPF_MOV | BPF_K, BPF_REG_4, 0, 0, len < CSUM_DIFF_MAX ? len : CSUM_DIFF_MAX);
                emit(&a, BPF_ALU64 | BPF_MOV | BPF_K, R1, 0, 0, 0);
                emit(&a, BPF_ALU64 | BPF_MOV | BPF_K, R2, 0, 0, 0);
                emit(&a, BPF_ALU64 | BPF_MOV | BPF_K, BPF_REG_5, 0, 0, 0);
                emit(&a, BPF_JMP | BPF_CALL, 0, 0, 0, BPF_FUNC_csum_diff);
                jump(&a, BPF_JMP | BPF_JSLT | BPF_K, R0, 0, 0, L_COPIED_SUM);
                emit(&a, BPF_LDX | BPF_MEM | BPF_DW, R1, FP, DIRECT_SUM, 0);
                emit(&a, BPF_ALU64 | BPF_ADD | BPF_X, R1, R0, 0, 0);
                emit(&a, BPF_STX | BPF_MEM | BPF_DW, FP, R1, DIRECT_SUM, 0);
            }
            emit(&a, BPF_LDX | BPF_MEM | BPF_DW, R1, FP, DIRECT_SUM, 0);
            if (odd) emit(&a, BPF_LDX | BPF_MEM | BPF_DW, R3, FP, OFFSET, 0);
            if (odd >= 2) {
                emit(&a, BPF_LDX | BPF_MEM | BPF_H, R0, R3, (int16_t)odd_from, 0);
                emit(&a, BPF_ALU64 | BPF_ADD | BPF_X, R1, R0, 0, 0);
            }
            if (odd % 2) {
                emit(&a, BPF_LDX | BPF_MEM | BPF_B, R0, R3, (int16_t)(odd_from + odd / 2 * 2), 0);
                emit(&a, BPF_ALU64 | BPF_ADD | BPF_X, R1, R0, 0, 0);
            }
            emit(&a, BPF_LDX | BPF_MEM | BPF_DW, R0, FP, SUM, 0);
            emit(&a, BPF_ALU64 | BPF_ADD | BPF_X, R1, R0, 0, 0);
            jump(&a, BPF_JMP | BPF_JA, 0, 0, 0, L_SUMMED);
        }
        place(&a, L_COPIED_SUM);
        /* One copy of all of it into this CPU's buffer (its address at BUFFER), a last word of 1-3 bytes zeroed first
         * (zeros add nothing), then its words CHECKSUM_CHUNK bytes at a time (a loop, the offset at OFFSET). */
        emit(&a, BPF_ST | BPF_MEM | BPF_W, FP, 0, -4, 0);
        lookup(&a, d->bpf_buffer_fd, -4);
        emit(&a, BPF_STX | BPF_MEM | BPF_DW, FP, R0, BUFFER, 0);
        if (sum_len % 4) emit(&a, BPF_ST | BPF_MEM | BPF_W, R0, 0, (int16_t)(sum_len / 4 * 4), 0);
        emit(&a, BPF_ALU64 | BPF_MOV | BPF_X, R3, R0, 0, 0);
        emit(&a, BPF_ALU64 | BPF_MOV | BPF_X, R1, R6, 0, 0);
        emit(&a, BPF_ALU64 | BPF_MOV | BPF_K, R2, 0, 0, CHECKSUM_FROM);
        emit(&a, BPF_ALU64 | BPF_MOV | BPF_K, BPF_REG_4, 0, 0, sum_len);
        emit(&a, BPF_JMP | BPF_CALL, 0, 0, 0, BPF_FUNC_skb_load_bytes);
        jump(&a, BPF_JMP | BPF_JNE | BPF_K, R0, 0, 0, L_DROP);
        if (chunks) {
            emit(&a, BPF_ST | BPF_MEM | BPF_DW, FP, 0, OFFSET, 0);
            place(&a, L_CHUNK);
            emit(&a, BPF_LDX | BPF_MEM | BPF_DW, BPF_REG_5, FP, BUFFER, 0);
            emit(&a, BPF_LDX | BPF_MEM | BPF_DW, R0, FP, OFFSET, 0);
            emit(&a, BPF_ALU64 | BPF_ADD | BPF_X, BPF_REG_5, R0, 0, 0);
            add_words(&a, BPF_REG_5, 0, CHECKSUM_CHUNK / 4, SUM);
            emit(&a, BPF_STX | BPF_MEM | BPF_DW, FP, R1, SUM, 0);
            emit(&a, BPF_LDX | BPF_MEM | BPF_DW, R0, FP, OFFSET, 0);
            emit(&a, BPF_ALU64 | BPF_ADD | BPF_K, R0, 0, 0, CHECKSUM_CHUNK);
            emit(&a, BPF_STX | BPF_MEM | BPF_DW, FP, R0, OFFSET, 0);
            jump(&a, BPF_JMP | BPF_JNE | BPF_K, R0, 0, chunks * CHECKSUM_CHUNK, L_CHUNK);
        }
        if (tail) {
            emit(&a, BPF_LDX | BPF_MEM | BPF_DW, BPF_REG_5, FP, BUFFER, 0);
            add_words(&a, BPF_REG_5, (int16_t)(chunks * CHECKSUM_CHUNK), (tail + 3) / 4, SUM);
        } else {
            emit(&a, BPF_LDX | BPF_MEM | BPF_DW, R1, FP, SUM, 0);
        }
        place(&a, L_SUMMED);
        emit(&a, BPF_ALU64 | BPF_MOD | BPF_K, R1, 0, 0, 0xffff);
        jump(&a, BPF_JMP | BPF_JNE | BPF_K, R1, 0, 0, L_BAD_CHECKSUM);
        place(&a, L_CHECKSUM_KEPT);
        /* Seen: bit seq % 64 of word seq / 64 (on little-endian hosts the receiver's byte-wise layout). R7 is kept
         * across the call (a callee-saved register). */
        emit(&a, BPF_ALU64 | BPF_MOV | BPF_X, R1, R9, 0, 0);
        emit(&a, BPF_ALU64 | BPF_RSH | BPF_K, R1, 0, 0, 6);
        emit(&a, BPF_STX | BPF_MEM | BPF_W, FP, R1, -8, 0);
        lookup(&a, d->bpf_seen_fd, -8);
        emit(&a, BPF_ALU64 | BPF_MOV | BPF_X, R1, R9, 0, 0);
        emit(&a, BPF_ALU64 | BPF_AND | BPF_K, R1, 0, 0, 63);
        emit(&a, BPF_ALU64 | BPF_MOV | BPF_K, R2, 0, 0, 1);
        emit(&a, BPF_ALU64 | BPF_LSH | BPF_X, R2, R1, 0, 0);
        emit(&a, BPF_ALU64 | BPF_MOV | BPF_X, R3, R2, 0, 0);
        emit(&a, BPF_STX | BPF_DW | BPF_ATOMIC, R0, R2, 0, BPF_OR | BPF_FETCH); /* R2: the word before */
        jump(&a, BPF_JMP | BPF_JSET | BPF_X, R2, R3, 0, L_DUPLICATE);
        /* Reordered: the flow (sender thread seq % threads) had a later frame; its word holds its largest seq + 1,
         * 0 before its first frame. The AND keeps the verifier sure the word is inside the map's value. */
        emit(&a, BPF_ALU64 | BPF_MOV | BPF_X, R1, R9, 0, 0);
        emit(&a, BPF_ALU64 | BPF_MOD | BPF_K, R1, 0, 0, c->threads);
        emit(&a, BPF_ALU64 | BPF_AND | BPF_K, R1, 0, 0, MAX_THREADS - 1);
        emit(&a, BPF_ALU64 | BPF_LSH | BPF_K, R1, 0, 0, 3);
        emit(&a, BPF_ALU64 | BPF_ADD | BPF_X, R1, R7, 0, 0);
        emit(&a, BPF_LDX | BPF_MEM | BPF_DW, R2, R1, BPF_FLOW0 * 8, 0);
        emit(&a, BPF_ALU64 | BPF_MOV | BPF_X, R3, R9, 0, 0);
        emit(&a, BPF_ALU64 | BPF_ADD | BPF_K, R3, 0, 0, 1);
        jump(&a, BPF_JMP | BPF_JGT | BPF_X, R3, R2, 0, L_NOT_REORDERED);
        add_one(&a, BPF_REORDERED);
        jump(&a, BPF_JMP | BPF_JA, 0, 0, 0, L_COUNT);
        place(&a, L_NOT_REORDERED);
        emit(&a, BPF_STX | BPF_MEM | BPF_DW, R1, R3, BPF_FLOW0 * 8, 0);
        place(&a, L_COUNT); /* to the receiver if it must time the frame (bpf only), else counted here */
        if (c->timeout >= 0) { /* every frame: the verifier refuses code that cannot run, so no count here */
            jump(&a, BPF_JMP | BPF_JA, 0, 0, 0, L_PASS);
        } else {
            if (c->latency_mode) jump(&a, BPF_JMP | BPF_JSET | BPF_K, R8, 0, 2, L_PASS);
            count_at(&a, -1, BPF_RECEIVED);
        }
        count_at(&a, L_DUPLICATE, BPF_DUPLICATES);
        count_at(&a, L_FOREIGN, BPF_FOREIGN);
        count_at(&a, L_FRAGMENT, BPF_FRAGMENTS);
        count_at(&a, L_ATOMIC_FRAGMENT, BPF_ATOMIC_FRAGMENTS);
        count_at(&a, L_IPV4_OPTIONS, BPF_IPV4_OPTIONS);
        count_at(&a, L_WRONG_LENGTH, BPF_WRONG_LENGTH);
        count_at(&a, L_ZERO_CHECKSUM, BPF_ZERO_CHECKSUM);
        count_at(&a, L_BAD_CHECKSUM, BPF_BAD_CHECKSUM);
        count_at(&a, L_BAD_IPV4_HEADER_CHECKSUM, BPF_BAD_IPV4_HEADER_CHECKSUM);
        /* Counted here, or dropped uncounted (bpf: out of the ring); tcx passes every frame on. */
        place(&a, L_DROP);
        emit(&a, BPF_ALU64 | BPF_MOV | BPF_K, R0, 0, 0, tc ? TCX_NEXT_ACTION : 0);
        emit(&a, BPF_JMP | BPF_EXIT, 0, 0, 0, 0);
        /* bpf: the first SNAP_LEN bytes into the ring. */
        place(&a, L_PASS);
        emit(&a, BPF_ALU64 | BPF_MOV | BPF_K, R0, 0, 0, tc ? TCX_NEXT_ACTION : SNAP_LEN);
        emit(&a, BPF_JMP | BPF_EXIT, 0, 0, 0, 0);
        for (int i = 0; i < a.n; i++)
            if (a.target[i] >= 0) a.insn[i].off = (int16_t)(a.label[a.target[i]] - i - 1);
        static char log[1 << 16];
        log[0] = '\0';
        memset(&attr, 0, sizeof attr);
        attr.prog_type = tc ? BPF_PROG_TYPE_SCHED_CLS : BPF_PROG_TYPE_SOCKET_FILTER;
        attr.insns = (uint64_t)(uintptr_t)a.insn;
        attr.insn_cnt = (uint32_t)a.n;
        attr.license = (uint64_t)(uintptr_t)"Apache-2.0"; /* no GPL-only helper is called */
        if ((d->bpf_prog = (int)bpf_call(BPF_PROG_LOAD, &attr)) < 0) {
            int e = errno;
            /* Again with the verifier's log (its last line says why), which a loaded program needs not fill. */
            attr.log_buf = (uint64_t)(uintptr_t)log;
            attr.log_size = sizeof log;
            attr.log_level = 1;
            bpf_call(BPF_PROG_LOAD, &attr);
            size_t end = strlen(log);
            while (end && log[end - 1] == '\n') log[--end] = '\0';
            const char *last = strrchr(log, '\n');
            snprintf(d->receive_fallback, sizeof d->receive_fallback, "BPF_PROG_LOAD refused: %s%s%.120s", strerror(e),
                     *log ? ": " : "", last ? last + 1 : log);
            return -1;
        }
    }
    if (what) {
        snprintf(d->receive_fallback, sizeof d->receive_fallback, "%s refused: %s", what, strerror(errno));
        return -1;
    }
    return 0;
}

static void close_counting(struct direction *d) {
    if (d->bpf_link >= 0) close(d->bpf_link); /* detaches a tcx program */
    if (d->bpf_state) munmap(d->bpf_state, BPF_WORDS * 8);
    d->bpf_state = NULL;
    if (d->bpf_prog >= 0) close(d->bpf_prog);
    if (d->bpf_state_fd >= 0) close(d->bpf_state_fd);
    if (d->bpf_seen_fd >= 0) close(d->bpf_seen_fd);
    if (d->bpf_buffer_fd >= 0) close(d->bpf_buffer_fd);
    d->bpf_link = d->bpf_prog = d->bpf_state_fd = d->bpf_seen_fd = d->bpf_buffer_fd = -1;
}

/* Direction d counting at its receiving port's tc ingress (RECEIVE_TCX): 0, or -1 with the reason in
 * d->receive_fallback. The link holds the program there until swtester closes it or ends. */
static int open_tcx(struct direction *d) {
    if (open_counting(d, RECEIVE_TCX) < 0) return -1;
    union bpf_attr attr;
    memset(&attr, 0, sizeof attr);
    attr.link_create.prog_fd = (uint32_t)d->bpf_prog;
    attr.link_create.target_ifindex = (uint32_t)interface_index(d->rx->name);
    attr.link_create.attach_type = TCX_INGRESS_ATTACH;
    if ((d->bpf_link = (int)bpf_call(BPF_LINK_CREATE, &attr)) < 0) {
        snprintf(d->receive_fallback, sizeof d->receive_fallback, "BPF_LINK_CREATE (tcx ingress) refused: %s",
                 strerror(errno));
        return -1;
    }
    return 0;
}

/* A receive ring's block for kept bytes of each frame: the smallest power of two from RX_BLOCK_MIN that holds the
 * frames of one block timeout at the trial's rate (RX_BLOCK_MAX at most). */
static uint32_t rx_block_bytes(const struct config *c, int kept) {
    double per_timeout = c->rate * RX_BLOCK_TIMEOUT_MS / 1000.0 * RX_FRAME_BYTES(kept);
    uint32_t block = RX_BLOCK_MIN;
    while (block < RX_BLOCK_MAX && block < per_timeout) block <<= 1;
    return block;
}

/* Seconds of frames one block of `block` bytes holds at the trial's rate, kept bytes of each frame: the kernel hands
 * it over at the block timeout, or sooner when it is full. */
static double rx_block_seconds(const struct config *c, uint32_t block, int kept) {
    double full = block / (c->rate * RX_FRAME_BYTES(kept)), timeout = RX_BLOCK_TIMEOUT_MS / 1000.0;
    return full < timeout ? full : timeout;
}

/* The most bytes one of the trial's receive rings may take (see RX_RING_MAX_BYTES): its share of the machine's memory
 * (one ring per direction), RX_RING_MAX_BYTES at most, RX_RING_BYTES at least. */
static uint64_t rx_ring_limit(const struct config *c) {
    long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    uint64_t rings = (uint64_t)((c->directions & 1) + (c->directions >> 1 & 1)), limit = RX_RING_MAX_BYTES;
    if (pages > 0 && page > 0 && rings) {
        uint64_t share = (uint64_t)pages * (uint64_t)page / RX_RING_MEMORY_SHARE / rings;
        if (share < limit) limit = share;
    }
    return limit < RX_RING_BYTES ? RX_RING_BYTES : limit;
}

/* Direction d's receive ring, kept bytes of each frame: blocks of rx_block_bytes, as many as hold the seconds of frames
 * at the trial's rate that a ring of RX_RING_BYTES keeping SNAP_LEN bytes holds (that ring itself where kept is
 * SNAP_LEN), within rx_ring_limit (see RX_RING_BYTES). */
static void rx_ring_geometry(struct direction *d, int kept) {
    const struct config *c = d->cfg;
    uint32_t snap_block = rx_block_bytes(c, SNAP_LEN), block = rx_block_bytes(c, kept);
    double seconds = (double)(RX_RING_BYTES / snap_block) * rx_block_seconds(c, snap_block, SNAP_LEN);
    double needed = seconds / rx_block_seconds(c, block, kept) - 1e-9; /* not one more for a rounding error */
    uint64_t blocks = (uint64_t)needed, least = RX_RING_BYTES / block, most = rx_ring_limit(c) / block;
    if ((double)blocks < needed) blocks++;
    d->rx_block_size = block;
    d->rx_blocks = (uint32_t)(blocks < least ? least : blocks > most ? most : blocks);
}

/* Seconds of frames direction d's receive ring (its blocks, rx_ring_geometry) holds at the trial's rate, kept bytes of
 * each frame: a block is handed over at the block timeout or when full of whole frames, whichever comes first. The
 * count of frames a block takes, not rx_block_seconds' fraction (which sizes the ring): what a receiver held up may
 * leave waiting before the kernel drops frames (tester_drops); "ring_seconds" in the report, and ring_check's. */
static double rx_ring_seconds(const struct direction *d, int kept) {
    double frames_a_block = (double)(d->rx_block_size / RX_FRAME_BYTES(kept)), timeout = RX_BLOCK_TIMEOUT_MS / 1000.0;
    double full = frames_a_block / d->cfg->rate;
    return d->rx_blocks * (full < timeout ? full : timeout);
}

/* Whether the trial times any frame (latency, frame timeout): then its receivers need their ring. */
static int times_frames(const struct config *c) { return c->latency_mode || c->timeout >= 0; }

/* Direction d's receiver: counting at tc ingress (open_tcx) where asked for or auto and the trial times no frame,
 * without a socket (returns -1); else a receive socket with a TPACKET_V3 ring (d->ring) and its filter: the counting
 * one (open_counting) where asked for and allowed, else one that keeps SNAP_LEN bytes of every frame. Auto takes
 * the first the kernel allows, the reason of each it refused in d->receive_fallback. */
static int open_receiver(struct direction *d) {
    const char *ifname = d->rx->name;
    enum receive_method asked = d->cfg->receive_method;
    char refused[sizeof d->receive_fallback] = "";
    d->bpf_link = d->bpf_prog = d->bpf_state_fd = d->bpf_seen_fd = d->bpf_buffer_fd = -1;
    if (asked == RECEIVE_TCX || (asked == RECEIVE_AUTO && !times_frames(d->cfg))) {
        if (open_tcx(d) == 0) {
            d->receive_method = RECEIVE_TCX;
            return -1;
        }
        close_counting(d);
        if (asked == RECEIVE_TCX) die(d->receive_fallback);
        snprintf(refused, sizeof refused, "tcx: %.190s", d->receive_fallback);
        *d->receive_fallback = '\0';
    }
    uint8_t **ring = &d->ring;
    int ifindex = interface_index(ifname), fd = packet_socket(), one = 1, version = TPACKET_V3;
    /* The filter first: the ring's size depends on what it keeps (the socket receives nothing until bound). */
    d->receive_method = RECEIVE_RING;
    if (asked != RECEIVE_RING) {
        if (open_counting(d, RECEIVE_BPF) == 0 &&
            setsockopt(fd, SOL_SOCKET, SO_ATTACH_BPF, &d->bpf_prog, sizeof d->bpf_prog) == 0)
            d->receive_method = RECEIVE_BPF;
        else if (!*d->receive_fallback)
            snprintf(d->receive_fallback, sizeof d->receive_fallback, "SO_ATTACH_BPF refused: %s", strerror(errno));
        if (d->receive_method != RECEIVE_BPF) {
            close_counting(d);
            if (asked == RECEIVE_BPF) die(d->receive_fallback);
        }
    }
    /* The reasons auto took neither tcx (first) nor the filter, as far as it tried them. */
    if (*refused) {
        char filter[sizeof d->receive_fallback];
        snprintf(filter, sizeof filter, "%s", d->receive_fallback);
        snprintf(d->receive_fallback, sizeof d->receive_fallback, "%.196s%s%.190s", refused, *filter ? "; bpf: " : "",
                 filter);
    }
    /* The ring alone (no counting filter: asked for, or auto where the kernel refused the filter) keeps each whole
     * frame: the receiver verifies its UDP checksum over all of it (udp_checksum_ok). With a counting filter, which
     * verified the checksum of every test frame it passes, the ring keeps SNAP_LEN bytes: all the receiver reads.
     * Blocks are sized for the bytes kept, so known only once the filter is attached or refused: auto sized them for
     * SNAP_LEN before it knew, and where the kernel refused the filter its ring of whole frames held fewer seconds
     * than rx_ring_geometry gives it (1518 B: from 21 kfps on; 0.41 s instead of 2.05 s at 100 kfps, 0.21 s instead
     * of 1.02 s at 200 kfps). */
    struct sock_filter whole[] = {{BPF_RET | BPF_K, 0, 0, MAX_FRAME}};
    struct sock_fprog prog = {.len = 1, .filter = whole};
    d->rx_kept = d->receive_method == RECEIVE_RING ? arriving_size(d) - FCS_LEN : SNAP_LEN;
    rx_ring_geometry(d, d->rx_kept);
    struct tpacket_req3 req = {.tp_block_size = d->rx_block_size, .tp_block_nr = d->rx_blocks,
                               .tp_frame_size = RX_FRAME_SIZE,
                               .tp_frame_nr = d->rx_block_size / RX_FRAME_SIZE * d->rx_blocks,
                               .tp_retire_blk_tov = RX_BLOCK_TIMEOUT_MS};
    if (setsockopt(fd, SOL_PACKET, PACKET_VERSION, &version, sizeof version) < 0)
        die("PACKET_VERSION TPACKET_V3: not supported by this kernel (needs >= 3.2)");
    if (setsockopt(fd, SOL_PACKET, PACKET_RX_RING, &req, sizeof req) < 0)
        die("PACKET_RX_RING: the kernel refused the receive ring (out of memory?)");
    *ring = mmap(NULL, (size_t)d->rx_block_size * d->rx_blocks, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (*ring == MAP_FAILED) die("mmap of the receive ring failed");
    if (d->receive_method == RECEIVE_RING) setsockopt(fd, SOL_SOCKET, SO_ATTACH_FILTER, &prog, sizeof prog);
    /* Kernel receive timestamps (CLOCK_REALTIME) taken as the frame enters the stack, for the frames the receiver
     * times (latency, frame timeout) and, with the ring alone, for its stop time. Not with the filter counting
     * every test frame: the option makes the kernel stamp every frame any port of the host receives (a clock
     * read per frame on the sending core), and the ring then gets only stray frames, which it stamps itself. */
    if (d->receive_method == RECEIVE_RING || times_frames(d->cfg))
        setsockopt(fd, SOL_SOCKET, SO_TIMESTAMPNS, &one, sizeof one);
    setsockopt(fd, SOL_PACKET, PACKET_IGNORE_OUTGOING, &one, sizeof one);
    bind_to(fd, ifindex, ETH_P_ALL);
    return fd;
}

/* The number in a /proc/sys file (the kernel's realtime throttle, main), -2 where it cannot be read (-1 is the
 * kernel's own "no throttle"). */
static long sysctl_long(const char *path) {
    FILE *f = fopen(path, "r");
    long value = -2;
    if (f && fscanf(f, "%ld", &value) != 1) value = -2;
    if (f) fclose(f);
    return value;
}

/* ns thread tid of this process has waited runnable but not running since it started (the second figure of its
 * /proc/self/task/TID/schedstat, the scheduler's run_delay), -1 where the kernel does not keep it. A realtime sender
 * waits so only behind the kernel's realtime throttle (its whole CPU's realtime work stopped for the rest of a
 * period, main), behind another realtime thread (swtester's receivers after a yield: microseconds) or a higher
 * class: stalls its pacing alone cannot tell from a hypervisor's, which the guest counts as running time (steal),
 * or from a stop (SIGSTOP), which is not runnable. Read at the start of sending, by main (start_senders), and at its
 * end, by the trial's last sender (end_of_sending): never in the sending loop. */
static int64_t waited_ns(pid_t tid) {
    char path[64];
    snprintf(path, sizeof path, "/proc/self/task/%d/schedstat", (int)tid);
    FILE *f = fopen(path, "r");
    unsigned long long run = 0, wait = 0;
    int got = f ? fscanf(f, "%llu %llu", &run, &wait) : 0;
    if (f) fclose(f);
    return got == 2 ? (int64_t)wait : -1;
}

/* A direction's figures from those of its senders, once every sender of the trial has its own (end_of_sending). */
static void sum_up(struct direction *d) {
    struct config *c = d->cfg;
    for (int i = 0; i < c->threads; i++) {
        struct txq *o = &d->txq[i];
        d->sent += o->sent;
        d->tags_sent += o->tags_sent;
        d->send_cpu += o->cpu;
        /* The most any one sender waited: each thread's schedule moved on its own, as slip_ns. */
        if (i == 0 || o->waited_ns < 0 || (d->send_waited_ns >= 0 && o->waited_ns > d->send_waited_ns))
            d->send_waited_ns = o->waited_ns;
        struct pacing *a = &d->pacing, *b = &o->pacing;
        if (b->max_lag_ns > a->max_lag_ns) a->max_lag_ns = b->max_lag_ns;
        if (b->start_lag_ns > a->start_lag_ns) a->start_lag_ns = b->start_lag_ns;
        if (b->max_burst > a->max_burst) a->max_burst = b->max_burst;
        if (b->slip_ns > a->slip_ns) a->slip_ns = b->slip_ns; /* each thread's schedule moved on its own */
        a->slips += b->slips;
        double seconds = (double)(o->end - c->start) / 1e9;
        if (seconds > d->send_duration) d->send_duration = seconds;
    }
}

/* Sender q has sent its last frame (or stopped; q->end is set). Its CPU time and its wait (waited_ns) are read only
 * once no sender of the trial has a frame left to send: where one CPU carries several senders (a one-CPU tester,
 * --cpus with one CPU, --threads; both directions' senders share a CPU wherever --cpus has fewer than three) a
 * sender runs until it blocks (SCHED_FIFO, the same priority), and reading its figures there (a system call for the
 * CPU time, opening, reading and closing a /proc file for the wait; ~2 ms under QEMU's TCG, where a 2 s trial at
 * 2,000 fps leaves the last frame 2.5 ms) held up the frames of the others that fell due meanwhile, and their send
 * time overran with it. So a sender that is not the last blocks, its figures still (a blocked thread neither runs
 * nor waits runnable), and the last reads every sender's through its CPU clock (pthread_getcpuclockid) and its
 * /proc schedstat: each figure as its own thread would have read it at its end, give or take the microsecond of
 * blocking, and none counts the wait for the others. The last then sums up the directions and lets the others end. */
static void end_of_sending(struct txq *q) {
    if (atomic_fetch_sub(&q->d->senders, 1) == 1) atomic_store(&q->d->send_done, 1); /* its receiver's tail starts */
    if (atomic_fetch_sub(&senders_sending, 1) != 1) {
        pthread_mutex_lock(&figures_lock);
        while (!figures_read) pthread_cond_wait(&figures_read_cond, &figures_lock);
        pthread_mutex_unlock(&figures_lock);
        return;
    }
    /* Every CPU time first, this thread's own before anything else, then every wait, its own first: its CPU time
     * counts none of the reading, and its wait none of it either (the others are blocked: theirs stand still). */
    q->cpu = (double)(now_ns(q->cpu_clock) - q->cpu_start) / 1e9;
    for (int i = 0; i < trial_sender_count; i++) {
        struct txq *o = trial_senders[i];
        if (o != q) o->cpu = (double)(now_ns(o->cpu_clock) - o->cpu_start) / 1e9;
    }
    for (int i = -1; i < trial_sender_count; i++) {
        struct txq *o = i < 0 ? q : trial_senders[i];
        if (i >= 0 && o == q) continue;
        int64_t waited_end = waited_ns(o->tid);
        o->waited_ns = o->waited_start < 0 || waited_end < 0 ? -1 : waited_end - o->waited_start;
    }
    for (int i = 0; i < trial_sender_count; i++)
        if (trial_senders[i]->j == 0) sum_up(trial_senders[i]->d);
    pthread_mutex_lock(&figures_lock);
    figures_read = 1;
    pthread_cond_broadcast(&figures_read_cond);
    pthread_mutex_unlock(&figures_lock);
}

/* Every sender of the trial is ready (pinned, its thread id known) and blocked: read each one's start figures, its CPU
 * time (through its clock) and its wait (waited_ns), then set the start START_MARGIN_NS ahead and release them all at
 * once. Each sender read its own, as it first ran after the start, while it and the others spun on a flag with
 * sched_yield: where one CPU carries several senders (a one-CPU tester, --threads, --cpus with fewer CPUs than
 * threads) those reads (a system call and opening, reading and closing a /proc file: ~2 ms each under QEMU's TCG)
 * held up the first frames of the others due meanwhile (measured with each read made 2 ms: 5.6-7.7 ms late, sent in
 * a burst after). Read here, before the start, they hold up no frame. The figures keep their meaning: a blocked
 * thread neither runs nor waits runnable, so its CPU time and wait stand still until the release, and send_cpu and
 * send_waited_ns count from the release to the end of sending (end_of_sending). Before its first frame a released
 * sender wakes, sleeps and yields (START_WAKE_NS): they count that yielding, at most START_WAKE_NS of CPU time and of
 * waiting, runnable, behind the other threads of its CPU, and its wait to run after the release. That wait also
 * includes a sender's wait behind another sender of its CPU for its first frame (the spin hid it), which is a wait
 * within the trial as any later one. */
static void start_senders(struct config *c) {
    pthread_mutex_lock(&start_lock);
    while (senders_ready < trial_sender_count) pthread_cond_wait(&ready_cond, &start_lock);
    for (int i = 0; i < trial_sender_count; i++) {
        struct txq *q = trial_senders[i];
        q->cpu_start = now_ns(q->cpu_clock);
        q->waited_start = waited_ns(q->tid);
    }
    c->start = now_ns(CLOCK_MONOTONIC) + START_MARGIN_NS;
    started = 1;
    pthread_mutex_unlock(&start_lock);
    pthread_cond_broadcast(&start_cond);
}

static void *sender(void *arg) {
    struct txq *q = arg;
    struct direction *d = q->d;
    struct config *c = d->cfg;
    int len = d->tx->frame_size - FCS_LEN;
    uint64_t threads = (uint64_t)c->threads, j = (uint64_t)q->j;
    static __thread uint8_t frames[BATCH][MAX_FRAME]; /* sendmmsg's frames */
    if (d->send_method == SEND_SENDMMSG)
        for (int i = 0; i < BATCH; i++) build_frame(d, frames[i], len);
    struct mmsghdr msgs[BATCH];
    struct iovec iov[BATCH];
    memset(msgs, 0, sizeof msgs);
    for (int i = 0; i < BATCH; i++) {
        iov[i].iov_base = frames[i];
        iov[i].iov_len = (size_t)len;
        msgs[i].msg_hdr.msg_iov = &iov[i];
        msgs[i].msg_hdr.msg_iovlen = 1;
    }
    pin(c->cpus[(d->index * 2 + q->j) % c->ncpus]);
    /* Blocked until the start (start_senders), which reads this thread's start figures meanwhile. */
    pthread_mutex_lock(&start_lock);
    q->tid = (pid_t)syscall(SYS_gettid);
    senders_ready++;
    pthread_cond_signal(&ready_cond);
    while (!started) pthread_cond_wait(&start_cond, &start_lock);
    pthread_mutex_unlock(&start_lock);
    uint64_t start = c->start, k = 0, left = 0;
    /* This thread's frame k is frame j + k * threads: due at its start plus k of its periods. */
    struct pacing *p = &q->pacing;
    *p = (struct pacing){.start = start + (uint64_t)(1e9 / c->rate * (double)j),
                         .ns_per_frame = 1e9 / c->rate * (double)threads, .frames = q->frames};
    /* Its first frame: asleep until START_WAKE_NS before it, then yielding until it is due. */
    struct timespec wake = {.tv_sec = (time_t)((p->start - START_WAKE_NS) / 1000000000ull),
                            .tv_nsec = (long)((p->start - START_WAKE_NS) % 1000000000ull)};
    clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &wake, NULL);
    while (now_ns(CLOCK_MONOTONIC) < p->start) sched_yield();
    /* A tester that cannot keep up (or slipped by more than MAX_OVERRUN) stops here; the frames it did not send
     * count as lost. */
    uint64_t give_up = start + (uint64_t)(c->duration * 1e9 * (1 + MAX_OVERRUN));
    while (k < q->frames) {
        uint64_t now = now_ns(CLOCK_MONOTONIC), next = 0;
        if (now > give_up) break;
        uint64_t take = pacing_take(p, now, k, &next);
        if (take == 0) { /* not yet time: sleep until the next frame is due */
            /* Above one frame per pacing quantum, the thread wakes once per quantum and sends the frames due in it
             * together (see PACING_QUANTUM_NS). */
            if (p->ns_per_frame < PACING_QUANTUM_NS) next += PACING_QUANTUM_NS;
            /* A realtime thread wakes on time (no timer slack): it sleeps to the due time. In the normal class it
             * wakes up to ~50 us late: it sleeps to 10 us before and yields until then. */
            uint64_t early = c->realtime ? 0 : 10000;
            if (next > now + 2 * early) {
                struct timespec ts = {.tv_sec = (time_t)((next - early) / 1000000000ull),
                                      .tv_nsec = (long)((next - early) % 1000000000ull)};
                clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL);
            } else {
                sched_yield();
            }
            continue;
        }
        int n = (int)(take > BATCH ? BATCH : take);
        /* One send time for the batch: its frames leave in the same system call. */
        uint64_t t = now_ns(CLOCK_REALTIME);
        if (d->send_method == SEND_TX_RING) {
            int sent = send_ring(q, k, n, t, give_up);
            if (!sent) sched_yield(); /* every slot in flight: the receive side is behind */
            k += (uint64_t)sent;
            if (k == q->frames) left = now_ns(CLOCK_MONOTONIC); /* before the yield: see q->end below */
            if (c->realtime) sched_yield(); /* as after a sendmmsg batch, below */
            continue;
        }
        uint64_t seq = j + k * threads;
        uint32_t networks = (uint32_t)c->networks, step = (uint32_t)threads % networks, x = (uint32_t)(seq % networks);
        for (int i = 0; i < n; i++, seq += threads, x = next_network(x, step, networks))
            stamp_frame(q, frames[i], seq, x, t);
        int done = 0;
        while (done < n) {
            int r = sendmmsg(q->fd, msgs + done, (unsigned)(n - done), 0);
            if (r < 0) {
                if (errno != ENOBUFS && errno != EAGAIN && errno != EINTR) {
                    char msg[160];
                    snprintf(msg, sizeof msg, "sendmmsg failed: %s", strerror(errno));
                    die(msg);
                }
                if (now_ns(CLOCK_MONOTONIC) > give_up) break; /* as send_ring: a port that takes no frame */
                sched_yield();
                continue;
            }
            done += r;
        }
        k += (uint64_t)done;
        if (k == q->frames) left = now_ns(CLOCK_MONOTONIC);
        /* Realtime: the other threads on this CPU (the receivers, at the same priority) get their turn after each
         * batch; a sender that cannot keep up would otherwise never let them run. */
        if (c->realtime) sched_yield();
    }
    q->sent = k;
    /* Sending ended when the last frame left, not when this thread next ran: after its last batch it yields to the
     * other realtime threads of its CPU, and where one CPU carries both directions (a one-CPU tester, --cpus with
     * one CPU) the other sender may then send its own last batch first: read after that, the time had a trial whose
     * frames all left on schedule overrun and reported it invalid. A sender that stopped (give_up) or had no frame
     * ends now. Nothing more is read here: see end_of_sending. */
    q->end = left ? left : now_ns(CLOCK_MONOTONIC);
    end_of_sending(q);
    return NULL;
}

/* Count one received frame of direction d (f: its first len bytes of frame_len, the length it arrived with; rx_ns:
 * kernel receive time, CLOCK_REALTIME). A frame is reordered when a later frame of the same sender thread (seq
 * modulo threads: its flow) arrived before it. */
static void receive_frame(struct direction *d, const uint8_t *f, size_t len, size_t frame_len, uint64_t rx_ns,
                          uint64_t *max_seqs, int *anys) {
    struct config *c = d->cfg;
    int udp, fragment = 0, atomic = 0, options = 0;
    /* A fragment is not the frame sent: RFC 2544 counts the frames the DUT forwards (and its tester checks each one's
     * length, section 10). A DUT that fragments a test frame (a smaller MTU on its way out, Don't Fragment clear)
     * delivers a first fragment that carries the UDP header and the test payload: counted as received, that frame
     * showed no loss. It counts among the fragments, disclosed, and as lost. Later fragments carry no UDP header. */
    if (len >= 14 + 20 + 8 + PAYLOAD_LEN && f[12] == 0x08 && f[13] == 0x00 && f[23] == 17) {
        unsigned more_and_offset = (unsigned)(f[20] << 8 | f[21]) & IPV4_FRAGMENT;
        if (more_and_offset & IPV4_FRAGMENT_OFFSET) return; /* a later fragment */
        fragment = more_and_offset != 0;
        options = (f[14] & 15) != 5;
        udp = 14 + (f[14] & 15) * 4;
    } else if (len >= 14 + 40 + 8 + PAYLOAD_LEN && f[12] == 0x86 && f[13] == 0xdd && f[20] == 17) {
        udp = 14 + 40;
    } else if (len >= 14 + 40 + 8 + 8 + PAYLOAD_LEN && f[12] == 0x86 && f[13] == 0xdd &&
               f[20] == IPV6_FRAGMENT_HEADER && f[54] == 17) {
        /* A UDP datagram behind a Fragment header: its offset (13 bits) and More flag, without the reserved bits. */
        unsigned offset_and_more = (unsigned)(f[56] << 8 | f[57]) & (IPV6_FRAGMENT_OFFSET | IPV6_MORE_FRAGMENTS);
        if (offset_and_more & IPV6_FRAGMENT_OFFSET) return; /* a later fragment */
        /* A first fragment (More set): a SIIT DUT's translation of a frame too big for its IPv6 side, say. An atomic
         * fragment (offset 0, More clear: the whole datagram, RFC 6946) is what RFC 6145's translators sent for an
         * IPv4 datagram with Don't Fragment clear, and RFC 8021 deprecates: the frame sent had no Fragment header and
         * arrives 8 bytes longer, so it counts among the atomic_fragments, disclosed, and as lost. (TAYGA 0.9.2, the
         * local lab's SIIT DUT, sends none with strict-frag-hdr off, its default; measured 2026-11-26.) */
        fragment = offset_and_more != 0;
        atomic = !fragment;
        udp = 14 + 40 + 8;
    } else {
        return;
    }
    const uint8_t *pl = f + udp + 8;
    if ((size_t)(udp + 8 + PAYLOAD_LEN) > len || pl[15] != MAGIC) return;
    if ((uint16_t)(pl[12] << 8 | pl[13]) != c->trial_id || (pl[14] & 1) != d->index) { d->foreign++; return; }
    uint32_t s32;
    memcpy(&s32, pl, 4);
    uint64_t seq = ntohl(s32);
    if (seq >= d->intended) { d->foreign++; return; }
    if (fragment) { d->fragments++; return; }
    if (atomic) { d->atomic_fragments++; return; }
    /* IPv4 options (a header longer than 20 bytes) the frame sent had not: forwarding adds none (a router fills in
     * only the room a sender's Record Route or Timestamp option left, RFC 791; a SIIT translator writes no options,
     * RFC 7915 section 5.1), so the DUT changed the frame. Counted among the ipv4_options, disclosed, and as lost,
     * before wrong_length: one that keeps the length sent (its UDP payload cut by as much) is changed all the same,
     * and one that grew by them was neither padded nor cut. */
    if (options) { d->ipv4_options++; return; }
    /* RFC 2544 section 10: the tester checks each received frame's length. A test frame the DUT padded or cut (its
     * headers and test payload whole) is not the frame sent: counted among the wrong_length, disclosed, and as lost. */
    if (frame_len != (size_t)(arriving_size(d) - FCS_LEN)) { d->wrong_length++; return; }
    /* An IPv4 header checksum that does not verify: a receiving host discards the datagram (RFC 1122 section
     * 3.2.1.2; a router too, RFC 1812 section 5.2.2) before its UDP sees it, so the DUT did not forward the frame
     * sent (one that rewrote the TTL or an address without updating the checksum, RFC 1624; bytes it corrupted):
     * counted among the bad_ipv4_header_checksum, disclosed, and as lost; before the UDP checksum, as the host's IP
     * layer comes before its UDP. Its own count, not bad_checksum: it names the header the DUT got wrong (a TTL or
     * address rewrite), where bad_checksum names the UDP datagram (a translator's update of its checksum). With the
     * counting filter (bpf) the program has verified it. */
    if (d->receive_method == RECEIVE_RING && f[12] == 0x08 && !ipv4_header_checksum_ok(f)) {
        d->bad_ipv4_header_checksum++;
        return;
    }
    /* A UDP checksum field of zero means "no checksum" over IPv4 (RFC 768), but over IPv6 the checksum is mandatory
     * and a receiver discards such a datagram (RFC 8200 section 8.1): not a frame any host would take, so counted
     * among the zero_checksum, disclosed, and as lost. A translator that updates the checksum incrementally makes one
     * where RFC 768 wants 0xffff unless it maps the result (RFC 1624): TAYGA 0.9.2 does (the local lab's dual SIIT DUT:
     * 14 of 752,000 frames it translated to IPv6, one in 65,536 expected; measured 2026-11-26), and the next TAYGA
     * dropped each of them. */
    if (f[12] == 0x86 && f[13] == 0xdd && f[udp + 6] == 0 && f[udp + 7] == 0) { d->zero_checksum++; return; }
    /* A UDP checksum that does not verify: every receiving host discards the datagram (RFC 768; RFC 8200 section
     * 8.1), so the DUT did not forward the frame sent (a translator that updated the checksum wrongly for its new
     * addresses, RFC 7915 section 4.5 and 5.4; bytes the DUT corrupted): counted among the bad_checksum, disclosed,
     * and as lost. With the counting filter (bpf) the program has verified it (the ring keeps SNAP_LEN bytes of the
     * frames it passes); the ring alone keeps whole frames. */
    if (d->receive_method == RECEIVE_RING && (len < frame_len || !udp_checksum_ok(f, udp, frame_len))) {
        d->bad_checksum++;
        return;
    }
    if (d->receive_method != RECEIVE_BPF) { /* else the filter has: this frame is the first of its seq */
        if (d->seen[seq >> 3] & (1u << (seq & 7))) { d->duplicates++; return; }
        d->seen[seq >> 3] |= (uint8_t)(1u << (seq & 7));
        uint64_t *max_seq = &max_seqs[seq % (uint64_t)c->threads];
        int *any = &anys[seq % (uint64_t)c->threads];
        if (*any && seq < *max_seq) d->reordered++;
        if (!*any || seq > *max_seq) *max_seq = seq;
        *any = 1;
    }
    uint64_t tx = 0;
    for (int b = 0; b < 8; b++) tx = tx << 8 | pl[4 + b];
    uint64_t delay = rx_ns > tx ? rx_ns - tx : 0;
    /* A frame later than the frame timeout is lost (siitperf-pdv's rule; RFC 8219 sets no timeout); a late tagged
     * frame stays out of the histogram and counts among the lost or late tags (tags_sent - tags_received). */
    if (c->timeout >= 0 && (double)delay > c->timeout * 1e9) { d->late++; return; }
    d->received++;
    if (c->latency_mode && (pl[14] & 2)) {
        hdr_record(&d->delays, delay);
        d->tags_received++;
    }
}

static void *receiver(void *arg) {
    struct direction *d = arg;
    struct config *c = d->cfg;
    pin(c->cpus[(d->index * 2 + 1) % c->ncpus]);
    struct pollfd pfd = {.fd = d->rx_fd, .events = POLLIN | POLLERR};
    uint64_t max_seq[MAX_THREADS] = {0}, stop_at = 0, stop_rt = UINT64_MAX;
    int any[MAX_THREADS] = {0}, past_tail = 0;
    unsigned block = 0;
    for (;;) {
        uint64_t now = now_ns(CLOCK_MONOTONIC);
        if (atomic_load(&d->send_done) && !stop_at) {
            /* Receive for the tail time; frames stamped later arrived after the tester stopped listening. */
            stop_at = now + (uint64_t)(c->tail * 1e9);
            stop_rt = now_ns(CLOCK_REALTIME) + (uint64_t)(c->tail * 1e9);
            if (d->bpf_state) __atomic_store_n(&d->bpf_state[BPF_STOP], stop_at, __ATOMIC_RELEASE);
        }
        if (!d->ring) { /* tcx: the program counts until stop_at; then the receiver waits as long as with a ring,
                         * more than any program run that began before it set stop_at takes */
            if (stop_at && now >= stop_at + 3 * RX_BLOCK_TIMEOUT_MS * 1000000ull) break;
            struct timespec pause = {0, RX_BLOCK_TIMEOUT_MS * 1000000L};
            nanosleep(&pause, NULL);
            continue;
        }
        struct tpacket_block_desc *bd = (struct tpacket_block_desc *)(d->ring + (size_t)block * d->rx_block_size);
        int ready = __atomic_load_n(&bd->hdr.bh1.block_status, __ATOMIC_ACQUIRE) & TP_STATUS_USER;
        /* After the tail, once the kernel has handed over the block that was filling, and the receiver has read
         * every block handed over before (frames received within the tail that a receiver held up by the machine
         * had not read yet: it stopped at this time alone, and counted them lost) or one past the tail (the
         * blocks after it hold later frames still: traffic that never ends does not keep it here). */
        if (stop_at && now >= stop_at + 3 * RX_BLOCK_TIMEOUT_MS * 1000000ull && (!ready || past_tail)) break;
        if (!ready) {
            poll(&pfd, 1, RX_BLOCK_TIMEOUT_MS);
            continue;
        }
        const uint8_t *h = (const uint8_t *)bd + bd->hdr.bh1.offset_to_first_pkt;
        for (uint32_t i = 0; i < bd->hdr.bh1.num_pkts; i++) {
            const struct tpacket3_hdr *ph = (const struct tpacket3_hdr *)h;
            uint64_t rx = (uint64_t)ph->tp_sec * 1000000000ull + ph->tp_nsec;
            if (rx <= stop_rt) receive_frame(d, h + ph->tp_mac, ph->tp_snaplen, ph->tp_len, rx, max_seq, any);
            else past_tail = 1;
            d->ring_frames++;
            h += ph->tp_next_offset;
        }
        __atomic_store_n(&bd->hdr.bh1.block_status, TP_STATUS_KERNEL, __ATOMIC_RELEASE);
        block = (block + 1) % d->rx_blocks;
    }
    struct tpacket_stats_v3 st;
    socklen_t sl = sizeof st;
    if (d->rx_fd >= 0 && getsockopt(d->rx_fd, SOL_PACKET, PACKET_STATISTICS, &st, &sl) == 0)
        d->tester_drops = st.tp_drops;
    if (d->bpf_state) { /* the program stopped counting at stop_at, which has passed */
        const uint64_t *w = d->bpf_state;
        d->received += __atomic_load_n(&w[BPF_RECEIVED], __ATOMIC_ACQUIRE);
        d->duplicates += __atomic_load_n(&w[BPF_DUPLICATES], __ATOMIC_ACQUIRE);
        d->reordered += __atomic_load_n(&w[BPF_REORDERED], __ATOMIC_ACQUIRE);
        d->foreign += __atomic_load_n(&w[BPF_FOREIGN], __ATOMIC_ACQUIRE);
        d->fragments += __atomic_load_n(&w[BPF_FRAGMENTS], __ATOMIC_ACQUIRE);
        d->atomic_fragments += __atomic_load_n(&w[BPF_ATOMIC_FRAGMENTS], __ATOMIC_ACQUIRE);
        d->ipv4_options += __atomic_load_n(&w[BPF_IPV4_OPTIONS], __ATOMIC_ACQUIRE);
        d->wrong_length += __atomic_load_n(&w[BPF_WRONG_LENGTH], __ATOMIC_ACQUIRE);
        d->zero_checksum += __atomic_load_n(&w[BPF_ZERO_CHECKSUM], __ATOMIC_ACQUIRE);
        d->bad_checksum += __atomic_load_n(&w[BPF_BAD_CHECKSUM], __ATOMIC_ACQUIRE);
        d->bad_ipv4_header_checksum += __atomic_load_n(&w[BPF_BAD_IPV4_HEADER_CHECKSUM], __ATOMIC_ACQUIRE);
    }
    return NULL;
}

static void release(struct direction *d) {
    free(d->seen);
    free(d->tag);
    free(d->delays.counts);
    if (d->ring) munmap(d->ring, (size_t)d->rx_block_size * d->rx_blocks);
    close_counting(d);
    for (int j = 0; j < d->cfg->threads; j++) {
        if (d->txq[j].ring) munmap(d->txq[j].ring, d->txq[j].ring_len);
        close(d->txq[j].fd);
    }
    if (d->rx_fd >= 0) close(d->rx_fd);
}

/* s as a JSON string, or null when it is empty. A fallback's reason holds a port's name and the kernel's words,
 * and a port's name may hold a quote or a backslash (Linux forbids only '/', ':' and white space): printed as it
 * was, it ended the report's string there, and the report was no JSON. Bytes outside printable ASCII are escaped
 * too, so the report is ASCII whatever the name. */
static const char *json_string(const char *s, char *out, size_t n) {
    if (!*s) return "null";
    size_t k = 0;
    out[k++] = '"';
    for (; *s && k + 8 < n; s++) {
        unsigned char ch = (unsigned char)*s;
        if (ch == '"' || ch == '\\') {
            out[k++] = '\\';
            out[k++] = (char)ch;
        } else if (ch < 0x20 || ch > 0x7e) {
            k += (size_t)snprintf(out + k, n - k, "\\u%04x", ch);
        } else {
            out[k++] = (char)ch;
        }
    }
    out[k++] = '"';
    out[k] = '\0';
    return out;
}

/* A thread that did not start would never end its direction (its receiver waits for every sender to finish), and
 * joining it is undefined: no trial then. */
static void start_thread(pthread_t *thread, void *(*run)(void *), void *arg) {
    int e = pthread_create(thread, NULL, run, arg);
    if (e) {
        char msg[128];
        snprintf(msg, sizeof msg, "could not start a thread: %s", strerror(e));
        die(msg);
    }
}

/* The report is the trial's only result: one that did not reach stdout whole (a full disk, a closed pipe) exits 2,
 * not 0 with what fitted. */
static void flush_report(void) {
    if (fflush(stdout) != 0 || ferror(stdout)) {
        char msg[128];
        snprintf(msg, sizeof msg, "writing the report to stdout failed: %s", strerror(errno));
        die(msg);
    }
}

static void usage(FILE *out) {
    fputs("usage: swtester --port0 IF --port1 IF --mac0 MAC --mac1 MAC --peer0 MAC --peer1 MAC\n"
          "       [--ip0 ADDR4] [--ip1 ADDR4] [--ip0v6 ADDR6] [--ip1v6 ADDR6] --rate FPS --duration S\n"
          "       [--size0 B] [--size1 B] [--version0 4|6] [--version1 4|6] [--directions bi|forward|reverse]\n"
          "       [--rfc4814] [--networks N] [--latency none|tagged|all] [--tagged N] [--tag-delay S]\n"
          "       [--timeout S] [--tail S]\n"
          "       [--cpus LIST] [--trial-id N] [--df] [--send-method auto|tx_ring|sendmmsg] [--threads N]\n"
          "       [--no-realtime] [--receive-method auto|tcx|bpf|ring]\n"
          "       [--probe]  (set up the sockets, print the send method each direction would use, send nothing)\n",
          out);
}

int main(int argc, char **argv) {
    struct config c = {.rate = 0, .duration = 0, .tail = 2.0, .timeout = -1, .directions = 3, .networks = 1,
                       .overrun_tolerance = 0.001, .threads = 1};
    c.port[0] = (struct port){.ip_version = 4, .frame_size = 64};
    c.port[1] = (struct port){.ip_version = 4, .frame_size = 64};
    inet_pton(AF_INET, "198.18.0.2", &c.port[0].ip4);
    inet_pton(AF_INET, "198.19.0.2", &c.port[1].ip4);
    inet_pton(AF_INET6, "2001:2:0:8000::2", &c.port[0].ip6);
    inet_pton(AF_INET6, "2001:2:0:9000::2", &c.port[1].ip6);
    c.cpus[0] = 0; c.ncpus = 1;
    c.trial_id = (uint16_t)(now_ns(CLOCK_REALTIME) ^ (uint64_t)getpid());
    int have_mac = 0, probe = 0;
    static struct option opts[] = {
        {"port0", 1, 0, 'a'}, {"port1", 1, 0, 'b'}, {"mac0", 1, 0, 'c'}, {"mac1", 1, 0, 'd'},
        {"peer0", 1, 0, 'e'}, {"peer1", 1, 0, 'f'}, {"ip0", 1, 0, 'g'}, {"ip1", 1, 0, 'h'},
        {"ip0v6", 1, 0, 'i'}, {"ip1v6", 1, 0, 'j'}, {"rate", 1, 0, 'r'}, {"duration", 1, 0, 't'},
        {"size0", 1, 0, 'k'}, {"size1", 1, 0, 'l'}, {"version0", 1, 0, 'm'}, {"version1", 1, 0, 'n'},
        {"directions", 1, 0, 'o'}, {"rfc4814", 0, 0, 'p'}, {"networks", 1, 0, 'q'}, {"latency", 1, 0, 's'},
        {"tagged", 1, 0, 'u'}, {"timeout", 1, 0, 'v'}, {"tail", 1, 0, 'w'}, {"cpus", 1, 0, 'x'},
        {"trial-id", 1, 0, 'y'}, {"help", 0, 0, 'z'}, {"df", 0, 0, 'D'}, {"tag-delay", 1, 0, 'T'},
        {"send-method", 1, 0, 'S'}, {"probe", 0, 0, 'P'}, {"threads", 1, 0, 'H'},
        {"no-realtime", 0, 0, 'N'}, {"receive-method", 1, 0, 'R'},
        {0, 0, 0, 0}};
    int o;
    while ((o = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        switch (o) {
        case 'a': c.port[0].name = optarg; break;
        case 'b': c.port[1].name = optarg; break;
        case 'c': parse_mac(optarg, c.port[0].mac, "mac0"); have_mac |= 1; break;
        case 'd': parse_mac(optarg, c.port[1].mac, "mac1"); have_mac |= 2; break;
        case 'e': parse_mac(optarg, c.port[0].peer, "peer0"); have_mac |= 4; break;
        case 'f': parse_mac(optarg, c.port[1].peer, "peer1"); have_mac |= 8; break;
        case 'g': if (inet_pton(AF_INET, optarg, &c.port[0].ip4) != 1) die("ip0: allowed an IPv4 address"); break;
        case 'h': if (inet_pton(AF_INET, optarg, &c.port[1].ip4) != 1) die("ip1: allowed an IPv4 address"); break;
        case 'i': if (inet_pton(AF_INET6, optarg, &c.port[0].ip6) != 1) die("ip0v6: allowed an IPv6 address"); break;
        case 'j': if (inet_pton(AF_INET6, optarg, &c.port[1].ip6) != 1) die("ip1v6: allowed an IPv6 address"); break;
        /* Any rate whose trial holds a frame (checked below with the duration): trexlab's searches may go below 1 fps
         * (a min_rate > 0), and a lower bound of 1 fps refused such a trial in the middle of a search. */
        case 'r': c.rate = parse_number(optarg, "rate", 0.001, 1e9); break;
        case 't': c.duration = parse_number(optarg, "duration", 0.001, 3600); break;
        case 'k': c.port[0].frame_size = (int)parse_integer(optarg, "size0", MIN_FRAME, MAX_FRAME); break;
        case 'l': c.port[1].frame_size = (int)parse_integer(optarg, "size1", MIN_FRAME, MAX_FRAME); break;
        case 'm': c.port[0].ip_version = (int)parse_integer(optarg, "version0", 4, 6); break;
        case 'n': c.port[1].ip_version = (int)parse_integer(optarg, "version1", 4, 6); break;
        case 'o':
            if (!strcmp(optarg, "bi")) c.directions = 3;
            else if (!strcmp(optarg, "forward")) c.directions = 1;
            else if (!strcmp(optarg, "reverse")) c.directions = 2;
            else die("directions: allowed bi, forward, reverse");
            break;
        case 'p': c.rfc4814 = 1; break;
        case 'q': c.networks = (int)parse_integer(optarg, "networks", 1, 256); break;
        case 's':
            if (!strcmp(optarg, "none")) c.latency_mode = 0;
            else if (!strcmp(optarg, "tagged")) c.latency_mode = 1;
            else if (!strcmp(optarg, "all")) c.latency_mode = 2;
            else die("latency: allowed none, tagged, all");
            break;
        case 'u': c.tagged = parse_integer(optarg, "tagged", 1, 10000000); break;
        case 'T': c.tag_delay = parse_number(optarg, "tag-delay", 0, 3600); break;
        case 'v': c.timeout = parse_number(optarg, "timeout", 0, 3600); break;
        case 'w': c.tail = parse_number(optarg, "tail", 0, 60); break;
        case 'x': {
            c.ncpus = 0;
            for (char *tok = strtok(optarg, ","); tok; tok = strtok(NULL, ",")) {
                /* The list held 8: a ninth CPU and later were dropped without a word, and the threads placed on
                 * them (up to the tenth: reverse sender 8) went to the list's first CPUs instead. */
                if (c.ncpus == CPU_SETSIZE) {
                    char msg[64];
                    snprintf(msg, sizeof msg, "cpus: allowed at most %d CPUs", CPU_SETSIZE);
                    die(msg);
                }
                c.cpus[c.ncpus++] = (int)parse_integer(tok, "cpus", 0, CPU_SETSIZE - 1);
            }
            if (!c.ncpus) die("cpus: allowed a comma-separated list of CPU numbers");
            break;
        }
        case 'y': c.trial_id = (uint16_t)parse_integer(optarg, "trial-id", 0, 65535); break;
        case 'D': c.dont_fragment = 1; break;
        case 'P': probe = 1; break;
        case 'N': c.normal_priority = 1; break;
        case 'H': c.threads = (int)parse_integer(optarg, "threads", 1, MAX_THREADS); break;
        case 'S':
            c.send_method = (enum send_method)parse_choice(optarg, "send-method", send_method_names, SEND_METHODS);
            break;
        case 'R':
            c.receive_method =
                (enum receive_method)parse_choice(optarg, "receive-method", receive_method_names, RECEIVE_METHODS);
            break;
        case 'z': usage(stdout); flush_report(); exit(0);
        default: exit(2); /* getopt has named the bad option on one line */
        }
    }
    /* getopt moves the arguments that are no option to the end: one there was ignored ("--df 1", a value given to a
     * flag that takes none, or a typo), and the trial ran without it. */
    if (optind < argc) {
        char msg[160];
        snprintf(msg, sizeof msg, "%s: not an option (swtester takes options only)", argv[optind]);
        die(msg);
    }
    if (!c.port[0].name || !c.port[1].name) die("port0 and port1: both test ports must be named");
    if (have_mac != 15) die("mac0, mac1, peer0, peer1: all four MAC addresses are needed");
    if (c.rate <= 0 || c.duration <= 0) die("rate and duration: both are needed");
    if (c.port[0].ip_version != 4 && c.port[0].ip_version != 6) die("version0: allowed 4 or 6");
    if (c.port[1].ip_version != 4 && c.port[1].ip_version != 6) die("version1: allowed 4 or 6");
    for (int p = 0; p < 2; p++) {
        int min = 14 + (c.port[p].ip_version == 4 ? 20 : 40) + 8 + PAYLOAD_LEN + FCS_LEN;
        int siit = c.port[p].ip_version == 6 && c.port[1 - p].ip_version == 4;
        if (siit && min < MIN_FRAME + SIIT_DELTA) min = MIN_FRAME + SIIT_DELTA;
        if (c.port[p].frame_size < min) {
            char msg[128];
            snprintf(msg, sizeof msg, "size%d=%d: IPv%d test frames%s need at least %d bytes", p,
                     c.port[p].frame_size, c.port[p].ip_version, siit ? " of SIIT" : "", min);
            die(msg);
        }
    }
    if (c.latency_mode == 1 && c.tagged < 1) die("tagged: >= 1 with --latency tagged");
    if (c.receive_method == RECEIVE_TCX && times_frames(&c))
        die("receive-method tcx: allowed only without --latency and --timeout (it counts; timed frames need a ring)");
    /* A CPU this process may not run on: pinning a thread to it fails, and the thread ran wherever the kernel put it
     * while the provenance said it was pinned. */
    cpu_set_t allowed;
    if (sched_getaffinity(0, sizeof allowed, &allowed) == 0)
        for (int i = 0; i < c.ncpus; i++)
            if (!CPU_ISSET(c.cpus[i], &allowed)) {
                char msg[128];
                snprintf(msg, sizeof msg, "cpus=%d: not a CPU this process may run on (%d allowed)", c.cpus[i],
                         CPU_COUNT(&allowed));
                die(msg);
            }
    if (c.tag_delay >= c.duration) {
        char msg[128];
        snprintf(msg, sizeof msg, "tag-delay=%g: allowed 0 <= tag-delay < duration (%g s)", c.tag_delay, c.duration);
        die(msg);
    }

    struct direction dirs[2];
    memset(dirs, 0, sizeof dirs);
    uint64_t intended = (uint64_t)(c.rate * c.duration + 0.5);
    /* A frame carries its sequence number in 32 bits: frame 2^32 + k would arrive as frame k, a duplicate, and the
     * trial would count it lost. No frame at all is no trial. */
    if (intended < 1 || intended > (1ull << 32)) {
        char msg[160];
        snprintf(msg, sizeof msg, "rate=%.10g, duration=%.10g: %llu frames per direction, allowed 1..%llu", c.rate,
                 c.duration, (unsigned long long)intended, 1ull << 32);
        die(msg);
    }
    /* The first frame sent at >= tag_delay: frame seq is due seq / rate s after the trial starts (sender()). */
    uint64_t first_tag = (uint64_t)(c.tag_delay * c.rate);
    while ((double)first_tag / c.rate < c.tag_delay) first_tag++;
    if (c.latency_mode == 1 && (first_tag >= intended || (uint64_t)c.tagged > intended - first_tag)) {
        char msg[160];
        snprintf(msg, sizeof msg, "tagged=%ld: allowed 1..%llu, the frames sent after tag-delay", c.tagged,
                 (unsigned long long)(first_tag < intended ? intended - first_tag : 0));
        die(msg);
    }
    for (int i = 0; i < 2; i++) {
        struct direction *d = &dirs[i];
        if (!(c.directions & (1 << i))) continue;
        d->index = i;
        d->cfg = &c;
        d->tx = &c.port[i];
        d->rx = &c.port[1 - i];
        d->intended = intended;
        d->seen = calloc(intended / 8 + 1, 1);
        d->tag = calloc(intended / 8 + 1, 1);
        if (!d->seen || !d->tag || !hdr_init(&d->delays)) die("out of memory for the trial's frame bitmaps");
        d->rng = 0x9E3779B97F4A7C15ull ^ ((uint64_t)c.trial_id << 8) ^ (uint64_t)i;
        if (c.latency_mode == 1) { /* one tag at a pseudorandom frame of each of `tagged` equal slots */
            uint64_t span = intended - first_tag, n = (uint64_t)c.tagged, tag_rng = d->rng ^ 0xD1B54A32D192ED03ull;
            for (uint64_t k = 0; k < n; k++) {
                uint64_t low = first_tag + (uint64_t)((unsigned __int128)span * k / n);
                uint64_t high = first_tag + (uint64_t)((unsigned __int128)span * (k + 1) / n);
                uint64_t seq = low + xorshift(&tag_rng) % (high - low);
                d->tag[seq >> 3] |= (uint8_t)(1u << (seq & 7));
            }
        }
        d->send_method = c.send_method == SEND_SENDMMSG ? SEND_SENDMMSG : SEND_TX_RING;
        atomic_store(&d->senders, c.threads);
        for (int j = 0; j < c.threads; j++) {
            struct txq *q = &d->txq[j];
            *q = (struct txq){.d = d, .j = j, .fd = open_sender(d->tx->name),
                              .frames = intended > (uint64_t)j ? (intended - 1 - (uint64_t)j) / (uint64_t)c.threads + 1 : 0,
                              .rng = d->rng ^ ((uint64_t)j * 0xBF58476D1CE4E5B9ull)};
            if (j == 0) {
                check_mtu(q->fd, d->tx->name, i, d->tx->frame_size, d->tx->frame_size, "sends");
                /* Port 1 - i receives this direction's frames, translated to its IP version by a SIIT DUT. */
                check_mtu(q->fd, d->rx->name, i, d->tx->frame_size, arriving_size(d), "receives");
            }
            if (d->send_method == SEND_TX_RING && open_tx_ring(q, d->tx->frame_size - FCS_LEN) < 0) {
                if (c.send_method == SEND_TX_RING) die(d->send_fallback);
                d->send_method = SEND_SENDMMSG; /* auto: every thread of the direction falls back */
            }
        }
        if (d->send_method == SEND_SENDMMSG) /* fresh sockets: one with a ring or a vnet header set sends no sendmmsg */
            for (int j = 0; j < c.threads; j++) {
                struct txq *q = &d->txq[j];
                if (q->ring) munmap(q->ring, q->ring_len);
                q->ring = NULL;
                close(q->fd);
                q->fd = open_sender(d->tx->name);
            }
        d->rx_fd = open_receiver(d);
    }
    /* The send method: the same for every direction unless a ring was refused on one port only. */
    const char *method = NULL;
    for (int i = 0; i < 2; i++)
        if (c.directions & (1 << i)) {
            const char *m = send_method_names[dirs[i].send_method];
            method = method == NULL || !strcmp(method, m) ? m : "mixed";
        }
    /* The fallbacks' reasons as JSON strings (json_string): at most six characters for each of theirs. */
    char sent_why[6 * sizeof dirs[0].send_fallback + 3], received_why[6 * sizeof dirs[0].receive_fallback + 3];
    if (probe) {
        printf("{\"tester\": \"swtester\", \"version\": \"0.1\", \"send_method\": \"%s\", \"directions\": {", method);
        for (int i = 0, first = 1; i < 2; i++)
            if (c.directions & (1 << i)) {
                printf("%s\"%s\": {\"send_method\": \"%s\", \"send_method_fallback\": %s, "
                       "\"receive_method\": \"%s\", \"receive_method_fallback\": %s}", first ? "" : ", ",
                       i ? "reverse" : "forward", send_method_names[dirs[i].send_method],
                       json_string(dirs[i].send_fallback, sent_why, sizeof sent_why),
                       receive_method_names[dirs[i].receive_method],
                       json_string(dirs[i].receive_fallback, received_why, sizeof received_why));
                first = 0;
                release(&dirs[i]);
            }
        printf("}}\n");
        flush_report();
        return 0;
    }
    /* Realtime scheduling (SCHED_FIFO, lowest priority) for the sender and receiver threads, inherited from this
     * one. A hardware or DPDK tester owns its cores; on a machine shared with other work a sender in the normal
     * class waits behind it for milliseconds now and then (measured here: 10-20 ms lags at 2-28 kfps, the
     * schedule slipping by 3-7 % of a trial; under SCHED_FIFO under 1 ms and no slip at 28 kfps). The kernel's
     * realtime throttling (sched_rt_runtime_us) still leaves the other work 5 % of each CPU. Without the
     * privilege (not root) the threads run as before: "realtime" in the report says which. */
    if (!c.normal_priority) {
        struct sched_param sp = {.sched_priority = sched_get_priority_min(SCHED_FIFO)};
        c.realtime = sched_setscheduler(0, SCHED_FIFO, &sp) == 0;
    }
    /* The realtime throttle: realtime threads that keep a CPU busy beyond sched_rt_runtime_us of each
     * sched_rt_period_us are all stopped on it for the rest of the period (50 ms of 1 s by default). A sender near
     * its ceiling reaches it; its stall then slips the schedule. Reported, with each sender's wait (waited_ns), so
     * that the trial's notes can name the cause (trexlab/generators/software.py, throttle_note). */
    c.rt_runtime_us = sysctl_long("/proc/sys/kernel/sched_rt_runtime_us");
    c.rt_period_us = sysctl_long("/proc/sys/kernel/sched_rt_period_us");
    pthread_t threads[2 * (MAX_THREADS + 1)];
    int nthreads = 0;
    for (int i = 0; i < 2; i++)
        if (c.directions & (1 << i)) {
            start_thread(&threads[nthreads++], receiver, &dirs[i]);
            for (int j = 0; j < c.threads; j++) {
                struct txq *q = &dirs[i].txq[j];
                start_thread(&threads[nthreads], sender, q);
                /* The clock the trial's last sender reads this thread's CPU time on (end_of_sending). */
                if (pthread_getcpuclockid(threads[nthreads++], &q->cpu_clock) != 0)
                    die("could not get a sender thread's CPU-time clock");
                trial_senders[trial_sender_count++] = q;
            }
        }
    atomic_store(&senders_sending, trial_sender_count);
    start_senders(&c);
    for (int i = 0; i < nthreads; i++) pthread_join(threads[i], NULL);

    printf("{\"tester\": \"swtester\", \"version\": \"0.1\", \"trial_id\": %u, \"rate\": %.3f, \"duration\": %.6f, "
           "\"overrun_tolerance\": %g, \"catch_up_limit\": %d, \"pacing_quantum_ns\": %d, \"realtime\": %s, "
           "\"send_method\": \"%s\", \"rt_runtime_us\": %ld, \"rt_period_us\": %ld, \"directions\": {",
           c.trial_id, c.rate, c.duration, c.overrun_tolerance, CATCH_UP, PACING_QUANTUM_NS,
           c.realtime ? "true" : "false", method, c.rt_runtime_us, c.rt_period_us);
    int first = 1;
    for (int i = 0; i < 2; i++) {
        struct direction *d = &dirs[i];
        if (!(c.directions & (1 << i))) continue;
        int valid = d->send_duration <= c.duration * (1 + c.overrun_tolerance) && d->sent == d->intended;
        printf("%s\"%s\": {\"intended\": %llu, \"sent\": %llu, \"received\": %llu, \"late\": %llu, "
               "\"duplicates\": %llu, \"reordered\": %llu, \"tester_drops\": %llu, \"foreign\": %llu, "
               "\"send_duration\": %.9f, \"send_cpu\": %.6f, \"valid\": %s, \"tags_sent\": %llu, "
               "\"tags_received\": %llu, \"tags_lost_or_late\": %llu, \"max_lag_ns\": %llu, \"start_lag_ns\": %llu, "
               "\"max_burst\": %llu, \"slips\": %llu, \"slip_ns\": %llu, \"send_method\": \"%s\", "
               "\"send_method_fallback\": %s, "
               "\"threads\": %d, \"receive_method\": \"%s\", \"receive_method_fallback\": %s, "
               "\"ring_frames\": %llu, \"ring_blocks\": %u, \"ring_block_bytes\": %u, \"fragments\": %llu, "
               "\"wrong_length\": %llu, \"zero_checksum\": %llu, \"atomic_fragments\": %llu, \"ipv4_options\": %llu, "
               "\"bad_checksum\": %llu, \"bad_ipv4_header_checksum\": %llu, \"send_waited_ns\": %lld, ",
               first ? "" : ", ", i ? "reverse" : "forward", (unsigned long long)d->intended,
               (unsigned long long)d->sent, (unsigned long long)d->received, (unsigned long long)d->late,
               (unsigned long long)d->duplicates, (unsigned long long)d->reordered,
               (unsigned long long)d->tester_drops, (unsigned long long)d->foreign, d->send_duration, d->send_cpu,
               valid ? "true" : "false", (unsigned long long)d->tags_sent, (unsigned long long)d->tags_received,
               (unsigned long long)(d->tags_sent > d->tags_received ? d->tags_sent - d->tags_received : 0),
               (unsigned long long)d->pacing.max_lag_ns, (unsigned long long)d->pacing.start_lag_ns,
               (unsigned long long)d->pacing.max_burst, (unsigned long long)d->pacing.slips,
               (unsigned long long)d->pacing.slip_ns,
               send_method_names[d->send_method], json_string(d->send_fallback, sent_why, sizeof sent_why),
               c.threads, receive_method_names[d->receive_method],
               json_string(d->receive_fallback, received_why, sizeof received_why), (unsigned long long)d->ring_frames,
               d->rx_blocks, d->rx_block_size, (unsigned long long)d->fragments,
               (unsigned long long)d->wrong_length, (unsigned long long)d->zero_checksum,
               (unsigned long long)d->atomic_fragments, (unsigned long long)d->ipv4_options,
               (unsigned long long)d->bad_checksum, (unsigned long long)d->bad_ipv4_header_checksum,
               (long long)d->send_waited_ns);
        /* The seconds its ring holds at the rate, which a receiver held up longer overruns (tester_drops); tcx has
         * no ring. */
        if (d->rx_blocks) printf("\"ring_seconds\": %.6f, \"latency\": ", rx_ring_seconds(d, d->rx_kept));
        else fputs("\"ring_seconds\": null, \"latency\": ", stdout);
        if (c.latency_mode) hdr_print(&d->delays, stdout);
        else fputs("null", stdout);
        printf("}");
        first = 0;
        release(d);
    }
    printf("}}\n");
    flush_report();
    return 0;
}

/* swtester: a software tester for RFC 2544 / RFC 5180 / RFC 8219 trials over AF_PACKET.
 *
 * Shared types of the four modules:
 *   frames.c   test frames: templates, checksums, RFC 4814 ports, the test signature
 *   sender.c   constant-rate senders (one thread per sender CPU, one socket per direction)
 *   receiver.c counting receivers on a TPACKET_V3 ring with kernel receive timestamps
 *   main.c     arguments, trial orchestration, the JSON result
 *
 * Vocabulary follows siitperf: the *forward* direction is tester port 0 -> port 1,
 * the *reverse* direction port 1 -> port 0; a stream is one direction's frames.
 */
#ifndef SWTESTER_H
#define SWTESTER_H

#include <netinet/in.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SWT_VERSION "1.0"
#define SWT_BATCH 64 /* frames per sendmmsg at most */
#define SWT_MAX_FRAME 1518
#define SWT_FCS 4 /* RFC 2544 counts the FCS in the frame size; the socket gets size - 4 bytes */

/* The test signature at the start of the UDP payload (12 bytes, big endian), small enough for
 * RFC 5180's smallest IPv6 frame (78 bytes):
 *   [0..1]  trial nonce: frames of an earlier trial that arrive late are not counted
 *   [2]     bit 0: stream (0 forward, 1 reverse); bit 7: latency-tagged
 *   [3..6]  sequence number, low 32 bits (the receiver extends it to 64 bits)
 *   [7..11] send timestamp, CLOCK_REALTIME nanoseconds modulo 2^40 (wraps after 18 minutes;
 *           latency is computed modulo 2^40 too, so only delays > 18 min would alias) */
#define SIG_LEN 12
#define SIG_TAGGED 0x80
#define TS_BITS 40
#define TS_MASK ((UINT64_C(1) << TS_BITS) - 1)

enum { FORWARD = 0, REVERSE = 1 };

struct port_range {
	uint16_t low, high;
};

/* What one direction sends: everything needed to build its frames. */
struct stream_conf {
	bool active;
	int ip_version;       /* of the frames this direction sends */
	int frame_size;       /* bytes, FCS included */
	uint8_t src_mac[6], dst_mac[6];
	struct in_addr src4, dst4;   /* dst: destination network 0; network x adds x to the 3rd octet */
	struct in6_addr src6, dst6;  /* dst: network x adds x to the 4th 16-bit group */
	int networks;         /* destination networks cycled, 1..256 */
	bool random_ports;    /* RFC 4814 pseudorandom ports, else fixed */
	struct port_range sport, dport;
	uint16_t fixed_sport, fixed_dport;
};

/* A direction's prepared frames: one template per destination network, complete except for
 * the ports, the signature and the UDP checksum, which every frame sets. */
struct stream_frames {
	int len;             /* bytes handed to the socket (frame size - FCS) */
	int udp_offset, sig_offset;
	int networks;
	uint8_t *templates;  /* networks * len bytes */
	uint32_t *sums;      /* per template: one's-complement sum of the UDP pseudo header, header and
			      * payload with ports, signature and checksum zero */
};

/* Fill a frame for sequence number seq from the template of a destination network: ports,
 * signature and UDP checksum are added to the template's precomputed sum, so a frame costs a
 * copy and a few additions.  frames_build returns 0 or -1 with a message in err. */
int frames_build(const struct stream_conf *c, struct stream_frames *f, char *err, size_t errlen);
void frames_free(struct stream_frames *f);
void frame_fill(const struct stream_frames *f, uint8_t *out, uint64_t seq, int network, uint16_t sport,
		uint16_t dport, uint16_t nonce, uint8_t flags, uint64_t ts_ns);
/* Offset of the test signature in a received frame, or -1 if it is no IPv4/IPv6 UDP frame. */
int frame_signature_offset(const uint8_t *frame, int len);
uint16_t inet_checksum(const void *data, size_t len, uint32_t sum);

/* A small, fast PRNG (xoshiro256**) and an unbiased draw from [low, high]. */
struct rng {
	uint64_t s[4];
};
void rng_seed(struct rng *r, uint64_t seed);
uint64_t rng_next(struct rng *r);
uint16_t rng_port(struct rng *r, struct port_range range);

/* One-way delay histogram: exact nanoseconds below 4096 ns, then 2048 sub-buckets per power
 * of two (relative resolution better than 0.05 %), as HDR histograms do. */
#define LAT_SUB_BITS 11
#define LAT_BUCKETS ((64 - LAT_SUB_BITS + 1) << LAT_SUB_BITS)
struct latency_hist {
	uint64_t *counts; /* LAT_BUCKETS */
	uint64_t samples;
};
void lat_record(struct latency_hist *h, uint64_t ns);
uint64_t lat_bucket_value(size_t bucket); /* the middle of a bucket, in ns */

enum latency_mode { LAT_NONE, LAT_TAGGED, LAT_ALL };

/* The whole trial, shared by all threads. */
struct trial {
	struct stream_conf conf[2];
	struct stream_frames frames[2];
	char ifname[2][32];
	int ifindex[2];
	double rate;          /* frames/s per direction */
	uint64_t frames;      /* per active direction */
	double duration;      /* s, = frames / rate */
	enum latency_mode latency;
	uint64_t tagged;      /* tagged frames per direction (LAT_TAGGED) */
	double timeout;       /* s, 0 = none: frames later than this count as late */
	double tail;          /* s of receiving after sending stops */
	int sender_cpu[2], receiver_cpu[2]; /* -1: not pinned */
	uint64_t seed;
	uint16_t nonce;
	uint64_t t0_mono;     /* ns, CLOCK_MONOTONIC: frame i of a direction is due at t0 + i / rate */
	_Atomic uint64_t send_end_mono; /* ns: when the last sender finished; 0 while sending */
	_Atomic int senders_running;
};

struct send_result {
	uint64_t sent;
	uint64_t done_mono;   /* ns: return of the last sendmmsg */
	uint64_t first_mono, last_mono; /* ns: before the first and the last frame's system call */
	uint64_t syscalls, errors;
	int max_batch;
	int error;            /* errno of a fatal error, 0 if none */
};

struct recv_result {
	uint64_t received;    /* test frames of this stream within the frame timeout */
	uint64_t late;        /* test frames of this stream later than the frame timeout */
	uint64_t duplicates, reordered;
	uint64_t foreign;     /* frames with a test signature of another trial or stream */
	uint64_t negative;    /* receive timestamp before the send timestamp (clock trouble) */
	uint64_t tester_drops;/* PACKET_STATISTICS tp_drops: frames the ring had no room for */
	struct latency_hist hist;
	int error;
};

/* Sockets are opened by main before any thread starts, so errors come before traffic. */
int sender_socket(const struct trial *t, int port, char *err, size_t errlen);
int receiver_open(const struct trial *t, int port, char *err, size_t errlen);

struct sender_args {
	struct trial *t;
	int directions[2];
	int ndirections;
	int fds[2];
	struct send_result *res[2];
	int cpu;
};
void *sender_thread(void *arg);

struct receiver_args {
	struct trial *t;
	int port;             /* receives the stream of direction (port == 1 ? FORWARD : REVERSE) */
	int fd;
	void *ring;
	size_t ring_size;
	unsigned block_size, blocks;
	struct recv_result *res;
	uint8_t *seen;        /* bitmap of received sequence numbers */
	int cpu;
};
void *receiver_thread(void *arg);

uint64_t now_ns(int clock);
int pin_to_cpu(int cpu);

#endif

/* Test frames: Ethernet/IPv4/UDP and Ethernet/IPv6/UDP, built once per destination network
 * (pregenerated, as siitperf does) and completed per frame with ports and the test signature. */
#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "swtester.h"

#define ETH_LEN 14
#define IPV4_LEN 20
#define IPV6_LEN 40
#define UDP_LEN 8

static void put16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

/* One's-complement sum of 16-bit big-endian words, not yet folded or inverted. */
static uint32_t sum16(const uint8_t *p, size_t len, uint32_t sum)
{
	for (; len > 1; p += 2, len -= 2)
		sum += (uint32_t)(p[0] << 8 | p[1]);
	if (len)
		sum += (uint32_t)(p[0] << 8);
	return sum;
}

static uint16_t fold(uint32_t sum)
{
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return (uint16_t)sum;
}

uint16_t inet_checksum(const void *data, size_t len, uint32_t sum)
{
	return (uint16_t)~fold(sum16(data, len, sum));
}

/* Destination network x: the address plan adds x to the 3rd IPv4 octet (198.19.x.2) and to the
 * 4th IPv6 group (2001:2:0:90xx::2). */
static void destination(const struct stream_conf *c, int x, struct in_addr *d4, struct in6_addr *d6)
{
	*d4 = c->dst4;
	*d6 = c->dst6;
	((uint8_t *)d4)[2] = (uint8_t)(((uint8_t *)d4)[2] + x);
	uint16_t group = (uint16_t)(d6->s6_addr[6] << 8 | d6->s6_addr[7]);
	put16(&d6->s6_addr[6], (uint16_t)(group + x));
}

int frames_build(const struct stream_conf *c, struct stream_frames *f, char *err, size_t errlen)
{
	int l3_len = c->ip_version == 4 ? IPV4_LEN : IPV6_LEN;
	int min_size = ETH_LEN + l3_len + UDP_LEN + SIG_LEN + SWT_FCS;
	if (c->frame_size < min_size || c->frame_size > SWT_MAX_FRAME) {
		snprintf(err, errlen, "frame size %d: allowed %d..%d bytes for IPv%d", c->frame_size, min_size,
			 SWT_MAX_FRAME, c->ip_version);
		return -1;
	}
	f->len = c->frame_size - SWT_FCS;
	f->udp_offset = ETH_LEN + l3_len;
	f->sig_offset = f->udp_offset + UDP_LEN;
	f->networks = c->networks;
	f->templates = calloc((size_t)c->networks, (size_t)f->len);
	f->sums = calloc((size_t)c->networks, sizeof(*f->sums));
	if (!f->templates || !f->sums) {
		snprintf(err, errlen, "out of memory for frame templates");
		return -1;
	}
	uint16_t udp_len = (uint16_t)(f->len - f->udp_offset);
	for (int x = 0; x < c->networks; x++) {
		uint8_t *p = f->templates + (size_t)x * (size_t)f->len;
		struct in_addr d4;
		struct in6_addr d6;
		destination(c, x, &d4, &d6);
		memcpy(p, c->dst_mac, 6);
		memcpy(p + 6, c->src_mac, 6);
		uint8_t *ip = p + ETH_LEN, *udp = p + f->udp_offset;
		uint32_t pseudo;
		if (c->ip_version == 4) {
			put16(p + 12, 0x0800);
			ip[0] = 0x45;
			put16(ip + 2, (uint16_t)(IPV4_LEN + udp_len));
			put16(ip + 6, 0x4000); /* DF: a test frame is never fragmented */
			ip[8] = 64;
			ip[9] = IPPROTO_UDP;
			memcpy(ip + 12, &c->src4, 4);
			memcpy(ip + 16, &d4, 4);
			put16(ip + 10, inet_checksum(ip, IPV4_LEN, 0));
			pseudo = sum16(ip + 12, 8, IPPROTO_UDP + udp_len);
		} else {
			put16(p + 12, 0x86DD);
			ip[0] = 0x60;
			put16(ip + 4, udp_len);
			ip[6] = IPPROTO_UDP;
			ip[7] = 64;
			memcpy(ip + 8, &c->src6, 16);
			memcpy(ip + 24, &d6, 16);
			pseudo = sum16(ip + 8, 32, IPPROTO_UDP + udp_len);
		}
		put16(udp + 4, udp_len);
		/* Ports, signature and checksum are zero here; the rest of the payload is zero too. */
		f->sums[x] = sum16(udp, udp_len, pseudo);
	}
	return 0;
}

void frames_free(struct stream_frames *f)
{
	free(f->templates);
	free(f->sums);
	f->templates = NULL;
	f->sums = NULL;
}

void frame_fill(const struct stream_frames *f, uint8_t *out, uint64_t seq, int network, uint16_t sport,
		uint16_t dport, uint16_t nonce, uint8_t flags, uint64_t ts_ns)
{
	memcpy(out, f->templates + (size_t)network * (size_t)f->len, (size_t)f->len);
	uint8_t *udp = out + f->udp_offset, *sig = out + f->sig_offset;
	put16(udp, sport);
	put16(udp + 2, dport);
	put16(sig, nonce);
	sig[2] = flags;
	for (int i = 0; i < 4; i++)
		sig[3 + i] = (uint8_t)(seq >> (24 - 8 * i));
	uint64_t ts = ts_ns & TS_MASK;
	for (int i = 0; i < 5; i++)
		sig[7 + i] = (uint8_t)(ts >> (32 - 8 * i));
	uint32_t sum = f->sums[network] + sport + dport;
	uint16_t csum = (uint16_t)~fold(sum16(sig, SIG_LEN, sum));
	put16(udp + 6, csum ? csum : 0xffff); /* 0 means "no checksum" in UDP: send its equivalent */
}

int frame_signature_offset(const uint8_t *frame, int len)
{
	if (len < ETH_LEN + IPV4_LEN + UDP_LEN + SIG_LEN)
		return -1;
	uint16_t type = (uint16_t)(frame[12] << 8 | frame[13]);
	const uint8_t *ip = frame + ETH_LEN;
	if (type == 0x0800) {
		int ihl = (ip[0] & 0x0f) * 4;
		if ((ip[0] >> 4) != 4 || ip[9] != IPPROTO_UDP || ihl < IPV4_LEN)
			return -1;
		int off = ETH_LEN + ihl + UDP_LEN;
		return off + SIG_LEN <= len ? off : -1;
	}
	if (type == 0x86DD) {
		if ((ip[0] >> 4) != 6 || ip[6] != IPPROTO_UDP)
			return -1;
		int off = ETH_LEN + IPV6_LEN + UDP_LEN;
		return off + SIG_LEN <= len ? off : -1;
	}
	return -1;
}

/* xoshiro256** (Blackman & Vigna), seeded through splitmix64. */
static uint64_t rotl(uint64_t x, int k)
{
	return (x << k) | (x >> (64 - k));
}

void rng_seed(struct rng *r, uint64_t seed)
{
	for (int i = 0; i < 4; i++) {
		uint64_t z = (seed += UINT64_C(0x9E3779B97F4A7C15));
		z = (z ^ (z >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
		z = (z ^ (z >> 27)) * UINT64_C(0x94D049BB133111EB);
		r->s[i] = z ^ (z >> 31);
	}
}

uint64_t rng_next(struct rng *r)
{
	uint64_t *s = r->s, result = rotl(s[1] * 5, 7) * 9, t = s[1] << 17;
	s[2] ^= s[0];
	s[3] ^= s[1];
	s[1] ^= s[2];
	s[0] ^= s[3];
	s[2] ^= t;
	s[3] = rotl(s[3], 45);
	return result;
}

/* Uniform over [low, high] without modulo bias: Lemire's multiply-shift with rejection. */
uint16_t rng_port(struct rng *r, struct port_range range)
{
	uint32_t span = (uint32_t)range.high - range.low + 1;
	uint32_t threshold = (uint32_t)(-span) % span;
	for (;;) {
		uint64_t m = (rng_next(r) >> 32) * span;
		if ((uint32_t)m >= threshold)
			return (uint16_t)(range.low + (m >> 32));
	}
}

void lat_record(struct latency_hist *h, uint64_t ns)
{
	size_t bucket;
	if (ns < (UINT64_C(1) << (LAT_SUB_BITS + 1))) {
		bucket = (size_t)ns;
	} else {
		int top = 63 - __builtin_clzll(ns); /* >= LAT_SUB_BITS + 1 */
		int shift = top - LAT_SUB_BITS;
		bucket = ((size_t)(shift + 1) << LAT_SUB_BITS) + (size_t)((ns >> shift) - (UINT64_C(1) << LAT_SUB_BITS));
	}
	h->counts[bucket]++;
	h->samples++;
}

uint64_t lat_bucket_value(size_t bucket)
{
	size_t exact = (size_t)1 << (LAT_SUB_BITS + 1);
	if (bucket < exact)
		return bucket;
	int shift = (int)(bucket >> LAT_SUB_BITS) - 1;
	uint64_t mantissa = (bucket & ((1u << LAT_SUB_BITS) - 1)) + (UINT64_C(1) << LAT_SUB_BITS);
	uint64_t low = mantissa << shift;
	return low + ((UINT64_C(1) << shift) - 1) / 2;
}

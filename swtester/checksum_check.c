/*
 * checksum_check: swtester's checksum checks (the counting program of open_counting, both kinds, and
 * udp_checksum_ok and ipv4_header_checksum_ok, the ring's), run by the kernel on made-up frames (BPF_PROG_TEST_RUN:
 * no network), so that a test can check them at every frame size where the program's sums change shape (its
 * bpf_csum_diff calls, its copies and their last 1-3 bytes). For each size and IP version, frames whose padding after
 * the test payload is random and whose checksum is made again over it: each must verify; the same with one byte of
 * the pseudo-header's addresses, the UDP header or the padding changed must not (bad_checksum; over IPv4 a changed
 * address fails the header checksum first, bad_ipv4_header_checksum, and the UDP checksum once the header's is made
 * again). Over IPv4: a bit of the header changed (TTL, addresses, length, its checksum...) without its checksum made
 * again must count in bad_ipv4_header_checksum, not bad_checksum; the TTL one less with the header checksum updated
 * (a router's forwarding: not in the UDP checksum) must verify, and a UDP checksum of zero (none, RFC 768) too. Needs
 * CAP_BPF and CAP_NET_ADMIN.
 * Prints each error on a line, then "<frames> frames checked, <errors> errors"; exits 1 on an error, 2 when the
 * kernel refuses a program.
 */
#define main swtester_main /* the same program, not a copy: swtester's own main is not called */
#include "swtester.c"
#undef main

/* What a test run of the program counted: bad_checksum, bad_ipv4_header_checksum. */
struct counted {
    uint64_t udp, header;
};

/* Test-run program fd on the frame f (len bytes from its MAC header); the change of the two checksum counters.
 * A socket filter's test run starts the skb after an Ethernet header (it pulls one): the frame comes after 14 bytes
 * that stand for it, so that the filter sees it from its MAC header, as on a socket. */
static struct counted test_run(struct direction *d, int socket_filter, const uint8_t *f, int len) {
    static uint8_t in[14 + MAX_FRAME];
    int skip = socket_filter ? 14 : 0;
    memset(in, 0, 14);
    in[12] = f[12];
    in[13] = f[13];
    memcpy(in + skip, f, (size_t)len);
    union bpf_attr attr;
    memset(&attr, 0, sizeof attr);
    attr.test.prog_fd = (uint32_t)d->bpf_prog;
    attr.test.data_in = (uint64_t)(uintptr_t)in;
    attr.test.data_size_in = (uint32_t)(len + skip);
    attr.test.repeat = 1;
    struct counted before = {d->bpf_state[BPF_BAD_CHECKSUM], d->bpf_state[BPF_BAD_IPV4_HEADER_CHECKSUM]};
    if (bpf_call(BPF_PROG_TEST_RUN, &attr) < 0) {
        char msg[128];
        snprintf(msg, sizeof msg, "BPF_PROG_TEST_RUN of a %d B frame refused: %s", len, strerror(errno));
        die(msg);
    }
    return (struct counted){d->bpf_state[BPF_BAD_CHECKSUM] - before.udp,
                            d->bpf_state[BPF_BAD_IPV4_HEADER_CHECKSUM] - before.header};
}

/* Whether a test run counted the frame as it should: in bad_checksum (udp), in bad_ipv4_header_checksum (header),
 * in neither (both 0). */
static int counted_as(struct counted got, uint64_t udp, uint64_t header) { return got.udp == udp && got.header == header; }

/* The IPv4 frame's header checksum made again over its header as it is. */
static void header_checksum_again(uint8_t *f) {
    f[24] = f[25] = 0;
    uint16_t c = fold(sum16(f + 14, 20, 0));
    f[24] = (uint8_t)(c >> 8);
    f[25] = (uint8_t)c;
}

/* The frame's UDP checksum made again over all of it (its padding no longer zero). */
static void checksum_again(uint8_t *f, int len, int version, int udp) {
    f[udp + 6] = f[udp + 7] = 0;
    uint32_t sum = sum16(f + (version == 4 ? 26 : 22), version == 4 ? 8 : 32, 17 + (uint32_t)(len - udp));
    uint16_t c = fold(sum16(f + udp, (size_t)(len - udp), sum));
    if (c == 0) c = 0xffff; /* RFC 768: a computed 0 is sent as all ones */
    f[udp + 6] = (uint8_t)(c >> 8);
    f[udp + 7] = (uint8_t)c;
}

int main(void) {
    long frames = 0, errors = 0;
    uint64_t rng = 0x2545F4914F6CDD1Dull;
    static uint8_t f[MAX_FRAME];
    for (int version = 4; version <= 6; version += 2)
        /* Every size up to 700 B (past the first bpf_csum_diff call, CHECKSUM_CHUNK and DIRECT_WORDS_MAX), then
         * every 13th (each remainder modulo 4 alike) up to the largest a test run takes (a page). */
        for (int size = version == 4 ? MIN_FRAME : 82; size <= 3600; size += size < 700 ? 1 : 13)
            for (int socket_filter = 0; socket_filter <= 1; socket_filter++) {
                static struct config c;
                static struct direction d;
                memset(&c, 0, sizeof c);
                memset(&d, 0, sizeof d);
                c.rate = 1000; c.duration = 1; c.timeout = -1; c.threads = 1; c.networks = 1; c.trial_id = 7;
                c.port[0] = c.port[1] = (struct port){.name = "lo", .ip_version = version, .frame_size = size};
                inet_pton(AF_INET, "198.18.0.2", &c.port[0].ip4);
                inet_pton(AF_INET6, "2001:2:0:8000::2", &c.port[0].ip6);
                d.cfg = &c; d.tx = &c.port[0]; d.rx = &c.port[1]; d.intended = 1000;
                if (open_counting(&d, socket_filter ? RECEIVE_BPF : RECEIVE_TCX) < 0) die(d.receive_fallback);
                int len = size - FCS_LEN, udp = version == 4 ? 34 : 54, from = version == 4 ? 26 : 22;
                struct txq q = {.d = &d, .rng = 1};
                const char *kind = socket_filter ? "bpf" : "tcx";
                for (int k = 0; k < 2; k++) {
                    build_frame(&d, f, len);
                    stamp_frame(&q, f, xorshift(&rng) % d.intended, 0, xorshift(&rng));
                    for (int i = udp + 8 + PAYLOAD_LEN; i < len; i++) f[i] = (uint8_t)xorshift(&rng);
                    checksum_again(f, len, version, udp);
                    frames++;
                    if (!counted_as(test_run(&d, socket_filter, f, len), 0, 0) || !udp_checksum_ok(f, udp, (size_t)len) ||
                        (version == 4 && !ipv4_header_checksum_ok(f))) {
                        printf("IPv%d %d B (%s): a frame whose checksums verify counted as bad\n", version, size, kind);
                        errors++;
                    }
                    /* One byte changed: an address, the UDP header but its length, or the padding (the test payload
                     * is the frame's identity: changed, it is another frame or none). */
                    int at;
                    do at = from + (int)(xorshift(&rng) % (uint64_t)(len - from));
                    while (at == udp + 4 || at == udp + 5 || (at >= udp + 8 && at < udp + 8 + PAYLOAD_LEN));
                    uint8_t was = f[at];
                    f[at] ^= (uint8_t)(1u << (xorshift(&rng) % 8));
                    int none = f[udp + 6] == 0 && f[udp + 7] == 0; /* a checksum changed to zero: another count */
                    uint8_t h0 = f[24], h1 = f[25];
                    if (version == 4 && at < udp) { /* an address: the header checksum fails first */
                        frames++;
                        if (!counted_as(test_run(&d, socket_filter, f, len), 0, 1) || ipv4_header_checksum_ok(f)) {
                            printf("IPv4 %d B (%s): address byte %d changed, the header checksum verified\n", size,
                                   kind, at);
                            errors++;
                        }
                        header_checksum_again(f);
                    }
                    frames++;
                    if (!none && (!counted_as(test_run(&d, socket_filter, f, len), 1, 0) ||
                                  udp_checksum_ok(f, udp, (size_t)len))) {
                        printf("IPv%d %d B (%s): byte %d changed, the checksum verified\n", version, size, kind, at);
                        errors++;
                    }
                    f[at] = was;
                    if (version == 4) {
                        f[24] = h0;
                        f[25] = h1;
                    }
                    if (version == 4) {
                        uint8_t c0 = f[udp + 6], c1 = f[udp + 7], header[20];
                        memcpy(header, f + 14, 20);
                        /* One bit of the header that leaves it a test frame's (not its version and length, flags
                         * and fragment offset, protocol), its checksum as it was: a rewrite without the update. */
                        static const int changeable[] = {15, 16, 17, 18, 19, 22, 24, 25, 26, 27, 28, 29, 30, 31, 32, 33};
                        int bit = (int)(xorshift(&rng) % (8 * sizeof changeable / sizeof changeable[0]));
                        f[changeable[bit / 8]] ^= (uint8_t)(1u << (bit % 8));
                        frames++;
                        if (!counted_as(test_run(&d, socket_filter, f, len), 0, 1) || ipv4_header_checksum_ok(f)) {
                            printf("IPv4 %d B (%s): header byte %d changed, the header checksum verified\n", size,
                                   kind, changeable[bit / 8]);
                            errors++;
                        }
                        memcpy(f + 14, header, 20);
                        /* A router's forwarding: the TTL one less, the header checksum updated (RFC 1624). */
                        f[22]--;
                        header_checksum_again(f);
                        frames++;
                        if (!counted_as(test_run(&d, socket_filter, f, len), 0, 0) || !ipv4_header_checksum_ok(f) ||
                            !udp_checksum_ok(f, udp, (size_t)len)) {
                            printf("IPv4 %d B (%s): TTL one less, header checksum updated, counted as bad\n", size,
                                   kind);
                            errors++;
                        }
                        memcpy(f + 14, header, 20);
                        f[udp + 6] = f[udp + 7] = 0;
                        f[len - 1] ^= 1;
                        frames++;
                        if (!counted_as(test_run(&d, socket_filter, f, len), 0, 0) ||
                            !udp_checksum_ok(f, udp, (size_t)len)) {
                            printf("IPv4 %d B (%s): a checksum of zero counted as bad\n", size, kind);
                            errors++;
                        }
                        f[udp + 6] = c0;
                        f[udp + 7] = c1;
                        f[len - 1] ^= 1;
                    }
                }
                close_counting(&d);
            }
    printf("%ld frames checked, %ld errors\n", frames, errors);
    return errors ? 1 : 0;
}

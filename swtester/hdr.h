/*
 * A one-way delay histogram in HdrHistogram's bucket layout (Gil Tene's HdrHistogram; the layout of the
 * `hdrhistogram` PyPI library and of TRex's --hdrh): every received test frame's delay is counted, none is
 * sampled, in a fixed array, so that recording costs a count-leading-zeros and an add on the receive path.
 *
 * swtester prints the non-empty buckets (the lowest value of each and its count) with the layout's parameters,
 * and trexlab/generators/software.py records them into an HdrHistogram of the same parameters, which then
 * encodes the standard compressed base64 payload. Why not encode that payload here: it would take zlib and a
 * second implementation of the V2 format (cookies, ZigZag LEB128 counts), each a way to disagree with the library
 * that decodes it; a bucket's lowest value lands in that same bucket of an equal layout, so the library's
 * histogram holds exactly the counts recorded here (tests/swtester/test_swtester_histogram.py checks the
 * percentiles against the library's own recording of the same delays).
 *
 * Layout (hdr_init): the trial contract's, trexlab.trial.Latency.empty_histogram: nanoseconds from 1 ns, 3
 * significant digits (a bucket is at most 1/1024 of its value wide: 1 ns up to 2 us, 1 us at 1 ms, 8 ms at
 * 10 s), up to an hour.
 */
#ifndef SWTESTER_HDR_H
#define SWTESTER_HDR_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#define HDR_LOWEST 1ull                 /* ns */
#define HDR_HIGHEST 3600000000000ull    /* ns: an hour, more than any frame timeout or receive tail allows */
#define HDR_SIGNIFICANT_DIGITS 3

struct hdr {
    int unit_magnitude, sub_bucket_half_count_magnitude;
    uint64_t sub_bucket_mask, sub_bucket_half_count, counts_len, total;
    uint64_t *counts;
};

/* The layout HdrHistogram derives from (lowest, highest, significant digits), step by step as the library does. */
static int hdr_init(struct hdr *h) {
    h->unit_magnitude = 63 - __builtin_clzll(HDR_LOWEST);
    uint64_t largest_single_unit = 2;
    for (int i = 0; i < HDR_SIGNIFICANT_DIGITS; i++) largest_single_unit *= 10;
    int sub_bucket_count_magnitude = 0;
    while ((1ull << sub_bucket_count_magnitude) < largest_single_unit) sub_bucket_count_magnitude++;
    h->sub_bucket_half_count_magnitude = sub_bucket_count_magnitude > 1 ? sub_bucket_count_magnitude - 1 : 0;
    uint64_t sub_bucket_count = 1ull << (h->sub_bucket_half_count_magnitude + 1);
    h->sub_bucket_half_count = sub_bucket_count / 2;
    h->sub_bucket_mask = (sub_bucket_count - 1) << h->unit_magnitude;
    uint64_t smallest_untrackable = sub_bucket_count << h->unit_magnitude;
    uint64_t buckets = 1;
    while (smallest_untrackable <= HDR_HIGHEST) {
        if (smallest_untrackable > (uint64_t)INT64_MAX / 2) { buckets++; break; }
        smallest_untrackable <<= 1;
        buckets++;
    }
    h->counts_len = (buckets + 1) * h->sub_bucket_half_count;
    h->total = 0;
    h->counts = calloc(h->counts_len, sizeof *h->counts);
    return h->counts != NULL;
}

static uint64_t hdr_index(const struct hdr *h, uint64_t value) {
    int bucket = 64 - __builtin_clzll(value | h->sub_bucket_mask) - h->unit_magnitude -
                 (h->sub_bucket_half_count_magnitude + 1);
    uint64_t sub_bucket = value >> (bucket + h->unit_magnitude);
    return ((uint64_t)(bucket + 1) << h->sub_bucket_half_count_magnitude) + sub_bucket - h->sub_bucket_half_count;
}

/* The lowest value of bucket index i: a value that the library puts into the same bucket. */
static uint64_t hdr_value_at(const struct hdr *h, uint64_t i) {
    int bucket = (int)(i >> h->sub_bucket_half_count_magnitude) - 1;
    uint64_t sub_bucket = (i & (h->sub_bucket_half_count - 1)) + h->sub_bucket_half_count;
    if (bucket < 0) {
        sub_bucket -= h->sub_bucket_half_count;
        bucket = 0;
    }
    return sub_bucket << (bucket + h->unit_magnitude);
}

static void hdr_record(struct hdr *h, uint64_t value) {
    /* Beyond an hour cannot happen within swtester's limits (timeout, duration and tail); were it to, the frame
     * is still counted, at the top, so that the histogram's total stays the frames received. */
    if (value > HDR_HIGHEST) value = HDR_HIGHEST;
    h->counts[hdr_index(h, value)]++;
    h->total++;
}

/* JSON: the layout and the non-empty buckets as [lowest value, count] pairs. */
static void hdr_print(const struct hdr *h, FILE *out) {
    fprintf(out, "{\"lowest\": %llu, \"highest\": %llu, \"significant_digits\": %d, \"unit_ns\": 1, "
            "\"total\": %llu, \"buckets\": [", (unsigned long long)HDR_LOWEST, (unsigned long long)HDR_HIGHEST,
            HDR_SIGNIFICANT_DIGITS, (unsigned long long)h->total);
    int first = 1;
    for (uint64_t i = 0; i < h->counts_len; i++)
        if (h->counts[i]) {
            fprintf(out, "%s[%llu, %llu]", first ? "" : ", ", (unsigned long long)hdr_value_at(h, i),
                    (unsigned long long)h->counts[i]);
            first = 0;
        }
    fputs("]}", out);
}

#endif

/*
 * ring_check: the receive ring swtester sets up for a direction (rx_ring_geometry), for each line of stdin
 * "<frames a second> <frame size, FCS included> <directions 1 or 2>": the ring alone keeping whole frames of that
 * size. Prints "<blocks> <block bytes> <seconds> <seconds of SNAP_LEN> <limit> <blocks of SNAP_LEN> <block bytes of
 * SNAP_LEN>": the seconds of frames it holds at that rate, those a ring keeping SNAP_LEN bytes of each frame (what
 * every ring kept before whole frames were, and a ring with the counting filter keeps) holds, the most bytes a ring
 * may take (rx_ring_limit), and the SNAP_LEN ring's blocks. The seconds are rx_ring_seconds' count of what the
 * kernel does (a block is handed over at the block timeout or when full, whichever comes first; swtester's report's
 * ring_seconds), not the estimate rx_ring_geometry sizes the ring by.
 */
#define main swtester_main /* the same program, not a copy: swtester's own main is not called */
#include "swtester.c"
#undef main

int main(void) {
    double rate;
    int size, directions;
    while (scanf("%lf %d %d", &rate, &size, &directions) == 3) {
        static struct config c;
        static struct direction d;
        memset(&c, 0, sizeof c);
        memset(&d, 0, sizeof d);
        c.rate = rate;
        c.directions = directions == 2 ? 3 : 1;
        d.cfg = &c;
        rx_ring_geometry(&d, SNAP_LEN);
        double snap = rx_ring_seconds(&d, SNAP_LEN);
        uint32_t snap_blocks = d.rx_blocks, snap_block = d.rx_block_size;
        rx_ring_geometry(&d, size - FCS_LEN);
        printf("%u %u %.6f %.6f %llu %u %u\n", d.rx_blocks, d.rx_block_size, rx_ring_seconds(&d, size - FCS_LEN),
               snap, (unsigned long long)rx_ring_limit(&c), snap_blocks, snap_block);
    }
    return 0;
}

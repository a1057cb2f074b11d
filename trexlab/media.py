"""Media limits: the most frames per second a link can carry (RFC 5180 appendix A.1).

On Ethernet every frame also occupies the wire for its preamble and start
frame delimiter (8 bytes) and the minimum inter-frame gap (12 bytes), so a
frame of S bytes (FCS included) costs (S + 20) * 8 bit times.
"""

from __future__ import annotations

from trexlab.params import check_range
from trexlab.trial import MAX_FRAME_SIZE, MIN_FRAME_SIZE

PREAMBLE_SFD_BYTES = 8
INTER_FRAME_GAP_BYTES = 12
WIRE_OVERHEAD_BYTES = PREAMBLE_SFD_BYTES + INTER_FRAME_GAP_BYTES

#: Frame sizes RFC 2544 section 9.1 names for Ethernet; RFC 5180 and RFC 8219 add
#: the IPv6 minimum and the +20-byte translated sizes on top of these.
STANDARD_FRAME_SIZES = (64, 128, 256, 512, 1024, 1280, 1518)

#: Media speeds in bit/s by name.
MEDIA = {
    "1g": 1e9,
    "10g": 10e9,
    "25g": 25e9,
    "40g": 40e9,
    "100g": 100e9,
}


def max_frame_rate(link_bps: float, frame_size: int) -> int:
    """Maximum frames/s of one direction of a link, rounded down to whole frames.

    >>> max_frame_rate(1e9, 64), max_frame_rate(1e9, 1518), max_frame_rate(10e9, 64)
    (1488095, 81274, 14880952)
    """
    check_range("link_bps", link_bps, 0, low_open=True)
    check_range("frame_size", frame_size, MIN_FRAME_SIZE, MAX_FRAME_SIZE, integer=True)
    return int(link_bps // ((frame_size + WIRE_OVERHEAD_BYTES) * 8))


def media_speed(name: str) -> float:
    """Bit/s of a named medium ('1g', '10g', ...), or a number of bit/s given as text."""
    key = str(name).lower()
    if key in MEDIA:
        return MEDIA[key]
    try:
        value = float(key)
    except ValueError:
        from trexlab.params import InvalidParameter

        raise InvalidParameter("media", name, ", ".join(MEDIA) + " or bit/s") from None
    check_range("media", value, 0, low_open=True)
    return value

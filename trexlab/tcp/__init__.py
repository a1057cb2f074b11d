"""TCP measurements (RFC 6349, HTTP download): the engines (iperf3, TRex ASTF), iperf3's reports, RFC 6349's
metrics."""

# The management plane of the labs this machine realises (local namespaces, VM DUTs): each lab gets its
# own block of 2001:2:0:ff80::/57, derived from its name, and a byte for its MAC addresses. Several labs
# run side by side (a test session keeps dozens up): 23 bits of the name's SHA-1 choose the block, so two
# names rarely meet, and lab-up refuses a block already in use (nslab.py) rather than sharing it.

locals {
  lab_id = parseint(substr(sha1(var.lab_name), 0, 6), 16) % 8388608 # 2^23: 7 bits of ff80..ffff, 16 below
  prefix = format("2001:2:0:ff%02x:%x", 128 + floor(local.lab_id / 65536), local.lab_id % 65536)
}

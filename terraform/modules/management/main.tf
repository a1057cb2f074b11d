# The management plane of the labs this machine realises (local namespaces, VM DUTs): each lab gets its
# own block of 2001:2:0:ff80::/57, derived from its name, and a byte for its MAC addresses. Several labs
# run side by side (a test session keeps dozens up): 23 bits of the name's SHA-1 choose the block, so two
# names rarely meet, and lab-up refuses a block already in use (nslab.py) rather than sharing it.

terraform {
  required_version = ">= 1.6"
}

variable "lab_name" {
  description = "The lab's name."
  type        = string
}

locals {
  lab_id = parseint(substr(sha1(var.lab_name), 0, 6), 16) % 8388608 # 2^23: 7 bits of ff80..ffff, 16 below
}

output "prefix" {
  description = "The lab's management block without its last groups: node n's addresses are <prefix>::<2n> (root side) and <prefix>::<2n+1> (the node), one /127 each."
  value       = format("2001:2:0:ff%02x:%x", 128 + floor(local.lab_id / 65536), local.lab_id % 65536)
}

output "mac_byte" {
  description = "One byte per lab in its MAC addresses 02:74:6c:<byte>:<node>:<port> (kept apart only for reading captures: labs share no link)."
  value       = local.lab_id % 128
}

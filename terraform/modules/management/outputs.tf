output "prefix" {
  description = "The lab's management block without its last groups: node n's addresses are <prefix>::<2n> (root side) and <prefix>::<2n+1> (the node), one /127 each."
  value       = format("2001:2:0:ff%02x:%x", 128 + floor(local.lab_id / 65536), local.lab_id % 65536)
}

output "mac_byte" {
  description = "One byte per lab in its MAC addresses 02:74:6c:<byte>:<node>:<port> (kept apart only for reading captures: labs share no link)."
  value       = local.lab_id % 128
}

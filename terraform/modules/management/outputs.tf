output "prefix" {
  description = "The lab's management block without its last groups: node n's addresses are <prefix>::<2n> (root side) and <prefix>::<2n+1> (the node), one /127 each."
  value       = local.prefix
}

output "mac_byte" {
  description = "One byte per lab in its MAC addresses 02:74:6c:<byte>:<node>:<port> (kept apart only for reading captures: labs share no link)."
  value       = local.lab_id % 128
}

output "links" {
  description = "Node index n (1-9: the lab's nodes 1-3, its TCP endpoints 8 and 9) -> its management link: the root namespace's interface (mgmt_root_if) and address (mgmt_root), and the node's address (ansible_host)."
  value = { for i in range(1, 10) : i => {
    mgmt_root_if = "tl${var.lab_name}m${i}"
    mgmt_root    = "${local.prefix}::${2 * i}"
    ansible_host = "${local.prefix}::${2 * i + 1}"
  } }
}

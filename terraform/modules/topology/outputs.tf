output "problems" {
  description = "What cannot be cabled as declared, one sentence each; empty when the topology is sound."
  value       = local.problems
}

output "nodes" {
  description = "Role, DUT position, CPUs and fully addressed test ports per node (inventory module shape)."
  value       = local.nodes
}

output "cabling" {
  description = "The links from tester port 0 to tester port 1, each as [node, port index, node, port index]."
  value       = local.chain
}

output "endpoints" {
  description = "The TCP endpoints asked for (tcp_endpoints), by name (client, server): index (the node index of its management addresses and MAC), node (inventory module shape, as nodes), macvlan (its test port as a macvlan child of the tester port beside it)."
  value       = local.endpoints
}

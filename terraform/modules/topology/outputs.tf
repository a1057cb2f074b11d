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

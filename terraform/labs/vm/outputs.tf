output "inventory_yaml" {
  description = "The Ansible inventory of this lab."
  value       = module.inventory.inventory_yaml
  depends_on  = [module.realiser]
}

output "plan" {
  description = "Names, links, MACs, addresses and the guest image of the lab, as the realiser got them."
  value       = local.plan

  # Checked when Terraform plans, so before the realiser runs (and not by a destroy, which evaluates no output).
  precondition {
    condition     = length(module.topology.problems) == 0 && var.image_dir != ""
    error_message = "No guest image (run through scripts/lab.sh, which prepares it) or a broken topology: ${join("; ", module.topology.problems)}"
  }
}

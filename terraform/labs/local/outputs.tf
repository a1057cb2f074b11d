output "inventory_yaml" {
  description = "The Ansible inventory of this lab."
  value       = module.inventory.inventory_yaml
  depends_on  = [module.realiser]
}

output "plan" {
  description = "Names, links, MACs and addresses of the lab, as the realiser got them."
  value       = local.plan
}

output "inventory_yaml" {
  description = "The Ansible inventory of this lab."
  precondition {
    condition     = length(module.topology.problems) == 0
    error_message = "The machines do not make a ${var.topology} lab: ${join("; ", module.topology.problems)}."
  }
  value = one(module.inventory[*].inventory_yaml)
}

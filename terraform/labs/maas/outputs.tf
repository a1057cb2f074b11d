output "inventory_yaml" {
  description = "The Ansible inventory of this lab."
  precondition {
    condition     = length(local.problems) == 0
    error_message = "The machines do not make a ${var.topology} lab: ${join("; ", local.problems)}."
  }
  value = one(module.inventory[*].inventory_yaml)
}

output "allocated" {
  description = "MAAS machine per node: system id, hostname and addresses (what lab-down releases)."
  value = { for name, i in maas_instance.node : name => {
    system_id = i.id, hostname = i.hostname, fqdn = i.fqdn, ip_addresses = i.ip_addresses
  } }
}

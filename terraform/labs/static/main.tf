# The static lab: machines you already have, declared in a tfvars file (examples/*.tfvars). Nothing is
# provisioned; Terraform checks the declaration (cabling, test ports, CPU lists) at plan time and writes
# the same inventory as every other lab kind (terraform/modules/inventory). No provider at all.

module "topology" {
  source   = "../../modules/topology"
  topology = var.topology
  nodes = { for name, m in var.machines : name => {
    machine    = coalesce(m.machine, m.ansible_host)
    cpus       = m.cpus
    test_ports = m.test_ports
  } }
}

# Only a sound topology reaches the inventory contract; the problems stop the plan below.
module "inventory" {
  source = "../../modules/inventory"
  count  = length(module.topology.problems) == 0 ? 1 : 0
  lab    = { name = var.lab_name, kind = "static", topology = var.topology }
  # Bare metal: the lab's own known_hosts (scripts/lab.sh: in its state directory); a machine's first key is
  # recorded, a changed one refused.
  known_hosts = var.known_hosts_file == null ? null : { file = var.known_hosts_file, policy = "accept-new" }
  nodes = { for name, n in module.topology.nodes : name => merge(n, {
    ansible_host = var.machines[name].ansible_host
    ansible_user = var.machines[name].ansible_user
    ansible_port = var.machines[name].ansible_port
    ssh_key      = var.machines[name].ssh_key
    extra_vars   = var.machines[name].become ? { ansible_become = "true" } : {}
  }) }
}

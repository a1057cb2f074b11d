# The MAAS lab: tester and DUT machines allocated and deployed from a MAAS region (canonical/maas),
# released again on destroy, described by the same inventory as every other lab kind.
#
# The MAAS URL and API key come from the environment only: scripts/lab.sh passes MAAS_API_URL and
# MAAS_API_KEY as TF_VAR_maas_api_url / TF_VAR_maas_api_key. The key is an ephemeral, sensitive
# variable, so Terraform keeps it out of state, plan files, outputs and logs.
#
# Test ports are cabled by hand, so their MACs are part of the declaration: select each machine so that
# MAAS hands out exactly the cabled one (by hostname, or a tag/pool only that machine has). The deploy
# leaves the test ports unconfigured (no MAAS address, no DHCP) for the Ansible roles; an allocated
# machine that lacks a declared test-port MAC fails the apply naming it (lab-down then releases it).

provider "maas" {
  api_version = "2.0"
  api_url     = var.maas_api_url
  # A malformed key never reaches the provider: its client would quote it in the error. The variable's
  # validation has already stopped the plan with a message that does not contain the key.
  api_key = can(regex("^[^:\\s]+:[^:\\s]+:[^:\\s]+$", coalesce(var.maas_api_key, "-"))) ? var.maas_api_key : "invalid:invalid:invalid"
}

module "topology" {
  source   = "../../modules/topology"
  topology = var.topology
  # Every node is a machine of its own.
  nodes = { for name, m in var.machines : name => {
    machine    = name
    cpus       = m.cpus
    test_ports = m.test_ports
  } }
}

locals {
  hostnames = [for m in var.machines : m.hostname if m.hostname != null]
  problems = concat(
    module.topology.problems,
    [for name, m in var.machines : "${name} is selected by nothing: give hostname, tags or pool (MAAS would hand out any machine, not the cabled one)"
    if m.hostname == null && length(m.tags) == 0 && m.pool == null],
    [for h in distinct(local.hostnames) : "hostname ${h} is declared for more than one node"
    if length([for x in local.hostnames : x if x == h]) > 1],
    # RFC 1123 host names, which is all a MAAS machine can be called: another one could only fail its own
    # allocation, after the other nodes' had succeeded and while they stay allocated (until lab-down).
    [for name, m in var.machines : "${name}: hostname '${m.hostname}' is not a host name (dot-separated labels of 1-63 characters A-Z a-z 0-9 -, no - first or last; at most 253 characters)"
    if m.hostname != null && !(length(coalesce(m.hostname, "-")) <= 253 && can(regex("^([A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?)(\\.[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*$", coalesce(m.hostname, "-"))))],
  )
}

resource "maas_instance" "node" {
  # Nothing is allocated for a declaration with problems (the output's precondition names them when Terraform
  # plans, so before any allocation).
  for_each = length(local.problems) == 0 ? var.machines : {}

  allocate_params {
    hostname      = each.value.hostname
    tags          = each.value.tags
    pool          = each.value.pool
    zone          = each.value.zone
    min_cpu_count = each.value.min_cpu_count
    min_memory    = each.value.min_memory
  }

  deploy_params {
    # null: the MAAS default image and kernel.
    distro_series = try(coalesce(each.value.distro_series, var.os.distro_series), null)
    hwe_kernel    = try(coalesce(each.value.hwe_kernel, var.os.hwe_kernel), null)
  }

  # Test ports, listed without a subnet so that MAAS disconnects them (no address, no DHCP): the roles
  # configure them. The provider looks an interface up by name or MAC; by MAC, an allocated machine that
  # is not the cabled one fails the apply naming the missing MAC.
  dynamic "network_interfaces" {
    for_each = each.value.test_ports
    content {
      name = lower(network_interfaces.value.mac)
    }
  }
}

module "inventory" {
  source = "../../modules/inventory"
  count  = length(local.problems) == 0 ? 1 : 0
  lab    = { name = var.lab_name, kind = "maas", topology = var.topology }
  # Bare metal: the lab's own known_hosts (scripts/lab.sh: in its state directory); a machine's first key is
  # recorded, a changed one refused.
  known_hosts = var.known_hosts_file == null ? null : { file = var.known_hosts_file, policy = "accept-new" }
  nodes = { for name, n in module.topology.nodes : name => merge(n, {
    ansible_host = (var.ansible_host_from == "fqdn" ? maas_instance.node[name].fqdn
    : try(sort(maas_instance.node[name].ip_addresses)[0], maas_instance.node[name].fqdn))
    ansible_user = var.ansible_user
    ssh_key      = var.ssh_key
    extra_vars = {
      ansible_become    = "true"
      trexlab_maas_host = maas_instance.node[name].hostname
      trexlab_maas_id   = maas_instance.node[name].id
    }
  }) }
}

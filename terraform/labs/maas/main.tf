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

terraform {
  required_version = ">= 1.10" # ephemeral variables
  backend "local" {}
  required_providers {
    maas = {
      source = "canonical/maas"
      # The Go module proxy serves 1.3.1 (make providers builds it into terraform/providers/mirror);
      # with the registry, the newest 1.x. 2.x changed the instance schema.
      version = "~> 1.3"
    }
  }
}

variable "maas_api_url" {
  description = "MAAS region URL, e.g. http://maas.example:5240/MAAS (from MAAS_API_URL)."
  type        = string
  default     = null
  validation {
    condition     = var.maas_api_url != null && can(regex("^https?://[^/]+", var.maas_api_url))
    error_message = "MAAS credentials missing: export MAAS_API_URL (the region URL, e.g. http://maas.example:5240/MAAS)."
  }
}

variable "maas_api_key" {
  description = "MAAS API key (consumer:token:secret, from MAAS_API_KEY). Never put it in a file."
  type        = string
  default     = null
  sensitive   = true
  ephemeral   = true
  validation {
    condition     = var.maas_api_key != null && can(regex("^[^:\\s]+:[^:\\s]+:[^:\\s]+$", var.maas_api_key))
    error_message = "MAAS credentials missing or malformed: export MAAS_API_KEY (consumer:token:secret, from 'maas apikey --username=...')."
  }
}

variable "lab_name" {
  description = "Short lab name: the inventory goes to inventory/generated/<lab_name>/hosts.yml."
  type        = string
  default     = "maas"
  validation {
    condition     = can(regex("^[a-z0-9]{1,6}$", var.lab_name))
    error_message = "lab_name must be 1-6 characters of a-z and 0-9."
  }
}

variable "topology" {
  description = "single (tester-dut1-tester), dual (tester-dut1-dut2-tester) or loopback (tester ports joined)."
  type        = string
  default     = "single"
  validation {
    condition     = contains(["single", "dual", "loopback"], var.topology)
    error_message = "topology must be one of single, dual, loopback."
  }
}

variable "os" {
  description = "Image for every machine unless it names its own: distro_series (e.g. jammy), hwe_kernel (e.g. hwe-22.04)."
  type = object({
    distro_series = optional(string)
    hwe_kernel    = optional(string)
  })
  default = {}
}

variable "ansible_user" {
  description = "User MAAS deploys with your SSH keys (ubuntu on Ubuntu images); Ansible becomes root with sudo."
  type        = string
  default     = "ubuntu"
}

variable "ssh_key" {
  description = "Private key (on this machine) matching a public key in your MAAS user's profile; null: SSH agent."
  type        = string
  default     = null
}

variable "ansible_host_from" {
  description = "How Ansible addresses a deployed machine: ip (its first MAAS address) or fqdn (MAAS DNS)."
  type        = string
  default     = "ip"
  validation {
    condition     = contains(["ip", "fqdn"], var.ansible_host_from)
    error_message = "ansible_host_from must be ip or fqdn."
  }
}

variable "machines" {
  description = <<-EOT
    The lab's machines by their role in the topology (tester, dut1, dut2), each with:
    hostname, tags, pool, zone   which MAAS machine to allocate (hostname, tags or pool required);
    min_cpu_count, min_memory    further allocation constraints (MiB);
    distro_series, hwe_kernel    image, overriding var.os;
    cpus        CPUs for pinning: the tester's senders/receivers, the DUT's forwarding (RPS/IRQs);
    test_ports  [port 0, port 1], each {name, mac, pci}: interface name, MAC, PCI address (DPDK/TRex).
  EOT
  type = map(object({
    hostname      = optional(string)
    tags          = optional(set(string), [])
    pool          = optional(string)
    zone          = optional(string)
    min_cpu_count = optional(number)
    min_memory    = optional(number)
    distro_series = optional(string)
    hwe_kernel    = optional(string)
    cpus          = optional(list(number), [])
    test_ports = optional(list(object({
      name = string
      mac  = string
      pci  = optional(string)
    })), [])
  }))
}

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
  )
}

resource "maas_instance" "node" {
  # Nothing is allocated for a declaration with problems (the output's precondition names them).
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

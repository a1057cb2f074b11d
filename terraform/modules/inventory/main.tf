# The inventory contract, written once: every lab kind (local, vm, static, maas)
# describes its nodes in this shape and gets the same Ansible inventory back
# (docs/architecture.md, "Inventory shape").

terraform {
  required_version = ">= 1.6"
}

variable "lab" {
  description = "Lab identity: name, kind (local|vm|static|maas) and topology (single|dual|loopback)."
  type = object({
    name     = string
    kind     = string
    topology = string
  })
  validation {
    condition     = contains(["local", "vm", "static", "maas"], var.lab.kind)
    error_message = "lab.kind must be one of local, vm, static, maas."
  }
  validation {
    condition     = contains(["single", "dual", "loopback"], var.lab.topology)
    error_message = "lab.topology must be one of single, dual, loopback."
  }
}

variable "nodes" {
  description = "Nodes by inventory name (tester, dut1, dut2; optional TCP endpoints client, server)."
  type = map(object({
    role         = string # tester | dut | client | server
    ansible_host = string
    ansible_user = optional(string, "root")
    ansible_port = optional(number, 22)
    ssh_key      = optional(string)
    netns        = optional(string) # local lab only
    cpus         = optional(list(number), [])
    dut_position = optional(number) # DUTs: 1 = next to tester port 0
    extra_vars   = optional(map(string), {})
    test_ports = list(object({
      index    = number
      name     = string
      mac      = string
      ipv4     = optional(string)
      ipv6     = optional(string)
      peer_mac = optional(string)
      pci      = optional(string)
    }))
  }))
  validation {
    condition     = length([for n in var.nodes : n if n.role == "tester"]) == 1
    error_message = "Exactly one node must have role tester."
  }
  validation {
    condition     = alltrue([for n in var.nodes : contains(["tester", "dut", "client", "server"], n.role)])
    error_message = "Every node's role must be tester, dut, client or server."
  }
  validation {
    condition     = alltrue([for n in var.nodes : length(n.test_ports) == 2 if contains(["tester", "dut"], n.role)])
    error_message = "Every tester and DUT node needs exactly two test ports (index 0 and 1)."
  }
  # TCP endpoints (RFC 6349, HTTP): one port each, on the link of tester port 0 (client) or 1 (server);
  # peer_mac is the DUT port it faces, which pins the endpoint's address with a permanent neighbour entry.
  validation {
    condition = alltrue([for n in var.nodes : length(n.test_ports) == 1 && alltrue([for p in n.test_ports : p.peer_mac != null])
    if contains(["client", "server"], n.role)])
    error_message = "A client or server node needs exactly one test port, with the peer_mac of the DUT port it faces."
  }
  validation {
    condition     = alltrue([for r in ["client", "server"] : length([for n in var.nodes : n if n.role == r]) <= 1])
    error_message = "At most one client and one server node."
  }
}

locals {
  expected_duts = { single = 1, dual = 2, loopback = 0 }[var.lab.topology]

  host_vars = {
    for name, n in var.nodes : name => merge(
      {
        ansible_host                 = n.ansible_host
        ansible_user                 = n.ansible_user
        ansible_port                 = n.ansible_port
        ansible_ssh_private_key_file = n.ssh_key
        trexlab_cpus                 = n.cpus
        test_ports = [for p in n.test_ports : {
          index    = p.index
          name     = p.name
          mac      = p.mac
          ipv4     = p.ipv4
          ipv6     = p.ipv6
          peer_mac = p.peer_mac
          pci      = p.pci
        }]
      },
      n.role == "dut" ? { trexlab_dut_position = n.dut_position } : {},
      # Only the local lab has namespaces; elsewhere the key is absent (a null would still be "defined").
      n.netns != null ? { trexlab_netns = n.netns } : {},
      n.extra_vars,
    )
  }

  inventory = {
    all = {
      vars = {
        trexlab_lab = var.lab
      }
      # client and server groups only where the lab has them: labs without TCP endpoints keep their shape.
      children = merge(
        {
          tester = { hosts = { for name, n in var.nodes : name => local.host_vars[name] if n.role == "tester" } }
          dut    = { hosts = { for name, n in var.nodes : name => local.host_vars[name] if n.role == "dut" } }
        },
        {
          for r in ["client", "server"] : r => {
            hosts = { for name, n in var.nodes : name => local.host_vars[name] if n.role == r }
          } if length([for n in var.nodes : n if n.role == r]) > 0
        },
      )
    }
  }
}

output "inventory" {
  description = "The inventory as a value."
  value       = local.inventory
}

output "inventory_yaml" {
  description = "The inventory as YAML, written to inventory/generated/<lab>/hosts.yml by scripts/lab.sh."
  precondition {
    condition     = length([for n in var.nodes : n if n.role == "dut"]) == local.expected_duts
    error_message = "Topology ${var.lab.topology} needs ${local.expected_duts} DUT node(s)."
  }
  value = "# Generated by terraform/modules/inventory for lab ${var.lab.name}: do not edit.\n${yamlencode(local.inventory)}"
}

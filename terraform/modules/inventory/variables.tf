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
  validation {
    condition     = length(var.lab.name) > 0
    error_message = "lab.name must not be empty: it names the inventory's directory and the lab in every result."
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
  validation {
    condition     = alltrue([for n in var.nodes : n.ansible_port >= 1 && n.ansible_port <= 65535 && floor(n.ansible_port) == n.ansible_port])
    error_message = "Every node's ansible_port must be a TCP port, 1-65535."
  }
  validation {
    condition     = alltrue([for n in var.nodes : n.dut_position != null if n.role == "dut"])
    error_message = "Every DUT node needs its dut_position (1 = next to tester port 0)."
  }
}

variable "known_hosts" {
  description = <<-EOT
    How Ansible and trexlab verify the nodes' SSH host keys: file, the lab's own known_hosts; policy, yes (the lab
    wrote the keys it generated there: any other key is refused) or accept-new (bare metal: a node's first key is
    recorded, a changed one refused). null: no verification (an inventory of an older lab).
  EOT
  type = object({
    file   = string
    policy = string
  })
  default = null
  validation {
    condition     = var.known_hosts == null || contains(["yes", "accept-new"], try(var.known_hosts.policy, ""))
    error_message = "known_hosts.policy must be yes or accept-new."
  }
  # The file goes into ansible_ssh_common_args, which Ansible splits on blanks and quotes: a blank would make the
  # rest another ssh argument (-o ProxyCommand=... a program run here), a relative path names another file per
  # working directory.
  validation {
    condition     = var.known_hosts == null || can(regex("^/[^\\s\"'\\\\]*$", try(var.known_hosts.file, "")))
    error_message = "known_hosts.file must be an absolute path without blanks, quotes or backslashes: ${jsonencode(try(var.known_hosts.file, null))}."
  }
}

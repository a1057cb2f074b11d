variable "lab_name" {
  description = "Short lab name: the inventory goes to inventory/generated/<lab_name>/hosts.yml."
  type        = string
  default     = "static"
  validation {
    # make lab-up's rule, trexlab/rolevalues.py LAB_NAME (tests/test_lab_name_rule.py holds this copy to it).
    condition     = can(regex("^[a-z0-9]{1,6}$", var.lab_name))
    error_message = "lab_name must be 1-6 characters a-z 0-9."
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

variable "machines" {
  description = <<-EOT
    The lab's machines by their role in the topology (tester, dut1, dut2; optional client, server), each with:
    ansible_host/ansible_user/ansible_port/ssh_key  how Ansible reaches it over SSH (become: sudo to root);
    machine     the physical machine it runs on (default: ansible_host); nodes on one machine must
                have disjoint CPU lists;
    cpus        CPUs for pinning: the tester's senders/receivers, the DUT's forwarding (RPS/IRQs);
    test_ports  [port 0, port 1], each {name, mac, pci}: interface name, MAC, PCI address (DPDK/TRex).
                client, server: TCP endpoints (RFC 6349, HTTP downloads), one test port each, on the
                link of tester port 0 (client) or 1 (server)
  EOT
  type = map(object({
    ansible_host = string
    ansible_user = optional(string, "root")
    ansible_port = optional(number, 22)
    ssh_key      = optional(string)
    become       = optional(bool, false)
    machine      = optional(string)
    cpus         = optional(list(number), [])
    test_ports = optional(list(object({
      name = string
      mac  = string
      pci  = optional(string)
    })), [])
  }))
  validation {
    condition     = alltrue([for m in var.machines : trimspace(m.ansible_host) != ""])
    error_message = "Every machine needs an ansible_host (the SSH address Ansible uses)."
  }
  # The rules of trexlab/rolevalues.py (check_lab): a host, user or port that ssh would read as an option
  # (-oProxyCommand=...) runs a program on this machine, and Ansible hands all three to ssh before any check.
  validation {
    condition     = alltrue([for m in var.machines : can(regex("^[A-Za-z0-9][A-Za-z0-9.:-]{0,252}$", m.ansible_host))])
    error_message = "Every ansible_host must be a host name or address (A-Z a-z 0-9 . : -, starting with a letter or digit): ${join(", ", [for m in var.machines : jsonencode(m.ansible_host) if !can(regex("^[A-Za-z0-9][A-Za-z0-9.:-]{0,252}$", m.ansible_host))])}."
  }
  validation {
    condition     = alltrue([for m in var.machines : can(regex("^[a-z_][a-z0-9_-]{0,31}$", m.ansible_user))])
    error_message = "Every ansible_user must be a login name: a-z 0-9 _ - (1-32 characters, starting with a-z or _)."
  }
  validation {
    condition     = alltrue([for m in var.machines : m.ansible_port >= 1 && m.ansible_port <= 65535 && floor(m.ansible_port) == m.ansible_port])
    error_message = "Every ansible_port must be a TCP port 1..65535."
  }
}

variable "known_hosts_file" {
  description = "The lab's known_hosts (make lab-up: .cache/labs/<lab>/known_hosts); null: host keys are not checked."
  type        = string
  default     = null
}

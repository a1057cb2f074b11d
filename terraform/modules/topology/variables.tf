variable "topology" {
  description = "single (tester-dut1-tester), dual (tester-dut1-dut2-tester) or loopback (tester ports joined)."
  type        = string
  validation {
    condition     = contains(["single", "dual", "loopback"], var.topology)
    error_message = "topology must be one of single, dual, loopback."
  }
}

variable "nodes" {
  description = <<-EOT
    Nodes by their role in the topology: tester, dut1 (next to tester port 0), dut2 (dual only); optionally
    client and server (bare metal: hosts on the links of tester ports 0 and 1, one test port each).
    machine: nodes with the same machine share its CPUs (namespaces or VMs on one server), so their
    CPU lists must not overlap. test_ports: index 0 then 1; tester port 0 is cabled to dut1's port 0,
    the last DUT's port 1 to tester port 1, and in dual topology dut1's port 1 to dut2's port 0.
  EOT
  type = map(object({
    machine = string
    cpus    = list(number)
    test_ports = list(object({
      name = string
      mac  = string
      pci  = optional(string)
    }))
  }))
}

variable "tcp_endpoints" {
  description = <<-EOT
    Client and server nodes (kernel TCP stacks for RFC 6349 and HTTP tests, docs/architecture.md) that the lab
    makes on the tester's machine beside tester ports 0 and 1 (the local and VM labs): mac_byte is the lab's
    byte of its MAC addresses 02:74:6c:<byte>:<node>:<port> (the management module's). null: none; none in
    the loopback topology either.
  EOT
  type = object({
    mac_byte = number
  })
  default = null
  # format's %02x writes 256 as "100": a MAC of seven digits in that group, which planned and failed the apply.
  validation {
    condition     = var.tcp_endpoints == null || try(var.tcp_endpoints.mac_byte >= 0 && var.tcp_endpoints.mac_byte <= 255 && floor(var.tcp_endpoints.mac_byte) == var.tcp_endpoints.mac_byte, false)
    error_message = "tcp_endpoints.mac_byte must be a whole number 0..255 (one byte of a MAC address): ${jsonencode(try(var.tcp_endpoints.mac_byte, null))}."
  }
}

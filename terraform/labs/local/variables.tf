variable "lab_name" {
  description = "Short lab name, part of every namespace and interface name, so that labs never collide."
  type        = string
  default     = "local"
  validation {
    # make lab-up's rule, trexlab/rolevalues.py LAB_NAME (tests/test_lab_name_rule.py holds this copy to it).
    condition     = can(regex("^[a-z0-9]{1,6}$", var.lab_name))
    error_message = "lab_name must be 1-6 characters a-z 0-9 (interface names are at most 15 characters)."
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

variable "tcp_endpoints" {
  description = "Client and server nodes (kernel TCP stacks for RFC 6349 and HTTP tests) beside tester ports 0 and 1; none in the loopback topology."
  type        = bool
  default     = true
}

variable "state_dir" {
  description = "Absolute directory for the lab's runtime files (SSH keys, sshd configs, pid files)."
  type        = string
  # Its known_hosts and key reach ssh through ansible_ssh_common_args, which Ansible splits on blanks and quotes;
  # a relative directory would be the module's, wherever Terraform runs the realiser.
  validation {
    condition     = can(regex("^/[^\\s\"'\\\\]*$", var.state_dir))
    error_message = "state_dir must be an absolute path without blanks, quotes or backslashes: ${jsonencode(var.state_dir)}."
  }
}

variable "cpu_count" {
  description = "CPUs of this machine; the tester gets CPU 0, the DUTs the others (RPS), so a veth DUT can drop."
  type        = number
  default     = 2
  validation {
    condition     = var.cpu_count >= 2 && floor(var.cpu_count) == var.cpu_count
    error_message = "cpu_count must be a whole number, at least 2: the DUT must forward on another CPU than the tester sends on."
  }
}

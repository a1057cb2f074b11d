variable "lab_name" {
  description = "Short lab name, part of every namespace and interface name, so that labs never collide."
  type        = string
  default     = "vm"
  validation {
    # make lab-up's rule, trexlab/rolevalues.py LAB_NAME (tests/test_lab_name_rule.py holds this copy to it).
    condition     = can(regex("^[a-z0-9]{1,6}$", var.lab_name))
    error_message = "lab_name must be 1-6 characters a-z 0-9 (interface names are at most 15 characters)."
  }
}

variable "topology" {
  description = "single (tester-dut1-tester) or dual (tester-dut1-dut2-tester); loopback needs no VM (LAB=local)."
  type        = string
  default     = "single"
  validation {
    condition     = contains(["single", "dual"], var.topology)
    error_message = "topology must be single or dual (a loopback lab has no DUT: use LAB=local)."
  }
}

variable "tcp_endpoints" {
  description = "Client and server nodes (host namespaces with kernel TCP stacks for RFC 6349 and HTTP tests) beside tester ports 0 and 1, as on the local lab."
  type        = bool
  default     = true
}

variable "state_dir" {
  description = "Absolute directory for the lab's runtime files (SSH keys, sshd configs, QEMU pid files, consoles)."
  type        = string
  # Its known_hosts and key reach ssh through ansible_ssh_common_args, which Ansible splits on blanks and quotes;
  # a relative directory would be the module's, wherever Terraform runs the realiser.
  validation {
    condition     = can(regex("^/[^\\s\"'\\\\]*$", var.state_dir))
    error_message = "state_dir must be an absolute path without blanks, quotes or backslashes: ${jsonencode(var.state_dir)}."
  }
}

variable "cpu_count" {
  description = "CPUs of this machine; the tester gets CPU 0, the VMs run on the others."
  type        = number
  default     = 2
  validation {
    condition     = var.cpu_count >= 2 && floor(var.cpu_count) == var.cpu_count
    error_message = "cpu_count must be a whole number, at least 2: the VMs must run on another CPU than the tester sends on."
  }
}

variable "image_dir" {
  description = "Guest image directory (vmlinux, initrd.cpio, manifest.json) from scripts/vmlab.py prepare."
  type        = string
  default     = ""
}

variable "accel" {
  description = "QEMU accelerator: kvm, or tcg (emulation: functional tests only, not device performance)."
  type        = string
  default     = "tcg"
  validation {
    condition     = contains(["kvm", "tcg"], var.accel)
    error_message = "accel must be kvm or tcg."
  }
}

variable "memory_mib" {
  description = "RAM per VM in MiB: the root file system lives in it (256 MiB is too little)."
  type        = number
  default     = 512
  validation {
    # A fraction reached QEMU's -m as written (512.5), a size in bytes QEMU rounds to its own page size.
    condition     = var.memory_mib >= 384 && floor(var.memory_mib) == var.memory_mib
    error_message = "memory_mib must be a whole number of MiB, at least 384: the guest's root file system is in RAM."
  }
}

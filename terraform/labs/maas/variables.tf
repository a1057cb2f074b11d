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
  # The rule of trexlab/rolevalues.py (check_lab): a user that ssh would read as an option runs a program here.
  validation {
    condition     = can(regex("^[a-z_][a-z0-9_-]{0,31}$", var.ansible_user))
    error_message = "ansible_user must be a login name: a-z 0-9 _ - (1-32 characters, starting with a-z or _)."
  }
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
    The lab's machines by their role in the topology (tester, dut1, dut2; optional client, server), each with:
    hostname, tags, pool, zone   which MAAS machine to allocate (hostname, tags or pool required);
    min_cpu_count, min_memory    further allocation constraints (MiB);
    distro_series, hwe_kernel    image, overriding var.os;
    cpus        CPUs for pinning: the tester's senders/receivers, the DUT's forwarding (RPS/IRQs);
    test_ports  [port 0, port 1], each {name, mac, pci}: interface name, MAC, PCI address (DPDK/TRex).
                client, server: TCP endpoints (RFC 6349, HTTP downloads), one test port each, on the
                link of tester port 0 (client) or 1 (server)
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

variable "known_hosts_file" {
  description = "The lab's known_hosts (make lab-up: .cache/labs/<lab>/known_hosts); null: host keys are not checked."
  type        = string
  default     = null
}

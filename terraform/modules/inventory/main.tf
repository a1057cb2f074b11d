# The inventory contract, written once: every lab kind (local, vm, static, maas)
# describes its nodes in this shape and gets the same Ansible inventory back
# (docs/architecture.md, "Inventory shape").

locals {
  expected_duts = { single = 1, dual = 2, loopback = 0 }[var.lab.topology]

  # What reaches ssh as an argument (Ansible's and trexlab's), by the rules of trexlab/rolevalues.py (check_lab):
  # a host or user that ssh would read as an option (-oProxyCommand=...) runs a program on this machine. Checked
  # for every lab kind, MAAS's answers included, by the outputs' preconditions: a variable validation would
  # also fail the destroy plan of a lab whose value came from its state (a MAAS machine), which then could not
  # be released.
  unsafe_ssh = concat(
    [for name, n in var.nodes : "${name}.ansible_host ${jsonencode(n.ansible_host)}" if !can(regex("^[A-Za-z0-9][A-Za-z0-9.:-]{0,252}$", n.ansible_host))],
    [for name, n in var.nodes : "${name}.ansible_user ${jsonencode(n.ansible_user)}" if !can(regex("^[a-z_][a-z0-9_-]{0,31}$", n.ansible_user))],
  )
  unsafe_ssh_message = "Every ansible_host must be a host name or address (A-Z a-z 0-9 . : -, starting with a letter or digit) and every ansible_user a login name (a-z 0-9 _ -, 1-32 characters, starting with a-z or _): ${join(", ", local.unsafe_ssh)}."

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
      # Host keys checked against the lab's known_hosts (ansible_host_key_checking per host: ansible.cfg's
      # default stays off for inventories of older labs); trexlab.testbed.inventory reads the same two values for its ssh.
      var.known_hosts == null ? { ansible_ssh_common_args = "-o UserKnownHostsFile=/dev/null" } : {
        ansible_host_key_checking                         = true
        ansible_ssh_common_args                           = "-o UserKnownHostsFile=${var.known_hosts.file} -o StrictHostKeyChecking=${var.known_hosts.policy}"
        trexlab_known_hosts                               = var.known_hosts.file
        trexlab_host_key_checking                         = var.known_hosts.policy
      },
      # Only the local lab has namespaces; elsewhere the key is absent (a null would still be "defined").
      n.netns != null ? { trexlab_netns = n.netns } : {},
      n.extra_vars,
    )
  }

  # Groups are the roles in the plural, hosts the nodes (tester, dut1, client): a group and a host of one name
  # (group tester holding host tester) made Ansible warn "Found both group and host with same name" on every run.
  # trexlab.testbed.inventory.ROLE_GROUPS reads the same names (tests/terraform/test_terraform_modules.py).
  groups = { tester = "testers", dut = "duts", client = "clients", server = "servers" }
  # A node named like a group would bring the warning back.
  nodes_named_like_groups = [for name, n in var.nodes : name if contains(values(local.groups), name)]

  inventory = {
    all = {
      vars = {
        trexlab_lab = var.lab
      }
      # clients and servers groups only where the lab has them: labs without TCP endpoints keep their shape.
      children = {
        for r, group in local.groups : group => {
          hosts = { for name, n in var.nodes : name => local.host_vars[name] if n.role == r }
        } if contains(["tester", "dut"], r) || length([for n in var.nodes : n if n.role == r]) > 0
      }
    }
  }
}

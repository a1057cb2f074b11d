# The static lab: declared machines -> the inventory every lab kind produces (docs/architecture.md);
# bad declarations stop the plan. No provider, no network.

variables {
  lab_name = "tfst"
  topology = "single"
  machines = {
    tester = {
      ansible_host = "192.0.2.10"
      ssh_key      = "/keys/id_ed25519"
      cpus         = [2, 3]
      test_ports = [
        { name = "enp65s0f0", mac = "3C:FD:FE:A1:00:10", pci = "0000:41:00.0" },
        { name = "enp65s0f1", mac = "3c:fd:fe:a1:00:11", pci = "0000:41:00.1" },
      ]
    }
    dut1 = {
      ansible_host = "192.0.2.20"
      ansible_user = "admin"
      ansible_port = 2222
      become       = true
      cpus         = [4, 5]
      test_ports = [
        { name = "ens1f0", mac = "b4:96:91:b2:00:20" },
        { name = "ens1f1", mac = "b4:96:91:b2:00:21" },
      ]
    }
  }
}

run "single_lab_inventory" {
  command = apply # nothing to create: outputs only

  assert {
    condition     = yamldecode(output.inventory_yaml).all.vars.trexlab_lab == { name = "tfst", kind = "static", topology = "single" }
    error_message = "the lab's identity"
  }
  assert {
    condition     = keys(yamldecode(output.inventory_yaml).all.children.testers.hosts) == ["tester"] && keys(yamldecode(output.inventory_yaml).all.children.duts.hosts) == ["dut1"]
    error_message = "groups tester and dut with the declared machines"
  }
  assert {
    condition = yamldecode(output.inventory_yaml).all.children.testers.hosts.tester.test_ports[0] == {
      index = 0, name = "enp65s0f0", mac = "3c:fd:fe:a1:00:10", pci = "0000:41:00.0",
      ipv4  = "198.18.0.2/24", ipv6 = "2001:2:0:8000::2/64", peer_mac = "b4:96:91:b2:00:20"
    }
    error_message = "tester port 0: declared name, MAC (lower case), PCI; planned addresses; the DUT's left MAC as peer"
  }
  assert {
    condition = yamldecode(output.inventory_yaml).all.children.duts.hosts.dut1.test_ports[1] == {
      index = 1, name = "ens1f1", mac = "b4:96:91:b2:00:21", pci = null,
      ipv4  = "198.19.0.1/24", ipv6 = "2001:2:0:9000::1/64", peer_mac = "3c:fd:fe:a1:00:11"
    }
    error_message = "dut1's right port faces tester port 1"
  }
  assert {
    condition     = yamldecode(output.inventory_yaml).all.children.duts.hosts.dut1.trexlab_cpus == [4, 5] && yamldecode(output.inventory_yaml).all.children.duts.hosts.dut1.trexlab_dut_position == 1
    error_message = "the DUT's CPUs and position"
  }
  assert {
    condition = (yamldecode(output.inventory_yaml).all.children.duts.hosts.dut1.ansible_host == "192.0.2.20"
      && yamldecode(output.inventory_yaml).all.children.duts.hosts.dut1.ansible_port == 2222
      && yamldecode(output.inventory_yaml).all.children.duts.hosts.dut1.ansible_user == "admin"
      && yamldecode(output.inventory_yaml).all.children.duts.hosts.dut1.ansible_become == "true"
    && yamldecode(output.inventory_yaml).all.children.testers.hosts.tester.ansible_ssh_private_key_file == "/keys/id_ed25519")
    error_message = "SSH access as declared; become only where asked"
  }
  assert {
    condition     = !can(yamldecode(output.inventory_yaml).all.children.testers.hosts.tester.ansible_become) && !can(yamldecode(output.inventory_yaml).all.children.testers.hosts.tester.trexlab_netns)
    error_message = "no become for root, no network namespace on bare metal"
  }
}

run "dual_lab_inventory" {
  command = apply
  variables {
    topology = "dual"
    machines = {
      tester = { ansible_host = "192.0.2.10", cpus = [0], test_ports = [{ name = "p0", mac = "02:00:00:00:00:01" }, { name = "p1", mac = "02:00:00:00:00:02" }] }
      dut1   = { ansible_host = "192.0.2.21", cpus = [1], test_ports = [{ name = "l", mac = "02:00:00:00:01:01" }, { name = "r", mac = "02:00:00:00:01:02" }] }
      dut2   = { ansible_host = "192.0.2.22", cpus = [1], test_ports = [{ name = "l", mac = "02:00:00:00:02:01" }, { name = "r", mac = "02:00:00:00:02:02" }] }
    }
  }
  assert {
    condition     = yamldecode(output.inventory_yaml).all.children.duts.hosts.dut2.trexlab_dut_position == 2 && yamldecode(output.inventory_yaml).all.children.duts.hosts.dut2.test_ports[0].ipv4 == "198.19.255.254/30"
    error_message = "dut2 sits between dut1 and tester port 1"
  }
  assert {
    condition     = yamldecode(output.inventory_yaml).all.children.testers.hosts.tester.test_ports[1].peer_mac == "02:00:00:00:02:02"
    error_message = "tester port 1 faces dut2's right port"
  }
}

run "rejects_an_unknown_topology" {
  command = plan
  variables {
    topology = "triple"
  }
  expect_failures = [var.topology]
}

run "rejects_two_duts_needed_one_declared" {
  command = plan
  variables {
    topology = "dual"
  }
  expect_failures = [output.inventory_yaml]
}

run "rejects_a_machine_without_its_test_ports" {
  command = plan
  variables {
    machines = {
      tester = { ansible_host = "192.0.2.10", cpus = [0], test_ports = [{ name = "p0", mac = "02:00:00:00:00:01" }, { name = "p1", mac = "02:00:00:00:00:02" }] }
      dut1   = { ansible_host = "192.0.2.21", cpus = [1] }
    }
  }
  expect_failures = [output.inventory_yaml]
}

run "rejects_overlapping_cpu_lists" {
  command = plan
  variables {
    machines = {
      tester = { ansible_host = "192.0.2.10", machine = "server", cpus = [0, 1], test_ports = [{ name = "p0", mac = "02:00:00:00:00:01" }, { name = "p1", mac = "02:00:00:00:00:02" }] }
      dut1   = { ansible_host = "192.0.2.11", machine = "server", cpus = [1], test_ports = [{ name = "l", mac = "02:00:00:00:01:01" }, { name = "r", mac = "02:00:00:00:01:02" }] }
    }
  }
  expect_failures = [output.inventory_yaml]
}

run "rejects_a_machine_without_an_address" {
  command = plan
  variables {
    machines = {
      tester = { ansible_host = " ", cpus = [0], test_ports = [{ name = "p0", mac = "02:00:00:00:00:01" }, { name = "p1", mac = "02:00:00:00:00:02" }] }
    }
    topology = "loopback"
  }
  expect_failures = [var.machines]
}

# One bad value per run: a run with two passes while either rule still holds.
run "rejects_an_ssh_user_that_ssh_would_read_as_an_option" {
  command = plan
  variables {
    machines = {
      tester = { ansible_host = "192.0.2.10", ansible_user = "-oProxyCommand=touch /tmp/x", cpus = [0], test_ports = [{ name = "p0", mac = "02:00:00:00:00:01" }, { name = "p1", mac = "02:00:00:00:00:02" }] }
      dut1   = { ansible_host = "192.0.2.21", cpus = [1], test_ports = [{ name = "l", mac = "02:00:00:00:01:01" }, { name = "r", mac = "02:00:00:00:01:02" }] }
    }
  }
  expect_failures = [var.machines]
}

run "rejects_an_ssh_port_out_of_range" {
  command = plan
  variables {
    machines = {
      tester = { ansible_host = "192.0.2.10", ansible_port = 0, cpus = [0], test_ports = [{ name = "p0", mac = "02:00:00:00:00:01" }, { name = "p1", mac = "02:00:00:00:00:02" }] }
      dut1   = { ansible_host = "192.0.2.21", cpus = [1], test_ports = [{ name = "l", mac = "02:00:00:00:01:01" }, { name = "r", mac = "02:00:00:00:01:02" }] }
    }
  }
  expect_failures = [var.machines]
}

run "rejects_a_host_ssh_would_read_as_an_option" {
  command = plan
  variables {
    machines = {
      tester = { ansible_host = "-oProxyCommand=touch /tmp/x", cpus = [0], test_ports = [{ name = "p0", mac = "02:00:00:00:00:01" }, { name = "p1", mac = "02:00:00:00:00:02" }] }
      dut1   = { ansible_host = "192.0.2.21", cpus = [1], test_ports = [{ name = "l", mac = "02:00:00:00:01:01" }, { name = "r", mac = "02:00:00:00:01:02" }] }
    }
  }
  expect_failures = [var.machines]
}

# TCP endpoints on bare metal (RFC 6349, HTTP downloads): hosts on the links of tester ports 0 and 1, in the
# inventory shape the local and VM labs give theirs.
run "client_and_server_hosts" {
  command = apply
  variables {
    machines = {
      tester = { ansible_host = "192.0.2.10", cpus = [0], test_ports = [{ name = "p0", mac = "02:00:00:00:00:01" }, { name = "p1", mac = "02:00:00:00:00:02" }] }
      dut1   = { ansible_host = "192.0.2.21", cpus = [1], test_ports = [{ name = "l", mac = "02:00:00:00:01:01" }, { name = "r", mac = "02:00:00:00:01:02" }] }
      client = { ansible_host = "192.0.2.31", test_ports = [{ name = "eno1", mac = "02:00:00:00:08:00" }] }
      server = { ansible_host = "192.0.2.32", become = true, test_ports = [{ name = "eno1", mac = "02:00:00:00:09:00" }] }
    }
  }
  assert {
    condition     = keys(yamldecode(output.inventory_yaml).all.children) == ["clients", "duts", "servers", "testers"] && keys(yamldecode(output.inventory_yaml).all.children.servers.hosts) == ["server"]
    error_message = "client and server groups, as the local and VM labs have them"
  }
  assert {
    condition = yamldecode(output.inventory_yaml).all.children.clients.hosts.client.test_ports == [{
      index = 0, name = "eno1", mac = "02:00:00:00:08:00", pci = null,
      ipv4  = "198.18.0.3/24", ipv6 = "2001:2:0:8000::3/64", peer_mac = "02:00:00:00:01:01"
    }] && yamldecode(output.inventory_yaml).all.children.servers.hosts.server.test_ports[0].peer_mac == "02:00:00:00:01:02"
    error_message = "the client on tester port 0's link faces dut1's left port; the server faces its right port"
  }
  assert {
    condition     = keys(yamldecode(output.inventory_yaml).all.children.clients.hosts.client) == keys(yamldecode(output.inventory_yaml).all.children.testers.hosts.tester) && yamldecode(output.inventory_yaml).all.children.servers.hosts.server.ansible_become == "true"
    error_message = "an endpoint's host variables are a tester's, and become where asked"
  }
}

# The cabling and address plan of bare-metal labs, and one problem sentence per kind of bad declaration
# (the labs turn any problem into a plan-time failure; their tests expect that failure).

variables {
  topology = "single"
  nodes = {
    tester = {
      machine    = "a", cpus = [0]
      test_ports = [{ name = "t0", mac = "02:00:00:00:00:01", pci = "0000:01:00.0" }, { name = "t1", mac = "02:00:00:00:00:02" }]
    }
    dut1 = {
      machine    = "b", cpus = [0]
      test_ports = [{ name = "l", mac = "02:00:00:00:01:01" }, { name = "r", mac = "02:00:00:00:01:02" }]
    }
  }
}

run "single_cabling_and_addresses" {
  command = plan
  assert {
    condition     = length(output.problems) == 0
    error_message = "a sound single topology has no problems"
  }
  assert {
    condition     = output.nodes.tester.test_ports[0].peer_mac == "02:00:00:00:01:01" && output.nodes.dut1.test_ports[0].peer_mac == "02:00:00:00:00:01" && output.nodes.dut1.test_ports[1].peer_mac == "02:00:00:00:00:02" && output.nodes.tester.test_ports[1].peer_mac == "02:00:00:00:01:02"
    error_message = "tester port 0 faces dut1's left port, dut1's right port faces tester port 1"
  }
  assert {
    condition     = output.nodes.tester.test_ports[0].ipv4 == "198.18.0.2/24" && output.nodes.dut1.test_ports[1].ipv6 == "2001:2:0:9000::1/64"
    error_message = "the address plan of docs/architecture.md"
  }
  assert {
    condition     = output.nodes.dut1.role == "dut" && output.nodes.dut1.dut_position == 1 && output.nodes.tester.dut_position == null
    error_message = "dut1 is the DUT next to tester port 0"
  }
  assert {
    condition     = output.nodes.tester.test_ports[0].pci == "0000:01:00.0" && output.nodes.tester.test_ports[1].pci == null
    error_message = "PCI addresses pass through"
  }
}

run "dual_middle_link" {
  command = plan
  variables {
    topology = "dual"
    nodes = {
      tester = { machine = "a", cpus = [0], test_ports = [{ name = "t0", mac = "02:00:00:00:00:01" }, { name = "t1", mac = "02:00:00:00:00:02" }] }
      dut1   = { machine = "b", cpus = [1], test_ports = [{ name = "l", mac = "02:00:00:00:01:01" }, { name = "r", mac = "02:00:00:00:01:02" }] }
      dut2   = { machine = "c", cpus = [1], test_ports = [{ name = "l", mac = "02:00:00:00:02:01" }, { name = "r", mac = "02:00:00:00:02:02" }] }
    }
  }
  assert {
    condition     = length(output.problems) == 0
    error_message = "a sound dual topology has no problems"
  }
  assert {
    condition     = output.nodes.dut1.test_ports[1].peer_mac == "02:00:00:00:02:01" && output.nodes.tester.test_ports[1].peer_mac == "02:00:00:00:02:02"
    error_message = "dut1's right port faces dut2's left port; dut2's right port faces tester port 1"
  }
  assert {
    condition     = output.nodes.dut1.test_ports[1].ipv4 == "198.19.255.253/30" && output.nodes.dut2.test_ports[0].ipv4 == "198.19.255.254/30" && output.nodes.dut2.dut_position == 2
    error_message = "the dual middle link and dut2's position"
  }
}

run "loopback_joins_the_tester_ports" {
  command = plan
  variables {
    topology = "loopback"
    nodes = {
      tester = { machine = "a", cpus = [0], test_ports = [{ name = "t0", mac = "02:00:00:00:00:01" }, { name = "t1", mac = "02:00:00:00:00:02" }] }
    }
  }
  assert {
    condition     = length(output.problems) == 0 && output.nodes.tester.test_ports[0].peer_mac == "02:00:00:00:00:02"
    error_message = "in loopback tester port 0 faces tester port 1"
  }
}

run "two_duts_needed_one_declared" {
  command = plan
  variables {
    topology = "dual"
  }
  assert {
    condition     = output.problems == ["topology dual needs dut1 and dut2; declared: dut1"]
    error_message = "names the missing DUT: ${jsonencode(output.problems)}"
  }
}

run "a_machine_without_its_test_ports" {
  command = plan
  variables {
    nodes = {
      tester = { machine = "a", cpus = [0], test_ports = [{ name = "t0", mac = "02:00:00:00:00:01" }, { name = "t1", mac = "02:00:00:00:00:02" }] }
      dut1   = { machine = "b", cpus = [1], test_ports = [{ name = "l", mac = "02:00:00:00:01:01" }] }
    }
  }
  assert {
    condition     = length(output.problems) == 1 && startswith(output.problems[0], "dut1 declares 1 test port(s); every node needs two")
    error_message = "names the machine short of test ports: ${jsonencode(output.problems)}"
  }
}

run "overlapping_cpu_lists_on_one_machine" {
  command = plan
  variables {
    nodes = {
      tester = { machine = "host", cpus = [0, 1], test_ports = [{ name = "t0", mac = "02:00:00:00:00:01" }, { name = "t1", mac = "02:00:00:00:00:02" }] }
      dut1   = { machine = "host", cpus = [1], test_ports = [{ name = "l", mac = "02:00:00:00:01:01" }, { name = "r", mac = "02:00:00:00:01:02" }] }
    }
  }
  assert {
    condition     = output.problems == ["CPU lists overlap on machine host: dut1 [1] and tester [0,1]; nodes on one machine need CPUs of their own"]
    error_message = "names the machine and both lists: ${jsonencode(output.problems)}"
  }
}

run "bad_and_duplicate_port_declarations" {
  command = plan
  variables {
    nodes = {
      tester = { machine = "a", cpus = [0, 0], test_ports = [{ name = "t0", mac = "02:00:00:00:00:01", pci = "41:00" }, { name = "t0", mac = "02:00:00:00:00:01" }] }
      dut1   = { machine = "b", cpus = [], test_ports = [{ name = "l", mac = "not-a-mac" }, { name = "r;reboot", mac = "02:00:00:00:01:02" }] }
      dut9   = { machine = "c", cpus = [2], test_ports = [] }
    }
  }
  assert {
    condition = alltrue([for expected in [
      "machines: 'dut9' is no node of a topology",
      "dut9 declares 0 test port(s)",
      "dut1 port 0: mac 'not-a-mac' is not a MAC address",
      "tester port 0: pci '41:00' is not a PCI address",
      "dut1 port 1: name 'r;reboot' is not an interface name",
      "test port mac 02:00:00:00:00:01 is declared twice: tester port 0, tester port 1",
      "tester: both test ports are named t0",
      "tester: CPU list [0,0] names a CPU twice",
      "dut1 declares no CPUs",
    ] : anytrue([for p in output.problems : startswith(p, expected)])])
    error_message = "every bad declaration is named: ${jsonencode(output.problems)}"
  }
}

run "tcp_endpoints_beside_the_tester_ports" {
  command = plan
  variables {
    tcp_endpoints = { mac_byte = 52 }
  }
  assert {
    condition     = output.endpoints.client.node.test_ports[0].peer_mac == "02:00:00:00:01:01" && output.endpoints.server.node.test_ports[0].peer_mac == "02:00:00:00:01:02"
    error_message = "the client faces the DUT port beyond tester port 0, the server the one beyond tester port 1"
  }
  assert {
    condition     = output.endpoints.client.node.test_ports[0].ipv4 == "198.18.0.3/24" && output.endpoints.server.node.test_ports[0].ipv6 == "2001:2:0:9000::3/64"
    error_message = "the endpoints' addresses of docs/architecture.md"
  }
  assert {
    condition     = output.endpoints.client.index == 8 && output.endpoints.server.node.test_ports[0].mac == "02:74:6c:34:09:00" && output.endpoints.server.node.role == "server"
    error_message = "node indexes 8 and 9 in the lab's MAC scheme (byte 52 = 0x34)"
  }
  assert {
    condition     = output.endpoints.client.macvlan.lower_port == "t0" && output.endpoints.server.macvlan.lower_port == "t1" && output.endpoints.server.macvlan.mac == output.endpoints.server.node.test_ports[0].mac
    error_message = "each endpoint's port is a macvlan child of the tester port beside it"
  }
}

run "tcp_endpoints_mac_byte_is_one_byte" {
  command = plan
  variables {
    tcp_endpoints = { mac_byte = 256 }
  }
  expect_failures = [var.tcp_endpoints]
}

run "tcp_endpoints_mac_byte_is_whole" {
  command = plan
  variables {
    tcp_endpoints = { mac_byte = 2.5 }
  }
  expect_failures = [var.tcp_endpoints]
}

run "no_tcp_endpoints_unless_asked_nor_in_loopback" {
  command = plan
  variables {
    topology      = "loopback"
    tcp_endpoints = { mac_byte = 52 }
    nodes = {
      tester = { machine = "a", cpus = [0], test_ports = [{ name = "t0", mac = "02:00:00:00:00:01" }, { name = "t1", mac = "02:00:00:00:00:02" }] }
    }
  }
  assert {
    condition     = length(output.endpoints) == 0
    error_message = "loopback has no DUT for an endpoint to reach"
  }
}

run "no_tcp_endpoints_by_default" {
  command = plan
  assert {
    condition     = length(output.endpoints) == 0
    error_message = "bare-metal labs declare no endpoints: none unless tcp_endpoints is given"
  }
}

run "declared_client_and_server_on_bare_metal" {
  command = plan
  variables {
    topology = "dual"
    nodes = {
      tester = { machine = "a", cpus = [0], test_ports = [{ name = "t0", mac = "02:00:00:00:00:01" }, { name = "t1", mac = "02:00:00:00:00:02" }] }
      dut1   = { machine = "b", cpus = [1], test_ports = [{ name = "l", mac = "02:00:00:00:01:01" }, { name = "r", mac = "02:00:00:00:01:02" }] }
      dut2   = { machine = "c", cpus = [1], test_ports = [{ name = "l", mac = "02:00:00:00:02:01" }, { name = "r", mac = "02:00:00:00:02:02" }] }
      client = { machine = "d", cpus = [], test_ports = [{ name = "eno1", mac = "02:00:00:00:08:00" }] }
      server = { machine = "e", cpus = [3], test_ports = [{ name = "eno2", mac = "02:00:00:00:09:00" }] }
    }
  }
  assert {
    condition     = length(output.problems) == 0
    error_message = "a client and a server with one port each are sound: ${jsonencode(output.problems)}"
  }
  assert {
    condition = (jsonencode(output.nodes.client) == jsonencode({ role = "client", dut_position = null, cpus = [], test_ports = [
      { index = 0, name = "eno1", mac = "02:00:00:00:08:00", ipv4 = "198.18.0.3/24", ipv6 = "2001:2:0:8000::3/64", peer_mac = "02:00:00:00:01:01", pci = null }] })
      && jsonencode(output.nodes.server.test_ports[0]) == jsonencode({ index = 0, name = "eno2", mac = "02:00:00:00:09:00", ipv4 = "198.19.0.3/24", ipv6 = "2001:2:0:9000::3/64", peer_mac = "02:00:00:00:02:02", pci = null })
    && output.nodes.server.role == "server")
    error_message = "declared endpoints in the made ones' shape: the client faces dut1's left port, the server the last DUT's right port"
  }
  assert {
    condition     = output.nodes.tester.test_ports[0].peer_mac == "02:00:00:00:01:01" && output.nodes.dut2.test_ports[1].peer_mac == "02:00:00:00:00:02" && length(output.endpoints) == 0
    error_message = "the cabling stays the topology's; nothing is made for declared endpoints"
  }
}

run "declared_endpoints_need_one_port_and_a_dut" {
  command = plan
  variables {
    topology = "loopback"
    nodes = {
      tester = { machine = "a", cpus = [0], test_ports = [{ name = "t0", mac = "02:00:00:00:00:01" }, { name = "t1", mac = "02:00:00:00:00:02" }] }
      client = { machine = "d", cpus = [], test_ports = [{ name = "e0", mac = "02:00:00:00:08:00" }, { name = "e1", mac = "02:00:00:00:08:01" }] }
    }
  }
  assert {
    condition = alltrue([for expected in [
      "client declares 2 test port(s); a client needs one, on the link of tester port 0",
      "topology loopback has no DUT, so no client either",
    ] : anytrue([for p in output.problems : startswith(p, expected)])])
    error_message = "a client with two ports, and one in loopback, are named: ${jsonencode(output.problems)}"
  }
}

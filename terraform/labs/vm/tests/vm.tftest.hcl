# Plans of the VM lab (nothing is applied: a real lab-up is tests/vm/test_vm_lab.py): bad input is refused,
# and the plan and inventory have the shape every lab kind has, with the VM-only pieces where they belong.

variables {
  lab_name  = "tfv"
  topology  = "dual"
  state_dir = "/tmp/trexlab-tftest-tfv"
  cpu_count = 2
  image_dir = "/nonexistent/image"
  accel     = "tcg"
}

run "rejects_loopback" {
  command = plan
  variables {
    topology = "loopback"
  }
  expect_failures = [var.topology]
}

run "rejects_a_fraction_of_a_cpu" {
  command = plan
  variables {
    cpu_count = 2.5
  }
  expect_failures = [var.cpu_count]
}

run "rejects_a_relative_state_dir" {
  command = plan
  variables {
    state_dir = "state"
  }
  expect_failures = [var.state_dir]
}

run "rejects_too_little_memory" {
  command = plan
  variables {
    memory_mib = 383
  }
  expect_failures = [var.memory_mib]
}

run "rejects_a_fraction_of_a_mib" {
  command = plan
  variables {
    memory_mib = 512.5
  }
  expect_failures = [var.memory_mib]
}

run "rejects_an_unknown_accelerator" {
  command = plan
  variables {
    accel = "hvf"
  }
  expect_failures = [var.accel]
}

run "needs_a_prepared_image" {
  command = plan
  variables {
    image_dir = ""
  }
  expect_failures = [output.plan]
}

run "dual_plan_has_the_shape_of_every_lab" {
  command = plan

  assert {
    condition     = length(output.plan.links) == 3 && output.plan.links[1].tap == null
    error_message = "three links; the DUT-DUT link is a socket pair between the QEMUs, not a tap"
  }
  assert {
    condition     = output.plan.links[0].tap == "tltfvt0" && output.plan.links[2].tap == "tltfvt2"
    error_message = "the links to the tester are taps named after the lab"
  }
  assert {
    condition     = output.plan.nodes.dut2.test_ports[1].ipv4 == "198.19.0.1/24" && output.plan.nodes.dut1.test_ports[1].ipv6 == "2001:2:0:ff00::1/64"
    error_message = "the address plan of docs/architecture.md"
  }
  assert {
    condition     = module.inventory.inventory.all.children.duts.hosts.dut2.trexlab_vm_accel == "tcg" && !can(module.inventory.inventory.all.children.duts.hosts.dut2.trexlab_netns)
    error_message = "a VM DUT says how it is emulated and has no namespace"
  }
  assert {
    condition     = module.inventory.inventory.all.children.testers.hosts.tester.trexlab_netns == "tl-tfv-tester"
    error_message = "the tester is a namespace, as on the local lab"
  }
  assert {
    condition     = jsonencode(output.plan.nodes.dut1.host_cpus) == "[1]" && jsonencode(output.plan.nodes.tester.cpus) == "[0]"
    error_message = "QEMU runs on the CPUs the tester does not use"
  }
}

run "tcp_endpoints_are_namespaces_on_the_tester_links" {
  command = plan

  assert {
    condition     = output.plan.nodes.client.netns == "tl-tfv-client" && output.plan.nodes.server.netns == "tl-tfv-server"
    error_message = "the client and server are namespaces of the host, as on the local lab"
  }
  assert {
    condition     = output.plan.nodes.client.test_ports[0].peer_mac == output.plan.nodes.dut1.test_ports[0].mac && output.plan.nodes.server.test_ports[0].peer_mac == output.plan.nodes.dut2.test_ports[1].mac
    error_message = "the client faces the first DUT's left port, the server the last DUT's right port"
  }
  assert {
    condition     = length(output.plan.macvlans) == 2 && output.plan.macvlans[0].lower_port == "port0" && output.plan.macvlans[1].lower_port == "port1"
    error_message = "their ports are macvlans of tester ports 0 and 1 (the taps QEMU holds)"
  }
  assert {
    condition     = module.inventory.inventory.all.children.servers.hosts.server.trexlab_netns == "tl-tfv-server" && !can(module.inventory.inventory.all.children.clients.hosts.client.trexlab_vm_accel)
    error_message = "the inventory has the endpoints in the shape of the local lab's"
  }
}

run "no_tcp_endpoints_when_not_wanted" {
  command = plan
  variables {
    tcp_endpoints = false
  }

  assert {
    condition     = length(output.plan.macvlans) == 0 && !contains(keys(output.plan.nodes), "client")
    error_message = "tcp_endpoints = false makes no client or server"
  }
}

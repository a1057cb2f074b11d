# A real apply and destroy of the local lab (needs root): namespaces appear, the inventory names them,
# and the destroy provisioner removes them again (checked by the pytest wrapper afterwards).

variables {
  lab_name  = "tft"
  topology  = "dual"
  state_dir = "/tmp/trexlab-tftest-tft"
  cpu_count = 2
}

run "rejects_a_bad_topology" {
  command = plan
  variables {
    topology = "triple"
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

run "rejects_a_long_lab_name" {
  command = plan
  variables {
    lab_name = "toolongname"
  }
  expect_failures = [var.lab_name]
}

run "dual_lab_applies" {
  command = apply

  assert {
    condition     = length(output.plan.links) == 3
    error_message = "a dual lab has three links: tester-dut1, dut1-dut2, dut2-tester"
  }
  assert {
    condition     = output.plan.nodes.dut2.test_ports[1].ipv4 == "198.19.0.1/24"
    error_message = "the last DUT's right port is 198.19.0.1/24"
  }
  assert {
    condition     = strcontains(output.inventory_yaml, "tl-tft-dut2")
    error_message = "the inventory names the namespaces"
  }
  assert {
    condition     = output.plan.nodes.tester.cpus[0] != output.plan.nodes.dut1.cpus[0]
    error_message = "the DUT forwards on another CPU than the tester"
  }
  assert {
    condition     = output.plan.nodes.server.test_ports[0].peer_mac == output.plan.nodes.dut2.test_ports[1].mac
    error_message = "the server sits on tester port 1's link, facing the last DUT's right port"
  }
  assert {
    condition     = length(output.plan.macvlans) == 2 && strcontains(output.inventory_yaml, "tl-tft-client")
    error_message = "the client and server nodes are made (macvlans of the tester ports) and in the inventory"
  }
}

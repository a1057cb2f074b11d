# The MAAS lab against a mocked canonical/maas (schemas from the provider binary that `make providers`
# put in terraform/providers/mirror): what is allocated and deployed, and the inventory it yields.
# The API key comes from the environment (TF_VAR_maas_api_key): tests/terraform sets a random one and
# checks that it shows up nowhere.

mock_provider "maas" {
  mock_resource "maas_instance" {
    defaults = {
      ip_addresses = ["10.20.0.9"]
    }
  }
}

variables {
  maas_api_url = "http://maas.invalid:5240/MAAS"
  lab_name     = "tfma"
  topology     = "single"
  os           = { distro_series = "jammy", hwe_kernel = "hwe-22.04" }
  ssh_key      = "/keys/maas_ed25519"
  machines = {
    tester = {
      hostname = "trex-01"
      cpus     = [2, 3, 4]
      test_ports = [
        { name = "enp65s0f0", mac = "3c:fd:fe:a1:00:10", pci = "0000:41:00.0" },
        { name = "enp65s0f1", mac = "3c:fd:fe:a1:00:11", pci = "0000:41:00.1" },
      ]
    }
    dut1 = {
      tags          = ["trexlab-dut", "lab-a"]
      pool          = "benchmark"
      zone          = "rack-3"
      min_cpu_count = 8
      min_memory    = 16384
      distro_series = "noble"
      cpus          = [1]
      test_ports = [
        { name = "ens1f0", mac = "b4:96:91:b2:00:20", pci = "0000:17:00.0" },
        { name = "ens1f1", mac = "b4:96:91:b2:00:21", pci = "0000:17:00.1" },
      ]
    }
  }
}

run "allocates_and_deploys_the_declared_machines" {
  command = apply # against the mock: nothing leaves this machine

  override_resource {
    target = maas_instance.node["tester"]
    values = { hostname = "trex-01", fqdn = "trex-01.maas", ip_addresses = ["10.20.0.11", "10.20.0.5"] }
  }
  override_resource {
    target = maas_instance.node["dut1"]
    values = { hostname = "dut-07", fqdn = "dut-07.maas", ip_addresses = ["10.20.0.7"] }
  }

  assert {
    condition     = keys(maas_instance.node) == ["dut1", "tester"]
    error_message = "one MAAS machine per node"
  }
  assert {
    condition = (one(maas_instance.node["tester"].allocate_params).hostname == "trex-01"
    && length(one(maas_instance.node["tester"].allocate_params).tags) == 0)
    error_message = "the tester is selected by hostname"
  }
  assert {
    condition = (one(maas_instance.node["dut1"].allocate_params).tags == toset(["trexlab-dut", "lab-a"])
      && one(maas_instance.node["dut1"].allocate_params).pool == "benchmark"
      && one(maas_instance.node["dut1"].allocate_params).zone == "rack-3"
      && one(maas_instance.node["dut1"].allocate_params).min_cpu_count == 8
      && one(maas_instance.node["dut1"].allocate_params).min_memory == 16384
    && one(maas_instance.node["dut1"].allocate_params).hostname == null)
    error_message = "the DUT is selected by tags, pool, zone and size"
  }
  assert {
    condition = (one(maas_instance.node["tester"].deploy_params).distro_series == "jammy"
      && one(maas_instance.node["tester"].deploy_params).hwe_kernel == "hwe-22.04"
    && one(maas_instance.node["dut1"].deploy_params).distro_series == "noble")
    error_message = "the lab's image and kernel, overridden per machine"
  }
  assert {
    condition = (join(",", sort([for i in maas_instance.node["dut1"].network_interfaces : i.name])) == "b4:96:91:b2:00:20,b4:96:91:b2:00:21"
    && alltrue([for i in maas_instance.node["dut1"].network_interfaces : i.subnet_cidr == null && i.ip_address == null]))
    error_message = "the test ports are found by MAC and get no subnet, so MAAS leaves them unconfigured: ${jsonencode(maas_instance.node["dut1"].network_interfaces)}"
  }
  assert {
    condition     = yamldecode(output.inventory_yaml).all.vars.trexlab_lab == { name = "tfma", kind = "maas", topology = "single" }
    error_message = "the lab's identity"
  }
  assert {
    condition = (yamldecode(output.inventory_yaml).all.children.testers.hosts.tester.ansible_host == "10.20.0.11"
      && yamldecode(output.inventory_yaml).all.children.duts.hosts.dut1.ansible_host == "10.20.0.7"
      && yamldecode(output.inventory_yaml).all.children.duts.hosts.dut1.ansible_user == "ubuntu"
      && yamldecode(output.inventory_yaml).all.children.duts.hosts.dut1.ansible_become == "true"
    && yamldecode(output.inventory_yaml).all.children.duts.hosts.dut1.ansible_ssh_private_key_file == "/keys/maas_ed25519")
    error_message = "Ansible reaches the deployed machines at their (first) MAAS address as ubuntu with sudo"
  }
  assert {
    condition = yamldecode(output.inventory_yaml).all.children.duts.hosts.dut1.test_ports[0] == {
      index = 0, name = "ens1f0", mac = "b4:96:91:b2:00:20", pci = "0000:17:00.0",
      ipv4  = "198.18.0.1/24", ipv6 = "2001:2:0:8000::1/64", peer_mac = "3c:fd:fe:a1:00:10"
    }
    error_message = "the DUT's left port: declared name, MAC, PCI; planned addresses; tester port 0 as peer"
  }
  assert {
    condition = (yamldecode(output.inventory_yaml).all.children.testers.hosts.tester.trexlab_cpus == [2, 3, 4]
    && yamldecode(output.inventory_yaml).all.children.duts.hosts.dut1.trexlab_maas_host == "dut-07")
    error_message = "CPUs as declared; the MAAS machine each node got"
  }
  assert {
    condition     = output.allocated.dut1.hostname == "dut-07" && output.allocated.tester.fqdn == "trex-01.maas"
    error_message = "what lab-down releases"
  }
}

run "addresses_by_fqdn" {
  command = apply
  variables {
    ansible_host_from = "fqdn"
  }
  override_resource {
    target = maas_instance.node["dut1"]
    values = { fqdn = "dut-07.maas" }
  }
  assert {
    condition     = yamldecode(output.inventory_yaml).all.children.duts.hosts.dut1.ansible_host == "dut-07.maas"
    error_message = "ansible_host_from = fqdn uses MAAS DNS names"
  }
}

run "rejects_a_missing_api_key" {
  command = plan
  variables {
    maas_api_key = ""
  }
  expect_failures = [var.maas_api_key]
}

run "rejects_a_malformed_api_key" {
  command = plan
  variables {
    maas_api_key = "only-one-part"
  }
  expect_failures = [var.maas_api_key]
}

run "rejects_a_missing_api_url" {
  command = plan
  variables {
    maas_api_url = null
  }
  expect_failures = [var.maas_api_url]
}

run "rejects_two_duts_needed_one_declared" {
  command = plan
  variables {
    topology = "dual"
  }
  expect_failures = [output.inventory_yaml]
  assert {
    condition     = length(maas_instance.node) == 0
    error_message = "nothing is allocated for a bad declaration"
  }
}

run "rejects_a_machine_without_its_test_ports" {
  command = plan
  variables {
    machines = {
      tester = { hostname = "trex-01", cpus = [0], test_ports = [{ name = "p0", mac = "02:00:00:00:00:01" }, { name = "p1", mac = "02:00:00:00:00:02" }] }
      dut1   = { hostname = "dut-07", cpus = [1], test_ports = [{ name = "l", mac = "02:00:00:00:01:01" }] }
    }
  }
  expect_failures = [output.inventory_yaml]
}

run "rejects_a_cpu_list_naming_a_cpu_twice" {
  command = plan
  variables {
    machines = {
      tester = { hostname = "trex-01", cpus = [0, 1, 1], test_ports = [{ name = "p0", mac = "02:00:00:00:00:01" }, { name = "p1", mac = "02:00:00:00:00:02" }] }
      dut1   = { hostname = "dut-07", cpus = [1], test_ports = [{ name = "l", mac = "02:00:00:00:01:01" }, { name = "r", mac = "02:00:00:00:01:02" }] }
    }
  }
  expect_failures = [output.inventory_yaml]
}

run "rejects_a_machine_selected_by_nothing" {
  command = plan
  variables {
    machines = {
      tester = { hostname = "trex-01", cpus = [0], test_ports = [{ name = "p0", mac = "02:00:00:00:00:01" }, { name = "p1", mac = "02:00:00:00:00:02" }] }
      dut1   = { cpus = [1], test_ports = [{ name = "l", mac = "02:00:00:00:01:01" }, { name = "r", mac = "02:00:00:00:01:02" }] }
    }
  }
  expect_failures = [output.inventory_yaml]
}

run "rejects_a_hostname_no_machine_can_have" {
  command = plan
  variables {
    machines = {
      tester = { hostname = "trex-01.lab.example", cpus = [0], test_ports = [{ name = "p0", mac = "02:00:00:00:00:01" }, { name = "p1", mac = "02:00:00:00:00:02" }] }
      dut1   = { hostname = "-oProxyCommand=x", cpus = [1], test_ports = [{ name = "l", mac = "02:00:00:00:01:01" }, { name = "r", mac = "02:00:00:00:01:02" }] }
    }
  }
  expect_failures = [output.inventory_yaml]
}

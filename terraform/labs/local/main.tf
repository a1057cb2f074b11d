# The local lab: tester and DUT nodes as Linux network namespaces joined by veth
# pairs, each node with its own sshd on a management link from the root
# namespace, so Ansible reaches them exactly as it reaches bare-metal hosts.
#
# Only the built-in terraform_data resource is used: nothing to download. The
# plan (names, links, MACs, addresses) is computed here; scripts/nslab.py only
# realises it and tears it down.

# Management addresses and MAC byte of this lab, as every lab on this machine derives them.
module "management" {
  source   = "../../modules/management"
  lab_name = var.lab_name
}

locals {
  lab_byte    = module.management.mac_byte
  mgmt_prefix = module.management.prefix
  prefix      = "tl-${var.lab_name}"

  node_names = {
    single   = ["tester", "dut1"]
    dual     = ["tester", "dut1", "dut2"]
    loopback = ["tester"]
  }[var.topology]
  node_index = { for i, n in local.node_names : n => i + 1 }

  # Port names inside each namespace: tester ports face DUT left/right ports.
  port_name = { tester = ["port0", "port1"], dut1 = ["left", "right"], dut2 = ["left", "right"] }

  mac = { for n in local.node_names : n => [for p in [0, 1] : format("02:74:6c:%02x:%02x:%02x", local.lab_byte, local.node_index[n], p)] }
  # The tester sends on CPU 0, the DUTs forward on the others; with fewer CPUs than DUTs they share one.
  cpus = { for n in local.node_names : n => n == "tester" ? [0] : [1 + (local.node_index[n] - 2) % (var.cpu_count - 1)] }
}

# The address plan and the cabling of docs/architecture.md, written once for every lab kind. Each
# namespace is its own "machine": the topology module's check that nodes on one machine do not share
# CPUs is for declared machines, while a dual lab on two CPUs shares the DUTs' CPU on purpose.
module "topology" {
  source   = "../../modules/topology"
  topology = var.topology
  nodes = { for n in local.node_names : n => {
    machine    = "namespace-${n}"
    cpus       = local.cpus[n]
    test_ports = [for p in [0, 1] : { name = local.port_name[n][p], mac = local.mac[n][p] }]
  } }
}

locals {
  # The peer MAC of every tester port (what a TCP endpoint beside it faces).
  peer = { for n, node in module.topology.nodes : n => [for p in node.test_ports : p.peer_mac] }
  nodes = {
    for n in local.node_names : n => merge(module.topology.nodes[n], {
      netns        = "${local.prefix}-${n}"
      mgmt_root_if = "tl${var.lab_name}m${local.node_index[n]}"
      mgmt_root    = "${local.mgmt_prefix}::${2 * local.node_index[n]}"
      ansible_host = "${local.mgmt_prefix}::${2 * local.node_index[n] + 1}"
    })
  }

  # TCP endpoints (docs/architecture.md): the client on tester port 0's link, the server on port 1's, each
  # through a macvlan child of that tester port, so their TCP traffic crosses the same DUT ports (and
  # impairments) as the test frames while the tester's path gains nothing. Fixed indexes 8 and 9 keep
  # their management addresses and MACs independent of the topology.
  endpoint_names = var.tcp_endpoints && var.topology != "loopback" ? ["client", "server"] : []
  endpoint = {
    client = { index = 8, tester_port = 0, ipv4 = "198.18.0.3/24", ipv6 = "2001:2:0:8000::3/64" }
    server = { index = 9, tester_port = 1, ipv4 = "198.19.0.3/24", ipv6 = "2001:2:0:9000::3/64" }
  }
  endpoints = {
    for n in local.endpoint_names : n => {
      role         = n
      netns        = "${local.prefix}-${n}"
      mgmt_root_if = "tl${var.lab_name}m${local.endpoint[n].index}"
      mgmt_root    = "${local.mgmt_prefix}::${2 * local.endpoint[n].index}"
      ansible_host = "${local.mgmt_prefix}::${2 * local.endpoint[n].index + 1}"
      cpus         = []
      dut_position = null
      test_ports = [{
        index    = 0
        name     = "tcp0"
        mac      = format("02:74:6c:%02x:%02x:00", local.lab_byte, local.endpoint[n].index)
        ipv4     = local.endpoint[n].ipv4
        ipv6     = local.endpoint[n].ipv6
        peer_mac = local.peer.tester[local.endpoint[n].tester_port] # the DUT port beyond the tester port
        pci      = null
      }]
    }
  }

  plan = {
    lab       = var.lab_name
    topology  = var.topology
    state_dir = var.state_dir
    nodes     = merge(local.nodes, local.endpoints)
    links = [for l in module.topology.cabling : {
      a = { node = l[0], port = local.port_name[l[0]][l[1]], mac = local.mac[l[0]][l[1]] }
      b = { node = l[2], port = local.port_name[l[2]][l[3]], mac = local.mac[l[2]][l[3]] }
    }]
    macvlans = [for n, e in local.endpoints : {
      node       = n
      port       = e.test_ports[0].name
      mac        = e.test_ports[0].mac
      lower_node = "tester"
      lower_port = local.port_name.tester[local.endpoint[n].tester_port]
    }]
  }
}

resource "terraform_data" "lab" {
  input = {
    plan   = jsonencode(local.plan)
    script = abspath("${path.module}/scripts/nslab.py")
  }

  provisioner "local-exec" {
    command = "python3 ${self.input.script} up"
    environment = {
      NSLAB_PLAN = self.input.plan
    }
  }

  provisioner "local-exec" {
    when    = destroy
    command = "python3 ${self.input.script} down"
    environment = {
      NSLAB_PLAN = self.input.plan
    }
  }
}

module "inventory" {
  source = "../../modules/inventory"
  lab    = { name = var.lab_name, kind = "local", topology = var.topology }
  # nslab.py writes the host keys it generates for the nodes' sshd there: nothing else is accepted.
  known_hosts = { file = "${var.state_dir}/known_hosts", policy = "yes" }
  nodes = {
    for name, n in merge(local.nodes, local.endpoints) : name => {
      role         = n.role
      ansible_host = n.ansible_host
      ssh_key      = "${var.state_dir}/id_ed25519"
      netns        = n.netns
      cpus         = n.cpus
      dut_position = n.dut_position
      test_ports   = n.test_ports
    }
  }
}

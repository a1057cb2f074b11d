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
  lab_byte = module.management.mac_byte
  prefix   = "tl-${var.lab_name}"

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
  # Client and server nodes beside tester ports 0 and 1, each through a macvlan child of that tester port.
  tcp_endpoints = var.tcp_endpoints ? { mac_byte = local.lab_byte } : null
}

locals {
  nodes = {
    for n in local.node_names : n => merge(module.topology.nodes[n], module.management.links[local.node_index[n]], {
      netns = "${local.prefix}-${n}"
    })
  }
  # The client and server nodes (the topology module's tcp_endpoints): namespaces like the others.
  endpoints = {
    for n, e in module.topology.endpoints : n => merge(e.node, module.management.links[e.index], {
      netns = "${local.prefix}-${n}"
    })
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
    macvlans = [for e in module.topology.endpoints : e.macvlan]
  }
}

# The lab made and removed by scripts/nslab.py (up, down), with terraform/modules/realiser (shared with the other lab this machine realises).
module "realiser" {
  source = "../../modules/realiser"
  plan   = jsonencode(local.plan)
  script = abspath("${path.module}/scripts/nslab.py")
}

# A lab made before the realiser was a module keeps its state: its resources move, nothing is made again.
moved {
  from = terraform_data.teardown
  to   = module.realiser.terraform_data.teardown
}

moved {
  from = terraform_data.lab
  to   = module.realiser.terraform_data.lab
}

module "inventory" {
  source = "../../modules/inventory"
  lab    = { name = var.lab_name, kind = "local", topology = var.topology }
  # nslab.py writes the host keys it generates for the nodes' sshd there: nothing else is accepted.
  known_hosts = { file = "${var.state_dir}/known_hosts", policy = "yes" }
  # The plan's nodes as they are (the module's type keeps what an inventory says: role, ansible_host, netns,
  # cpus, dut_position, test_ports), with the key lab-up made for them.
  nodes = {
    for name, n in merge(local.nodes, local.endpoints) : name => merge(n, {
      ssh_key = "${var.state_dir}/id_ed25519"
    })
  }
}

# The VM lab: DUTs are small QEMU VMs running Debian's own kernel (netem, Jool: what the host's kernel may
# lack), the tester is a network namespace with its own sshd as in the local lab. Test ports are tap devices
# (tester side, moved into the tester's namespace) and virtio NICs (DUT side); the dual topology's middle
# link is a datagram socket pair between the two QEMUs. Management: a tap from the root namespace per VM,
# IPv6 in the lab's block of 2001:2:0:ff80::/57, so Ansible reaches a VM over SSH like any other node.
# The TCP endpoints (client, server) are namespaces too, as on the local lab (tcp_endpoints).
#
# Only the built-in terraform_data resource is used: nothing to download. The guest image (kernel, root
# file system with Jool) and the accelerator (KVM where it works, else TCG) are prepared by
# scripts/vmlab.py prepare before Terraform runs (scripts/lab.sh does it) and come in as variables;
# scripts/vmlab.py up/down realises and removes the plan computed here.

# Management addresses and MAC byte of this lab, as every lab on this machine derives them.
module "management" {
  source   = "../../modules/management"
  lab_name = var.lab_name
}

locals {
  lab_byte   = module.management.mac_byte
  duts       = { single = ["dut1"], dual = ["dut1", "dut2"] }[var.topology]
  node_names = concat(["tester"], local.duts)
  node_index = { for i, n in local.node_names : n => i + 1 }
  port_name  = { tester = ["port0", "port1"], dut1 = ["left", "right"], dut2 = ["left", "right"] }
  mac = { for n in local.node_names : n => [
    for p in [0, 1, 9] : format("02:74:6c:%02x:%02x:%02x", local.lab_byte, local.node_index[n], p)
  ] } # ports 0 and 1, and 9 for a VM's management NIC
  host_cpus = range(1, var.cpu_count)
}

# The address plan and the cabling of docs/architecture.md, as for bare-metal labs: each VM is a machine
# of its own whose (guest) CPU 0 forwards.
module "topology" {
  source   = "../../modules/topology"
  topology = var.topology
  nodes = { for n in local.node_names : n => {
    machine    = n == "tester" ? "host" : "vm-${n}"
    cpus       = [0]
    test_ports = [for p in [0, 1] : { name = local.port_name[n][p], mac = local.mac[n][p] }]
  } }
  tcp_endpoints = var.tcp_endpoints ? { mac_byte = local.lab_byte } : null
}

locals {
  # The tester is a namespace (netns); a DUT is a VM (mgmt_mac: its management NIC; host_cpus: QEMU's).
  nodes = { for n in local.node_names : n => merge(module.topology.nodes[n], module.management.links[local.node_index[n]], {
    netns     = n == "tester" ? "tl-${var.lab_name}-tester" : null
    mgmt_mac  = n == "tester" ? null : local.mac[n][2]
    host_cpus = n == "tester" ? [] : local.host_cpus
  }) }

  # Links from tester port 0 to tester port 1 (the topology's cabling). A link to the tester is a tap made
  # in the root namespace (QEMU opens it there) and moved into the tester's namespace under the tester
  # port's name.
  links = [for i, l in module.topology.cabling : {
    a   = { node = l[0], port = local.port_name[l[0]][l[1]], mac = local.mac[l[0]][l[1]] }
    b   = { node = l[2], port = local.port_name[l[2]][l[3]], mac = local.mac[l[2]][l[3]] }
    tap = l[0] == "tester" || l[2] == "tester" ? "tl${var.lab_name}t${i}" : null
  }]

  # The client and server nodes (the topology module's tcp_endpoints), namespaces of the host as on the local
  # lab: their ports are macvlan children of the tester ports (taps QEMU holds), so their kernel TCP crosses
  # the DUT VM's ports and netem qdiscs like the test frames.
  endpoints = {
    for n, e in module.topology.endpoints : n => merge(e.node, module.management.links[e.index], {
      netns     = "tl-${var.lab_name}-${n}"
      mgmt_mac  = null
      host_cpus = []
    })
  }

  plan = {
    lab       = var.lab_name
    topology  = var.topology
    state_dir = var.state_dir
    vm = {
      kernel     = "${var.image_dir}/vmlinux"
      initrd     = "${var.image_dir}/initrd.cpio"
      accel      = var.accel
      memory_mib = var.memory_mib
    }
    nodes    = merge(local.nodes, local.endpoints)
    links    = local.links
    macvlans = [for e in module.topology.endpoints : e.macvlan]
  }
}

# The lab made and removed by scripts/vmlab.py (up, down), with terraform/modules/realiser (shared with the other lab this machine realises).
module "realiser" {
  source = "../../modules/realiser"
  plan   = jsonencode(local.plan)
  script = abspath("${path.module}/scripts/vmlab.py")
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
  lab    = { name = var.lab_name, kind = "vm", topology = var.topology }
  # The guests make their host keys at first boot: the first one seen is kept, a changed one refused
  # (vmlab.py empties the file when it makes the VMs again).
  known_hosts = { file = "${var.state_dir}/known_hosts", policy = "accept-new" }
  # The plan's nodes as they are (the module's type keeps what an inventory says: role, ansible_host, netns,
  # cpus, dut_position, test_ports), with the key lab-up made for them.
  nodes = {
    for name, n in merge(local.nodes, local.endpoints) : name => merge(n, {
      ssh_key = "${var.state_dir}/id_ed25519"
      # How the DUT is emulated: procedures warn that TCG figures describe the emulator, not a device.
      extra_vars = n.role == "dut" ? { trexlab_vm_accel = var.accel } : {}
    })
  }
}

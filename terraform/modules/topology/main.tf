# Machines declared for a bare-metal lab (static or MAAS) -> the nodes of the inventory: which node is
# the tester and which the DUTs, the address plan of docs/architecture.md on their test ports, and the
# peer MAC of every port from the cabling the topology implies. What cannot be cabled as declared comes
# back as `problems` (one sentence each) instead of an error here: a lab's root module turns them into a
# plan-time precondition failure, which `terraform test` can expect (failures inside a child module
# cannot be expected), and feeds the inventory module only a checked topology.

locals {
  node_names = ["tester", "dut1", "dut2"]
  # Client and server nodes declared as machines of their own (bare metal: hosts cabled or switched onto the
  # links of tester ports 0 and 1), one test port each; the local and VM labs make theirs (tcp_endpoints).
  endpoint_names = ["client", "server"]
  expected_duts  = { single = ["dut1"], dual = ["dut1", "dut2"], loopback = [] }[var.topology]
  declared_duts  = sort([for name in keys(var.nodes) : name if name != "tester" && contains(local.node_names, name)])

  # Links from tester port 0 to tester port 1: [node, port index] at either end.
  chain = {
    single   = [["tester", 0, "dut1", 0], ["dut1", 1, "tester", 1]]
    dual     = [["tester", 0, "dut1", 0], ["dut1", 1, "dut2", 0], ["dut2", 1, "tester", 1]]
    loopback = [["tester", 0, "tester", 1]]
  }[var.topology]

  # MACs in one spelling (lower case) so that cabling and duplicate checks compare like with like.
  mac = { for name, n in var.nodes : name => [for p in n.test_ports : lower(p.mac)] }
  peer = merge(
    { for l in local.chain : "${l[0]}/${l[1]}" => try(local.mac[l[2]][l[3]], null) },
    { for l in local.chain : "${l[2]}/${l[3]}" => try(local.mac[l[0]][l[1]], null) },
  )

  # The address plan (docs/architecture.md), the same as the local lab's.
  ipv4 = merge(
    { "tester/0" = "198.18.0.2/24", "tester/1" = "198.19.0.2/24", "dut1/0" = "198.18.0.1/24" },
    var.topology == "dual" ? {
      "dut1/1" = "198.19.255.253/30", "dut2/0" = "198.19.255.254/30", "dut2/1" = "198.19.0.1/24"
    } : { "dut1/1" = "198.19.0.1/24" },
  )
  ipv6 = merge(
    { "tester/0" = "2001:2:0:8000::2/64", "tester/1" = "2001:2:0:9000::2/64", "dut1/0" = "2001:2:0:8000::1/64" },
    var.topology == "dual" ? {
      "dut1/1" = "2001:2:0:ff00::1/64", "dut2/0" = "2001:2:0:ff00::2/64", "dut2/1" = "2001:2:0:9000::1/64"
    } : { "dut1/1" = "2001:2:0:9000::1/64" },
  )

  # Every declared test port as "node port i", for messages and duplicate checks.
  ports = flatten([for name, n in var.nodes : [for i, p in n.test_ports : {
    where = "${name} port ${i}", node = name, name = p.name, mac = lower(p.mac), pci = p.pci
  }]])
  # Pairs of nodes on one machine, each pair once.
  names = keys(var.nodes) # sorted
  same_machine = flatten([for i, a in local.names : [for j, b in local.names : { a = a, b = b, machine = var.nodes[a].machine }
  if i < j && var.nodes[a].machine == var.nodes[b].machine]])

  problems = concat(
    [for name in keys(var.nodes) : "machines: '${name}' is no node of a topology (allowed: tester, dut1, dut2, client, server: the machine's role)"
    if !contains(concat(local.node_names, local.endpoint_names), name)],
    contains(keys(var.nodes), "tester") ? [] : ["machines: no tester declared"],
    join(",", local.declared_duts) == join(",", local.expected_duts) ? [] : [
      "topology ${var.topology} needs ${length(local.expected_duts) == 0 ? "no DUT" : join(" and ", local.expected_duts)}; declared: ${length(local.declared_duts) == 0 ? "no DUT" : join(", ", local.declared_duts)}"
    ],
    [for name, n in var.nodes : "${name} declares ${length(n.test_ports)} test port(s); every node needs two (index 0 towards tester port 0, index 1 towards tester port 1)"
    if length(n.test_ports) != 2 && !contains(local.endpoint_names, name)],
    [for name, n in var.nodes : "${name} declares ${length(n.test_ports)} test port(s); a ${name} needs one, on the link of tester port ${local.endpoint[name].tester_port}"
    if length(n.test_ports) != 1 && contains(local.endpoint_names, name)],
    [for name in keys(var.nodes) : "topology loopback has no DUT, so no ${name} either: it faces a DUT port"
    if var.topology == "loopback" && contains(local.endpoint_names, name)],
    [for p in local.ports : "${p.where}: mac '${p.mac}' is not a MAC address (like 3c:fd:fe:a1:b2:c3)"
    if !can(regex("^([0-9a-f]{2}:){5}[0-9a-f]{2}$", p.mac))],
    # The rule of trexlab/rolevalues.py (_INTERFACE): names reach shells, nft rules and sysfs paths on the nodes.
    [for p in local.ports : "${p.where}: name '${p.name}' is not an interface name (1-15 characters A-Z a-z 0-9 _ . @ -)"
    if !can(regex("^[A-Za-z0-9_.@-]{1,15}$", p.name)) || contains([".", ".."], p.name)],
    [for p in local.ports : "${p.where}: pci '${p.pci}' is not a PCI address (like 0000:01:00.0)"
    if p.pci != null && !can(regex("^([0-9a-fA-F]{4}:)?[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\\.[0-7]$", coalesce(p.pci, "-")))],
    [for mac, where in { for p in local.ports : p.mac => p.where... } : "test port mac ${mac} is declared twice: ${join(", ", where)}"
    if length(where) > 1],
    [for name, n in var.nodes : "${name}: both test ports are named ${n.test_ports[0].name}"
    if length(n.test_ports) == 2 && try(n.test_ports[0].name == n.test_ports[1].name, false)],
    [for name, n in var.nodes : "${name}: CPU list ${jsonencode(n.cpus)} names a CPU twice or a negative one"
    if length(distinct(n.cpus)) != length(n.cpus) || anytrue([for c in n.cpus : c < 0 || floor(c) != c])],
    [for name, n in var.nodes : "${name} declares no CPUs: the DUT's forwarding is pinned to them (dut_tuning)"
    if contains(["dut1", "dut2"], name) && length(n.cpus) == 0],
    [for pair in local.same_machine : "CPU lists overlap on machine ${pair.machine}: ${pair.a} ${jsonencode(var.nodes[pair.a].cpus)} and ${pair.b} ${jsonencode(var.nodes[pair.b].cpus)}; nodes on one machine need CPUs of their own"
    if length(setintersection(var.nodes[pair.a].cpus, var.nodes[pair.b].cpus)) > 0],
  )

  nodes = {
    for name, n in var.nodes : name => {
      role         = contains(local.endpoint_names, name) ? name : name == "tester" ? "tester" : "dut"
      dut_position = contains(local.node_names, name) && name != "tester" ? try(index(local.expected_duts, name) + 1, null) : null
      cpus         = n.cpus
      test_ports = [for i, p in n.test_ports : {
        index = i
        name  = p.name
        mac   = lower(p.mac)
        ipv4  = contains(local.endpoint_names, name) ? local.endpoint[name].ipv4 : lookup(local.ipv4, "${name}/${i}", null)
        ipv6  = contains(local.endpoint_names, name) ? local.endpoint[name].ipv6 : lookup(local.ipv6, "${name}/${i}", null)
        # A declared client or server faces the DUT port beyond its tester port, as the made ones do (endpoints).
        peer_mac = (contains(local.endpoint_names, name) ? lookup(local.peer, "tester/${local.endpoint[name].tester_port}", null)
        : lookup(local.peer, "${name}/${i}", null))
        pci = p.pci
      }]
    }
  }

  # TCP endpoints (docs/architecture.md): the client on tester port 0's link, the server on port 1's, each
  # through a macvlan child of that tester port, so their TCP traffic crosses the same DUT ports (and
  # impairments) as the test frames while the tester's path gains nothing. Fixed node indexes 8 and 9 keep
  # their management addresses and MACs independent of the topology (the other nodes are 1-3).
  endpoint = {
    client = { index = 8, tester_port = 0, ipv4 = "198.18.0.3/24", ipv6 = "2001:2:0:8000::3/64" }
    server = { index = 9, tester_port = 1, ipv4 = "198.19.0.3/24", ipv6 = "2001:2:0:9000::3/64" }
  }
  endpoints = {
    for n, e in local.endpoint : n => {
      index = e.index
      node = {
        role         = n
        cpus         = []
        dut_position = null
        test_ports = [{
          index    = 0
          name     = "tcp0"
          mac      = format("02:74:6c:%02x:%02x:00", var.tcp_endpoints.mac_byte, e.index)
          ipv4     = e.ipv4
          ipv6     = e.ipv6
          peer_mac = try(local.nodes.tester.test_ports[e.tester_port].peer_mac, null) # the DUT port beyond the tester port
          pci      = null
        }]
      }
      macvlan = {
        node       = n
        port       = "tcp0"
        mac        = format("02:74:6c:%02x:%02x:00", var.tcp_endpoints.mac_byte, e.index)
        lower_node = "tester"
        lower_port = try(local.nodes.tester.test_ports[e.tester_port].name, null)
      }
    } if var.tcp_endpoints != null && var.topology != "loopback"
  }
}

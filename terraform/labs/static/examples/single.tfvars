# A static single-DUT lab: two machines you already have, cabled tester port 0 <-> DUT port 0 and
# DUT port 1 <-> tester port 1. make lab-up LAB=static TFVARS=terraform/labs/static/examples/single.tfvars
# The test ports' addresses and peer MACs follow from the topology (docs/architecture.md).
machines = {
  tester = {
    ansible_host = "192.0.2.10" # SSH address Ansible uses (management network, not a test port)
    ansible_user = "root"
    ssh_key      = "~/.ssh/id_ed25519"
    cpus         = [2, 3] # the tester's senders/receivers (TRex: its worker threads)
    test_ports = [
      { name = "enp65s0f0", mac = "3c:fd:fe:a1:00:10", pci = "0000:41:00.0" }, # port 0, towards dut1 port 0
      { name = "enp65s0f1", mac = "3c:fd:fe:a1:00:11", pci = "0000:41:00.1" }, # port 1, towards dut1 port 1
    ]
  }
  dut1 = {
    ansible_host = "192.0.2.20"
    ansible_user = "admin"
    become       = true   # sudo to root for the roles
    cpus         = [4, 5] # the DUT's forwarding: RPS and IRQ affinity of its test ports
    test_ports = [
      { name = "ens1f0", mac = "b4:96:91:b2:00:20", pci = "0000:17:00.0" }, # left, towards tester port 0
      { name = "ens1f1", mac = "b4:96:91:b2:00:21", pci = "0000:17:00.1" }, # right, towards tester port 1
    ]
  }
  # TCP endpoints for RFC 6349 and HTTP downloads (optional): hosts on the links of tester ports 0 and 1.
  # client = {
  #   ansible_host = "192.0.2.30"
  #   test_ports   = [{ name = "eno2", mac = "3c:fd:fe:a1:00:30" }] # on tester port 0's link (198.18.0.3)
  # }
}

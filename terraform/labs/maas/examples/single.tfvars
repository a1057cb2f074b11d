# A MAAS single-DUT lab. The MAAS URL and API key are NOT here: export MAAS_API_URL and MAAS_API_KEY.
# make lab-up LAB=maas TFVARS=terraform/labs/maas/examples/single.tfvars
# Tag the cabled machines in MAAS first (maas $PROFILE tags create name=trexlab-tester, then
# maas $PROFILE tag update-nodes trexlab-tester add=<system_id>), or select them by hostname.
os           = { distro_series = "jammy", hwe_kernel = "hwe-22.04" } # image and kernel for every machine
ansible_user = "ubuntu"                                              # MAAS deploys your MAAS user's SSH keys
ssh_key      = "~/.ssh/id_ed25519"

machines = {
  tester = {
    tags = ["trexlab-tester"] # a tag only the cabled tester has
    pool = "trexlab"
    cpus = [2, 3, 4, 5] # the tester's senders/receivers (TRex: its worker threads)
    test_ports = [
      { name = "enp65s0f0", mac = "3c:fd:fe:a1:00:10", pci = "0000:41:00.0" }, # port 0, towards dut1 port 0
      { name = "enp65s0f1", mac = "3c:fd:fe:a1:00:11", pci = "0000:41:00.1" }, # port 1, towards dut1 port 1
    ]
  }
  dut1 = {
    hostname   = "dut-r640-1" # or tags/pool, as long as only the cabled machine matches
    hwe_kernel = "hwe-22.04-edge"
    cpus       = [2, 3] # the DUT's forwarding: RPS and IRQ affinity of its test ports
    test_ports = [
      { name = "ens1f0", mac = "b4:96:91:b2:00:20", pci = "0000:17:00.0" }, # left, towards tester port 0
      { name = "ens1f1", mac = "b4:96:91:b2:00:21", pci = "0000:17:00.1" }, # right, towards tester port 1
    ]
  }
}

# The management block and MAC byte of a lab follow from its name alone (the first 6 hex digits of its
# SHA-1 modulo 2^23), so every tool that derives them (lab-up's refusal of a block in use, the VM lab,
# the local lab) agrees; the expected values below were computed apart from Terraform (Python's hashlib).

run "local_lab_block" {
  command = plan
  variables {
    lab_name = "local"
  }
  assert {
    condition     = output.prefix == "2001:2:0:ff93:9bb4" && output.mac_byte == 52
    error_message = "sha1(local)[:6] = 139bb4, modulo 2^23 = 1285044: block ff93:9bb4, MAC byte 52; got ${output.prefix}, ${output.mac_byte}"
  }
  assert {
    condition     = output.links[8].mgmt_root_if == "tllocalm8" && output.links[8].mgmt_root == "2001:2:0:ff93:9bb4::16" && output.links[8].ansible_host == "2001:2:0:ff93:9bb4::17"
    error_message = "node 8's management link: the root side's tl<lab>m8 at <prefix>::16, the node at <prefix>::17"
  }
}

run "another_name_another_block" {
  command = plan
  variables {
    lab_name = "tft"
  }
  assert {
    condition     = output.prefix == "2001:2:0:ffa6:9353" && output.mac_byte == 83
    error_message = "tft: block ffa6:9353, MAC byte 83; got ${output.prefix}, ${output.mac_byte}"
  }
}

run "the_block_stays_inside_ff80_57" {
  command = plan
  variables {
    lab_name = "a"
  }
  assert {
    condition     = startswith(output.prefix, "2001:2:0:ff8") && output.prefix == "2001:2:0:ff86:f7e4" && output.mac_byte < 128
    error_message = "a: block ff86:f7e4 (the 7 bits above the last group stay in ff80..ffff); got ${output.prefix}"
  }
}

run "rejects_an_empty_name" {
  command = plan
  variables {
    lab_name = ""
  }
  expect_failures = [var.lab_name]
}

run "the_longest_name_fits_an_interface_name" {
  command = plan
  variables {
    lab_name = "abcdefgh-jk"
  }
  assert {
    condition     = alltrue([for l in values(output.links) : length(l.mgmt_root_if) <= 15])
    error_message = "every management interface name of an 11-character lab fits Linux's 15 characters"
  }
}

run "rejects_a_name_too_long_for_an_interface_name" {
  command = plan
  variables {
    lab_name = "abcdefghijkl"
  }
  expect_failures = [var.lab_name]
}

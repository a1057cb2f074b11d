variable "lab_name" {
  description = "The lab's name (the local and VM labs allow make lab-up's LAB_NAME, trexlab/rolevalues.py LAB_NAME); its SHA-1 chooses the block."
  type        = string
  validation {
    # It is part of interface names (links: tl<lab_name>m<n>), which Linux allows 15 characters: a longer name
    # planned, and the lab's apply failed at its first 'ip link add'.
    condition     = can(regex("^[a-z0-9-]{1,11}$", var.lab_name))
    error_message = "lab_name must be 1-11 characters of a-z, 0-9 and - (it is part of 15-character interface names): ${jsonencode(var.lab_name)}."
  }
}

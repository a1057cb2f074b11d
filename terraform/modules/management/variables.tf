variable "lab_name" {
  description = "The lab's name (the local and VM labs allow 1-6 characters of a-z and 0-9); its SHA-1 chooses the block."
  type        = string
  validation {
    condition     = can(regex("^[a-z0-9-]{1,63}$", var.lab_name))
    error_message = "lab_name must be 1-63 characters of a-z, 0-9 and -."
  }
}

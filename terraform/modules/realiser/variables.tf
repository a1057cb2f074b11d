variable "plan" {
  description = "The lab's plan as JSON (jsonencode of the lab's plan)."
  type        = string
}

variable "script" {
  description = "Absolute path of the realiser (a Python script taking up, down or status). It gets the plan in the environment variable <SCRIPT>_PLAN, its file name's stem in capitals: NSLAB_PLAN for nslab.py, VMLAB_PLAN for vmlab.py."
  type        = string

  validation {
    condition     = startswith(var.script, "/") && endswith(var.script, ".py")
    error_message = "script: an absolute path of a .py file (the realiser), got \"${var.script}\"."
  }
}

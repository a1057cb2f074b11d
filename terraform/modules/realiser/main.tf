# The realiser of a lab this machine makes (the local lab's nslab.py, the VM lab's vmlab.py): `up` when the
# lab is created, `down` when it is destroyed. The realiser's plan reaches it in the environment variable
# named after its file (nslab.py: NSLAB_PLAN), derived from self.input, because a destroy-time provisioner
# may read nothing but self.

locals {
  input = { plan = var.plan, script = var.script }
}

# The realiser's `down` also on a resource of its own that nothing can taint. Terraform runs no destroy-time
# provisioner of a tainted resource, and terraform_data.lab is tainted whenever its `up` failed halfway (a
# node whose sshd never answered, Ctrl-C): with `down` only there, lab-down of such a lab destroyed the state
# and left its namespaces, links and processes running. The lab depends on this one, so this one is destroyed
# after it: on lab-down, and on a replacement (another plan) with the old plan, before the new lab's `up`.
# (`down` is idempotent; the lab's own destroy provisioner stays for a lab made before this resource existed.)
resource "terraform_data" "teardown" {
  input            = local.input
  triggers_replace = var.plan

  provisioner "local-exec" {
    when = destroy
    # The script as an argument of its own, through no shell: a checkout path with a blank or a $( ) in it
    # stays one word and runs nothing.
    interpreter = ["python3", self.input.script]
    command     = "down"
    environment = {
      (upper("${trimsuffix(basename(self.input.script), ".py")}_PLAN")) = self.input.plan
    }
  }
}

resource "terraform_data" "lab" {
  input = local.input
  # The lab is realised by the create provisioner only: another plan (make lab-up TOPOLOGY=dual on a single lab)
  # replaces it, the old plan's lab torn down first (terraform_data.teardown). An input change alone is an
  # in-place update that runs no provisioner: the inventory named the new plan's nodes while the old lab stayed up.
  triggers_replace = var.plan
  depends_on       = [terraform_data.teardown]

  provisioner "local-exec" {
    interpreter = ["python3", self.input.script]
    command     = "up"
    environment = {
      (upper("${trimsuffix(basename(self.input.script), ".py")}_PLAN")) = self.input.plan
    }
  }

  provisioner "local-exec" {
    when        = destroy
    interpreter = ["python3", self.input.script]
    command     = "down"
    environment = {
      (upper("${trimsuffix(basename(self.input.script), ".py")}_PLAN")) = self.input.plan
    }
  }
}

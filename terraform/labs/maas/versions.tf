terraform {
  required_version = ">= 1.10" # ephemeral variables
  backend "local" {}
  required_providers {
    maas = {
      source = "canonical/maas"
      # The Go module proxy serves 1.3.1 (make providers builds it into terraform/providers/mirror);
      # with the registry, the newest 1.x. 2.x changed the instance schema.
      version = "~> 1.3"
    }
  }
}

output "id" {
  description = "The realised lab's resource id: depend on it (or on the module) for what exists only once the lab is up."
  value       = terraform_data.lab.id
}

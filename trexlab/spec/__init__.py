"""What the user declares, read and checked: the experiment spec (safe YAML, typed, its JSON Schema, a spec
file validated into sweep points)."""

"""The lab trexlab runs on: its nodes and ports from the inventory, one run at a time (the lab lock), the
TCP endpoints (client and server nodes)."""

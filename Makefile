# trexlab front door.  Every target is a thin call into scripts/ or a tool in .venv,
# so that CI, the README and a user at a shell run exactly the same thing.

SHELL := /bin/bash
.DEFAULT_GOAL := help

LAB      ?= local
TOPOLOGY ?= single
NETWORKS ?= 1
EXP      ?= demo
VENV     ?= .venv
PY       := $(VENV)/bin/python
export PATH := $(CURDIR)/$(VENV)/bin:$(PATH)
export LAB TOPOLOGY NETWORKS

.PHONY: help setup providers swtester lab-up configure lab-down run report demo lint test test-unit test-lab bench clean

help: ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | sed -E 's/^([a-z-]+):.*## /  make \1\t/' | expand -t 24

setup: ## .venv, Python/Ansible tools, swtester, Debian packages the local lab needs (idempotent)
	@scripts/setup.sh

providers: ## build Terraform providers from the Go module proxy into terraform/providers/mirror
	@scripts/providers.sh

swtester: ## build the native software tester
	@$(MAKE) -s -C swtester

lab-up: ## provision the lab (LAB=local|vm|static|maas TOPOLOGY=single|dual|loopback; static, maas: TFVARS=file)
	@scripts/lab.sh up

configure: ## apply playbooks/site.yml to the lab (NETWORKS=1..256)
	@scripts/lab.sh configure

lab-down: ## destroy everything lab-up made
	@scripts/lab.sh down

run: ## run an experiment campaign: make run EXP=name
	@scripts/run-experiment.sh $(EXP)

report: ## execute the analysis notebooks and export HTML
	@scripts/report.sh $(EXP)

demo: ## the main job on the local lab: setup, lab-up, configure, short campaign, report, lab-down
	@scripts/demo.sh

lint: ## ruff, yamllint, ansible-lint, terraform fmt/validate
	@scripts/lint.sh

test: ## everything CI runs: setup, lint, unit, lab, role and end-to-end tests
	@scripts/test.sh

bench: ## benchmarks (print figures; not tests)
	@scripts/bench.sh

clean: ## remove build products (not the venv)
	@$(MAKE) -s -C swtester clean || true
	@rm -rf build .pytest_cache .ruff_cache

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

# Every value given on the command line is checked here, before any recipe runs, so that none is ever read by
# a shell as code (EXP='x; touch F') or names a file outside the repo (EXP=../../elsewhere): a bad one stops
# make with one line and exit code 2.  $(value ...) is the text as typed, never expanded by make itself.
_name_chars := a b c d e f g h i j k l m n o p q r s t u v w x y z 0 1 2 3 4 5 6 7 8 9 _ -
_lab_name_chars := a b c d e f g h i j k l m n o p q r s t u v w x y z 0 1 2 3 4 5 6 7 8 9
_digits := 0 1 2 3 4 5 6 7 8 9
# $(1) with every character of the list $(2) removed: empty when $(1) is made of those characters only.
_without = $(if $(2),$(call _without,$(subst $(firstword $(2)),,$(1)),$(wordlist 2,$(words $(2)),$(2))),$(1))
define _newline


endef
# The value as typed, on one line (so that an error about it stays one line).
_shown = $(subst $(_newline),\n,$(value $(1)))
_refuse = $(error $(1)=$(call _shown,$(1)): $(2))

# $(1) with a space after every character of the list $(2): $(words ...) of it is its length.
_spaced = $(if $(2),$(call _spaced,$(subst $(firstword $(2)),$(firstword $(2)) ,$(1)),$(wordlist 2,$(words $(2)),$(2))),$(1))
# Empty when variable $(1) is one of the words $(2).
_not_one_of = $(if $(and $(filter 1,$(words $(value $(1)))),$(filter $(2),$(value $(1)))),,no)

ifneq ($(or $(if $(value EXP),,empty),$(call _without,$(value EXP),$(_name_chars))),)
$(call _refuse,EXP,an experiment is named with a-z 0-9 _ - (one of: $(notdir $(wildcard experiments/*))))
endif
ifeq ($(wildcard experiments/$(EXP)/experiment.yml),)
$(call _refuse,EXP,no experiments/$(EXP)/experiment.yml (one of: $(notdir $(wildcard experiments/*))))
endif
ifneq ($(call _without,$(value SCALE),$(_name_chars)),)
$(call _refuse,SCALE,a scale is named with a-z 0-9 _ - (e.g. ci))
endif
# A lab name's longest, from its one rule (trexlab/rolevalues.py's LAB_NAME_MAX line, which scripts/common.sh reads too).
_lab_name_max := $(shell sed -n 's/^LAB_NAME_MAX = \([1-9][0-9]*\)$$/\1/p' trexlab/rolevalues.py)
ifeq ($(_lab_name_max),)
$(error trexlab/rolevalues.py: no line 'LAB_NAME_MAX = <number>' (the lab name's rule))
endif
ifneq ($(origin LAB_NAME),undefined)
ifneq ($(or $(call _without,$(value LAB_NAME),$(_lab_name_chars)),\
            $(filter-out $(shell seq 1 $(_lab_name_max)),$(words $(call _spaced,$(value LAB_NAME),$(_lab_name_chars))))),)
$(call _refuse,LAB_NAME,allowed 1-$(_lab_name_max) characters a-z 0-9)
endif
endif
ifneq ($(call _not_one_of,LAB,local vm static maas),)
$(call _refuse,LAB,allowed local vm static maas)
endif
ifneq ($(call _not_one_of,TOPOLOGY,single dual loopback),)
$(call _refuse,TOPOLOGY,allowed single dual loopback)
endif
ifneq ($(call _not_one_of,NETWORKS,$(shell seq 1 256)),)
$(call _refuse,NETWORKS,allowed 1..256)
endif
# A value given on the command line reaches the scripts as typed, as the checks above read it: make hands each
# command-line variable to every recipe's environment (and through MAKEFLAGS to sub-makes) expanded once, so that
# CEILINGS='$(shell touch F)', which no check here reads, ran touch F. Each becomes a simple variable of its text.
_var_chars := $(_lab_name_chars) A B C D E F G H I J K L M N O P Q R S T U V W X Y Z _
$(foreach _v,$(.VARIABLES),$(if $(filter command line,$(origin $(_v))),$(if $(call _without,$(_v),$(_var_chars)),\
  $(error $(_v)=: a variable given to make is named with A-Z a-z 0-9 _),\
  $(eval override export $(_v) := $$(value $(_v))))))
MAKEOVERRIDES :=

# The values a goal's script reads and checks itself (scripts/common.sh, their one source), checked by that script
# run with --check-only before any recipe: a refusal is then one line, as those above are, not the script's line
# and make's own "*** [Makefile:NN: run] Error 2" after it. Each value is handed to it as typed, in single quotes.
_sh_quoted = '$(subst $(_newline),'$$'\n'',$(subst ','\'',$(value $(1))))'
# Also PATH as the recipes get it (.venv/bin first) and VENV where given: make 4.3's $(shell) gets neither.
_script_env = $(foreach _v,SCALE LAB LAB_NAME TOPOLOGY NETWORKS RESULTS CAMPAIGN CEILINGS MEASURE_AGAIN DEMO_EXP \
  DEMO_LAB_NAME TFVARS,$(if $(filter-out undefined,$(origin $(_v))),$(_v)=$(call _sh_quoted,$(_v)))) \
  PATH=$(call _sh_quoted,PATH) $(if $(filter-out file,$(origin VENV)),VENV=$(call _sh_quoted,VENV))
# The scripts also check what they find (a lab that is not up, a TFVARS file) and what the goal needs of the machine
# (root, terraform, trexlab in .venv, MAAS credentials): make -n, which runs no recipe, has them check the values only
# (--check-values), so that its answer does not depend on the machine's state.
_check_found := $(if $(findstring n,$(firstword -$(MAKEFLAGS))),--check-values,--check-only)
# make's PID (its $(shell)'s parent): the run its recipe starts takes over the lab its check holds for it, so that no
# run takes the lab between the two (trexlab/testbed/lock.py, TREXLAB_LAB_HELD_FOR: make run's check and recipe only).
_make_pid := $(if $(filter run,$(MAKECMDGOALS)),$(shell echo $$PPID))
_check_run := TREXLAB_LAB_HELD_FOR=$(_make_pid) scripts/run-experiment.sh $(_check_found) $(EXP)
_check_report := scripts/report.sh $(_check_found) $(EXP)
_check_demo := scripts/demo.sh $(_check_found)
_check_lab-up := scripts/lab.sh $(_check_found) up
_check_configure := scripts/lab.sh $(_check_found) configure
_check_lab-down := scripts/lab.sh $(_check_found) down
_check_lab-status := scripts/lab.sh $(_check_found) status
_check_providers := scripts/providers.sh $(_check_found)
_check_bench := scripts/bench.sh $(_check_found)
_check_setup := scripts/setup.sh $(_check_found)
$(foreach _goal,$(filter run report demo lab-up configure lab-down lab-status providers bench setup,$(MAKECMDGOALS)),\
  $(eval _refusal := $$(shell $$(_script_env) $$(_check_$(_goal)) 2>&1 >/dev/null))\
  $(if $(filter-out 0,$(.SHELLSTATUS)),$(error $(_refusal))))
export LAB TOPOLOGY NETWORKS

.PHONY: help setup providers swtester lab-up configure lab-down lab-status run report demo lint test test-unit test-lab bench clean

help: ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | sed -E 's/^([a-z-]+):.*## /  make \1\t/; s/LAB_NAME_MAX/$(_lab_name_max)/' \
	  | expand -t 24

setup: ## .venv, Python/Ansible tools, swtester, Debian packages the local lab needs (idempotent)
	@scripts/setup.sh

providers: ## build Terraform providers from the Go module proxy into terraform/providers/mirror
	@scripts/providers.sh

swtester: ## build the native software tester
	@$(MAKE) -s -C swtester

lab-up: ## provision a lab (LAB=local|vm|static|maas TOPOLOGY=single|dual|loopback LAB_NAME=1-LAB_NAME_MAX of a-z0-9, default LAB; static, maas: TFVARS=file)
	@scripts/lab.sh up

configure: ## apply playbooks/site.yml to the lab (NETWORKS=1..256, default 1; LAB_NAME=lab, default LAB; LAB=the kind lab-up made)
	@scripts/lab.sh configure

lab-down: ## destroy everything lab-up made (LAB_NAME=lab, default LAB; LAB=the kind lab-up made)
	@scripts/lab.sh down

lab-status: ## each lab of this checkout, up or what of it is down (LAB_NAME=lab: that one only, not up: its lab-up); not 0 if one is down, or none (the lab named) is up (README)
	@scripts/lab.sh status

run: ## run or resume a campaign: EXP=name (default demo) [SCALE=ci] [LAB_NAME=lab, default LAB] [RESULTS=dir, default results] [CEILINGS=RESULTS/x.json] [MEASURE_AGAIN=1]
	@TREXLAB_LAB_HELD_FOR=$(_make_pid) scripts/run-experiment.sh '$(EXP)'

report: ## execute an experiment's report notebook, export HTML: EXP=name [CAMPAIGN=dir, default its latest] [RESULTS=dir]
	@scripts/report.sh '$(EXP)'

demo: ## the main job on the local lab: setup, lab-up, configure, short campaign, report, lab-down [DEMO_EXP=name, default demo] [DEMO_LAB_NAME=lab, default demo] [SCALE=ci] [RESULTS=dir]
	@scripts/demo.sh

lint: ## ruff, mypy, yamllint, ansible-lint, terraform fmt/validate
	@scripts/lint.sh

test: ## everything CI runs: setup, lint, unit, lab, role and end-to-end tests
	@scripts/test.sh

bench: ## benchmarks (print figures; not tests)
	@scripts/bench.sh

clean: ## remove build products (not the venv)
	@$(MAKE) -s -C swtester clean || true
	@rm -rf build .pytest_cache .ruff_cache

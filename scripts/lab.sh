#!/usr/bin/env bash
# make lab-up / configure / lab-down / lab-status.
#   LAB=local|vm|static|maas  TOPOLOGY=single|dual|loopback  NETWORKS=1..256  LAB_NAME=a-z0-9, at most rolevalues.LAB_NAME_MAX
#   TFVARS=file.tfvars (static and maas labs: the machines you declare)
# Every lab kind writes the same inventory: inventory/generated/<LAB_NAME>/hosts.yml.
set -euo pipefail
source "$(dirname "$0")/common.sh"
cd "$TREXLAB_ROOT"

# --check-only: check the values it reads, what it finds (the lab's kind, its inventory, TFVARS) and what the action
# needs of the machine (root, its tools, MAAS credentials), then stop (make runs it so before any recipe: a refusal is
# one line); --check-values: the values only (make -n, whose answer must not depend on the machine's state).
check_only=; case "${1:-}" in --check-only|--check-values) check_only=$1; shift;; esac
action=${1:-}
NAMED=${LAB_NAME:-}  # lab-status: that lab only; without it, every lab of this checkout
LAB=${LAB:-local}
LAB_NAME=${LAB_NAME:-$LAB}
TOPOLOGY=${TOPOLOGY:-single}
NETWORKS=${NETWORKS:-1}
STATE_DIR="$TREXLAB_ROOT/.cache/labs/$LAB_NAME"
INVENTORY_DIR="$TREXLAB_ROOT/inventory/generated/$LAB_NAME"
MODULE="terraform/labs/$LAB"

# Validate everything before anything changes.
case "$action" in up|configure|down|status) ;; *) refuse "action=$action: usage: scripts/lab.sh up|configure|down|status";; esac
case "$LAB" in local|vm|static|maas) ;; *) refuse "LAB=$LAB: allowed local, vm, static, maas";; esac
case "$TOPOLOGY" in single|dual|loopback) ;; *) refuse "TOPOLOGY=$TOPOLOGY: allowed single, dual, loopback";; esac
check_lab_name "$LAB_NAME"
[[ "$NETWORKS" =~ ^[1-9][0-9]{0,2}$ ]] && [ "$NETWORKS" -le 256 ] || refuse "NETWORKS=$NETWORKS: allowed 1..256"
[ -d "$MODULE" ] || die "LAB=$LAB: $MODULE does not exist in this checkout"
[ "$LAB:$TOPOLOGY" != vm:loopback ] \
  || refuse "TOPOLOGY=loopback: a loopback lab has no DUT, so no VM: allowed single, dual with LAB=vm (loopback: LAB=local)"
[ "$check_only" != --check-values ] || exit 0
# The kind a lab of this name was made as. Another kind's module reads the lab's Terraform state as its own:
# lab-up LAB=static over a local lab dropped the namespaces' resources from the state without running their
# destroy provisioners (its namespaces and sshd left running, found by nothing), lab-down LAB=vm of a local
# lab ended in a traceback. Labs made before lab-up recorded it ($STATE_DIR/kind) tell by their state; without
# a state nothing of the lab is up (a lab-up that failed before Terraform ran), and any kind may make it.
made_as() {
  local dir=${1:-$STATE_DIR}
  local state="$dir/terraform.tfstate"
  [ -f "$state" ] || return 0
  if [ -f "$dir/kind" ]; then cat "$dir/kind"
  else
    if grep -q '"maas_instance"' "$state"; then echo maas
    elif grep -q 'scripts/vmlab\.py' "$state"; then echo vm
    elif grep -q 'scripts/nslab\.py' "$state"; then echo local
    fi
  fi
}
# The make lab-up that makes lab $2 as kind $1 (a plain 'make lab-up' brings up lab local).
lab_up_command() {
  local up="make lab-up"
  [ "$1" = local ] || up+=" LAB=$1"
  [ "$2" = "$1" ] || up+=" LAB_NAME=$2"
  printf '%s\n' "$up"
}
# The line of a lab with no Terraform state ($1: its state directory, which may not exist): nothing of it is up. Its
# lab-up is of the kind a lab-up that failed before Terraform ran recorded there, else of LAB.
not_up() {
  local kind=$LAB
  [ ! -f "$1/kind" ] || kind=$(cat "$1/kind")
  printf '%s\n' "lab ${1##*/}: not up (no Terraform state): $(lab_up_command "$kind" "${1##*/}") brings it up"
}
# make lab-status: each lab of this checkout (LAB_NAME given: that one) with its kind, topology and state
# directory, and whether it is up; a local or VM lab's realiser names what of it is down (a node's sshd that
# died, a VM, a namespace). Bare-metal machines are not probed (make configure reaches them). Without LAB_NAME,
# also the labs on this host that are not this checkout's. Exit 1 when a lab of this checkout is down; 3 when the
# lab named is not up (as systemctl is-active for an inactive unit), so that a script tells it from a broken lab,
# and without LAB_NAME when no lab of this checkout is (other checkouts' labs are not its own: a script around
# make lab-status asks about the labs of the checkout it runs in). Several up: one line each, 0.
lab_status() {
  local dir name kind plan topology found rc=0 lines=()
  local dirs=("$TREXLAB_ROOT/.cache/labs/$NAMED")
  [ -n "$NAMED" ] || dirs=("$TREXLAB_ROOT"/.cache/labs/*/)
  [ -n "$NAMED" ] || [ -e "${dirs[0]}" ] || dirs=()
  if [ -z "$NAMED" ] && ! compgen -G "$TREXLAB_ROOT/.cache/labs/*/terraform.tfstate" >/dev/null; then
    if [ ${#dirs[@]} -eq 0 ]; then found=".cache/labs/ is empty"; else found="none in .cache/labs/ has a Terraform state"; fi
    lines=("no lab of this checkout is up ($found): $(lab_up_command "$LAB" "$LAB") brings up lab $LAB")
    for dir in "${dirs[@]}"; do lines+=("$(not_up "${dir%/}")"); done
    printf '%s\n' "${lines[@]}"
    other_labs
    return 3
  fi
  for dir in "${dirs[@]}"; do
    dir=${dir%/}
    name=${dir##*/}
    if [ ! -f "$dir/terraform.tfstate" ]; then
      not_up "$dir"
      [ -z "$NAMED" ] || rc=3
      continue
    fi
    kind=$(made_as "$dir")
    case "$kind" in
      local|vm)
        plan=$(python3 -c 'import json, sys; print(json.dumps(json.load(open(sys.argv[1]))["outputs"]["plan"]["value"]))' \
          "$dir/terraform.tfstate" 2>/dev/null) || { printf '%s\n' "lab $name ($kind, $dir): down: its Terraform state has no plan"; rc=1; continue; }
        topology=$(python3 -c 'import json, sys; print(json.loads(sys.argv[1])["topology"])' "$plan")
        if found=$(run_realiser "$kind" "$plan" status); then
          printf '%s\n' "lab $name ($kind, $topology, $dir): up"
        else
          printf '%s\n' "lab $name ($kind, $topology, $dir): down: ${found//$'\n'/; }; make lab-up LAB=$kind LAB_NAME=$name makes it again"
          rc=1
        fi;;
      *)
        topology=$(sed -n 's/^topology = "\(.*\)"$/\1/p' "$dir/lab.tfvars" 2>/dev/null) || topology=""  # lab.tfvars removed: unknown
        printf '%s\n' "lab $name (${kind:-unknown kind}, ${topology:-unknown topology}, $dir): in its Terraform state (bare-metal machines are not probed here)";;
    esac
  done
  [ -n "$NAMED" ] || other_labs
  return "$rc"
}
# Labs with namespaces on this host that are not this checkout's: another checkout's (its sshd or its recorded
# owner names its state directory), or one nothing names the owner of (made before owners were recorded, with
# its sshd down; or left over). One line each.
other_labs() {
  local lab owners
  while IFS=$'\t' read -r lab owners; do
    [ ! -d "$TREXLAB_ROOT/.cache/labs/$lab" ] || continue
    if [ -n "$owners" ]; then
      printf '%s\n' "lab $lab (another checkout's: ${owners//$'\t'/, }): its namespaces are up on this host"
    else
      printf '%s\n' "lab $lab (owner unknown: no sshd runs in its namespaces tl-$lab-* and none is recorded): down or left over; the make lab-down of its own checkout removes it"
    fi
  done < <(python3 terraform/labs/local/scripts/nslab.py owners)
}

# The realiser of a local or VM lab ($1) on the plan $2: up, down or status ($3).
run_realiser() {
  local script=terraform/labs/local/scripts/nslab.py
  [ "$1" = vm ] && script=terraform/labs/vm/scripts/vmlab.py
  NSLAB_PLAN=$2 VMLAB_PLAN=$2 python3 "$script" "$3"
}

if [ "$action" = status ]; then
  # A listing that is not 0 (the lab named not up or down; without LAB_NAME a lab of the checkout down, or none up):
  # its lines joined by "; " before any recipe, so that through make it is one line (make's exit 2), not the listing
  # and make's "*** [Makefile:NN: lab-status] Error 1" after it. All up, the recipe probes them again and lists them.
  if [ -n "$check_only" ]; then
    found=$(lab_status) || { rc=$?; printf '%s\n' "${found//$'\n'/; }" >&2; exit "$rc"; }
  else
    lab_status
  fi
  exit
fi
# configure too: it read no Terraform state, so configure LAB=vm of a local lab ran site.yml on its namespaces and
# said nothing of the kind the user had named (needing root or not by that kind), where lab-up and lab-down refuse it.
kind=$(made_as)
if [ -n "$kind" ] && [ "$kind" != "$LAB" ]; then
  case "$action" in
    up) refuse "LAB=$LAB: lab $LAB_NAME is a $kind lab: take it down first (make lab-down LAB=$kind LAB_NAME=$LAB_NAME) or choose another LAB_NAME";;
    configure) refuse "LAB=$LAB: lab $LAB_NAME is a $kind lab: make configure LAB=$kind LAB_NAME=$LAB_NAME";;
    *) refuse "LAB=$LAB: lab $LAB_NAME is a $kind lab: make lab-down LAB=$kind LAB_NAME=$LAB_NAME";;
  esac
fi
# Bare metal: the machines come from TFVARS at lab-up (kept in the state dir, so lab-down needs none);
# MAAS credentials only from the environment, never from a file.
if [ "$action" = up ] && [[ "$LAB" =~ ^(static|maas)$ ]]; then
  [ -n "${TFVARS:-}" ] || refuse "LAB=$LAB needs TFVARS=<file.tfvars> declaring the machines"
  [ -f "$TFVARS" ] || refuse "TFVARS=$TFVARS: no such file"
  ! grep -q maas_api_key -- "$TFVARS" || refuse "TFVARS=$TFVARS sets maas_api_key: the key comes from the environment only (MAAS_API_KEY)"
fi
if [ "$action" = configure ]; then
  up=$(lab_up_command "$LAB" "$LAB_NAME")  # this lab's, not the default one
  [ -f "$INVENTORY_DIR/hosts.yml" ] \
    || refuse "LAB_NAME=$LAB_NAME: lab $LAB_NAME is not up (no ${INVENTORY_DIR#"$TREXLAB_ROOT"/}/hosts.yml): run '$up' first"
  # An inventory written before its groups were the roles in the plural (group tester held host tester, and Ansible
  # warned on every run): site.yml's plays would match no group, and Ansible only warns and configures no host.
  ! grep -qE '^    "?(tester|dut|client|server)"?:' "$INVENTORY_DIR/hosts.yml" \
    || refuse "LAB_NAME=$LAB_NAME: ${INVENTORY_DIR#"$TREXLAB_ROOT"/}/hosts.yml has a group named like its host, written before the groups were renamed: run '$up' again (it rewrites the inventory)"
fi
# What the action needs of this machine (root, MAAS credentials, its tools): checked with the rest, so that through
# make a refusal of it is one line too (make -n's --check-values stopped above: its answer does not depend on these).
case "$LAB" in local|vm) need_root "LAB=$LAB";; esac
if [ "$action" != configure ] && [ "$LAB" = maas ]; then
  [ -n "${MAAS_API_URL:-}" ] && [ -n "${MAAS_API_KEY:-}" ] \
    || die "LAB=maas needs MAAS_API_URL and MAAS_API_KEY in the environment (the MAAS region and your API key)"
  export TF_VAR_maas_api_url="$MAAS_API_URL" TF_VAR_maas_api_key="$MAAS_API_KEY"
fi
if [ "$action" = configure ]; then
  [ -x "$VENV/bin/ansible-playbook" ] || die "no $VENV/bin/ansible-playbook: run 'make setup' first"
else
  have terraform || die "terraform not found on PATH (need >= 1.6)"
fi
if [ "$action:$LAB" = up:vm ]; then
  have qemu-system-x86_64 && have mmdebstrap || die "LAB=vm needs qemu-system-x86 and mmdebstrap: run 'make setup'"
fi
# A lab of this name up for another checkout: its realiser refuses it during Terraform's apply (twenty lines of its
# log, the script's and make's), so asked here too, from the lab's namespaces on the host, before anything is made.
if [ "$action" = up ] && [[ "$LAB" =~ ^(local|vm)$ ]]; then
  found=$(python3 terraform/labs/local/scripts/nslab.py foreign "$LAB_NAME" "$STATE_DIR" 2>&1) \
    || refuse "LAB_NAME=$LAB_NAME: ${found#nslab: }"
fi
[ -z "$check_only" ] || exit 0

# Providers: the repo-local mirror only where it was built (make providers); none for the local lab.
if [ -f terraform/providers/terraformrc ] && [ -d terraform/providers/mirror ]; then
  export TF_CLI_CONFIG_FILE="$TREXLAB_ROOT/terraform/providers/terraformrc"
else
  export TF_CLI_CONFIG_FILE=/dev/null
fi
export TF_DATA_DIR="$STATE_DIR/.terraform" TF_IN_AUTOMATION=1 TF_INPUT=0

# The module's variables, as one argument each in the array TF_VARS (a checkout path with spaces stays one word).
tf_vars() {
  case "$LAB" in
    local|vm) TF_VARS=("-var=lab_name=$LAB_NAME" "-var=topology=$TOPOLOGY" "-var=state_dir=$STATE_DIR" "-var=cpu_count=$(nproc)")
      # The VM lab also gets its guest image and accelerator (vm_prepare).
      if [ "$LAB" = vm ] && [ -f "$STATE_DIR/vm.tfvars.json" ]; then TF_VARS+=("-var-file=$STATE_DIR/vm.tfvars.json"); fi;;
    *) TF_VARS=("-var-file=$STATE_DIR/machines$DECLARED.tfvars" "-var-file=$STATE_DIR/lab$DECLARED.tfvars");;
  esac
}

# Static and MAAS labs: what lab-up was given, so that lab-down destroys (releases) exactly that lab. lab-up applies
# it as machines.new.tfvars and lab.new.tfvars (DECLARED=.new); settle_declaration keeps it once applied.
DECLARED=
keep_declaration() {
  mkdir -p "$STATE_DIR"
  cp "$TFVARS" "$STATE_DIR/machines.new.tfvars"
  printf 'lab_name = "%s"\ntopology = "%s"\nknown_hosts_file = "%s"\n' "$LAB_NAME" "$TOPOLOGY" "$STATE_DIR/known_hosts" \
    >"$STATE_DIR/lab.new.tfvars"
  DECLARED=.new
}

# After lab-up's apply ($1: ok or failed). A declaration that failed replaces the kept one only where there was none
# (a first lab-up): lab-down plans with the kept one, and a bad declaration (a refused ansible_host) fails that plan's
# validations, so a lab up on machines (allocated MAAS machines) could not be taken down until it was mended by
# hand. A machine the failed apply allocated is not in the kept declaration: lab-down's destroy releases it all the same.
settle_declaration() {
  [ "$DECLARED" = .new ] || return 0
  local file
  for file in machines lab; do
    if [ "$1" = ok ] || [ ! -f "$STATE_DIR/$file.tfvars" ]; then
      mv -f "$STATE_DIR/$file.new.tfvars" "$STATE_DIR/$file.tfvars"
    else
      rm -f "$STATE_DIR/$file.new.tfvars"
    fi
  done
  DECLARED=
}

tf_init() {
  mkdir -p "$STATE_DIR"
  terraform -chdir="$MODULE" init -no-color -input=false -backend-config="path=$STATE_DIR/terraform.tfstate" >"$STATE_DIR/init.log" \
    || { cat "$STATE_DIR/init.log" >&2; die "terraform init of $MODULE failed"; }
}

# The VM lab's guest image (built once into .cache/vm, then reused) and accelerator, as Terraform variables.
vm_prepare() {
  mkdir -p "$STATE_DIR"
  python3 "$MODULE/scripts/vmlab.py" prepare "$TREXLAB_ROOT/.cache/vm" "$STATE_DIR/vm.tfvars.json" \
    || die "LAB=vm: the guest image could not be prepared"
}

lab_up() {
  local start=$SECONDS replace=() plan found
  mkdir -p "$STATE_DIR"
  printf '%s\n' "$LAB" >"$STATE_DIR/kind"  # what made_as reads
  case "$LAB" in static|maas) keep_declaration;; vm) vm_prepare;; esac
  tf_init
  # A lab whose state says 'created' but whose pieces are gone (interrupted lab-down, reboot) is recreated. The
  # state's list is read whole before grep looks at it: piped, grep -q ended at its match and terraform's next line
  # died of SIGPIPE, which pipefail made a "no": a lab whose sshd was down passed for up ("up in 0 s").
  local resources=""
  if [ -f "$STATE_DIR/terraform.tfstate" ]; then
    resources=$(terraform -chdir="$MODULE" state list 2>/dev/null || true)
  fi
  if grep -q terraform_data.lab <<<"$resources"; then
    plan=$(terraform -chdir="$MODULE" output -json plan)
    if ! found=$(run_realiser "$LAB" "$plan" status); then
      say "lab $LAB_NAME is down (${found//$'\n'/; }): making it again"
      replace=(-replace=module.realiser.terraform_data.lab)
    fi
  fi
  tf_vars
  # Whatever playbooks/site.yml recorded of an earlier lab of this name no longer holds (campaigns read it).
  rm -f "$INVENTORY_DIR/configured.json"
  terraform -chdir="$MODULE" apply -no-color -auto-approve -input=false "${replace[@]}" "${TF_VARS[@]}" >"$STATE_DIR/apply.log" \
    || { settle_declaration failed; tail -n 20 "$STATE_DIR/apply.log" >&2; die "lab-up failed (log: $STATE_DIR/apply.log)"; }
  settle_declaration ok
  mkdir -p "$INVENTORY_DIR"
  terraform -chdir="$MODULE" output -raw inventory_yaml >"$INVENTORY_DIR/hosts.yml"
  say "lab $LAB_NAME ($LAB, $TOPOLOGY) is up in $((SECONDS - start)) s; inventory: ${INVENTORY_DIR#"$TREXLAB_ROOT"/}/hosts.yml"
}

lab_configure() {
  local start=$SECONDS
  # ANSIBLE_ARGS: the user's own extra options (e.g. --check -v), split on blanks but never glob-expanded.
  local extra=()
  read -r -a extra <<<"${ANSIBLE_ARGS:-}"
  ANSIBLE_CONFIG="$TREXLAB_ROOT/ansible.cfg" "$VENV/bin/ansible-playbook" -i "$INVENTORY_DIR/hosts.yml" \
    playbooks/site.yml -e "trexlab_networks=$NETWORKS" "${extra[@]}"
  say "lab $LAB_NAME configured ($NETWORKS destination network(s)) in $((SECONDS - start)) s"
}

lab_down() {
  if [ -f "$STATE_DIR/terraform.tfstate" ]; then
    tf_init
    tf_vars
    terraform -chdir="$MODULE" destroy -no-color -auto-approve -input=false "${TF_VARS[@]}" >"$STATE_DIR/destroy.log" \
      || { tail -n 20 "$STATE_DIR/destroy.log" >&2; die "lab-down failed (log: $STATE_DIR/destroy.log)"; }
  else
    say "lab $LAB_NAME: no Terraform state, nothing to destroy"
  fi
  rm -rf "$INVENTORY_DIR" "$STATE_DIR"
  say "lab $LAB_NAME is down"
}

case "$action" in
  up) lab_up;;
  configure) lab_configure;;
  down) lab_down;;
esac

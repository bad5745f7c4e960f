#!/usr/bin/env bash
# docs/operations.md followed to the letter on three nodes: the commands are
# the doc's own, read from it at run time, so a doc that changes changes the
# test with it, and a command the doc gets wrong fails here.
#
# Each fenced block of the doc that the test runs comes right after a marker
#   <!-- deploy-test: NAME -->
# and the plan below says, for each NAME, where its commands run: the admin
# host, every node, the user's shell, or "per-line" (each command's own
# trailing comment says: "one node", "every node", "PS nodes", "users").
# A marked block the plan does not run, or a planned one the doc lacks,
# fails the test. To run one more block of the doc, mark it and add a line
# to the plan.
#
# The nodes are network namespaces on a bridge of their own, each with its
# own host name (a UTS namespace) and its own /etc/gradsync (each command
# runs in a mount namespace with a directory of the test bound there), so
# the doc's paths, ports and `~` stay literal. Only HOST (the coordinator's
# address) is replaced. node0 runs the coordinator, a worker and a
# parameter server; node1 a worker, and the user's shell; node2 a worker
# and a parameter server. The daemons run as the doc starts them, in the
# background; every other command must exit 0 within its time limit. The
# test then checks what the doc promises: three workers on three hosts at
# their own addresses, two servers, each job SUCCEEDED with every step
# once and the ranks bitwise equal (scripts/check_job.sh), the ring job
# across all three nodes and the PS job switched at runtime, and that
# teardown leaves no daemon, namespace, interface or file behind.
#
# Needs root (namespaces, mounts) and iproute2; without them it skips
# (exit 77) saying what is missing. Names carry "gsd<pid>", so parallel
# runs and a lab never collide. /etc/gradsync is used as a mount point
# only: it is made (empty) if the host has none and removed again.
#
# Usage: across_nodes_test.sh OPERATIONS.md CHECK_JOB.sh GRADSYNC \
#            GRADSYNC-COORDINATOR GRADSYNC-WORKER GRADSYNC-PS
set -euo pipefail

doc=${1:?usage: across_nodes_test.sh OPERATIONS.md CHECK_JOB.sh GRADSYNC COORDINATOR WORKER PS}
check_job=${2:?}
binaries=("${3:?}" "${4:?}" "${5:?}" "${6:?}")

# The doc's blocks, in the order an operator runs them, and where:
#   admin       the admin host (gradsync certs init)
#   every-node  node0, node1 and node2
#   user        a user's shell (on node1, its own home)
#   per-line    each command where its trailing comment says
plan=(
  "certs      admin"
  "node-tls   every-node"
  "user-tls   user"
  "cluster    per-line"
  "first-jobs user"
)
# What the comments of a per-line block name.
place_of_comment() {
  case "$1" in
    "one node"*) echo node0 ;;
    "every node"*) echo "node0 node1 node2" ;;
    "PS nodes"*) echo "node0 node2" ;;
    "users"*) echo user ;;
    *) return 1 ;;
  esac
}
command_timeout=120 # seconds, for each command that is not a daemon

say() { echo "across_nodes_test: $*"; }
said_why=0
fail() {
  echo "across_nodes_test: FAILED: $*" >&2
  said_why=1
  exit 1
}
# A command that fails outside fail(): cleanup names it.
set -E
last_error=""
trap 'last_error="line $LINENO: $BASH_COMMAND"' ERR
skip() {
  echo "SKIP: $*"
  exit 77
}

[ "$(id -u)" -eq 0 ] || skip "needs root (network, mount and UTS namespaces)"
for tool in ip unshare timeout hostname openssl install; do
  command -v "$tool" >/dev/null || skip "needs $tool (iproute2, util-linux, coreutils, openssl)"
done
prefix="gsd$(($$ % 100000))"
if ! ip netns add "${prefix}-x" 2>/dev/null; then
  skip "this machine refuses network namespaces (ip netns add failed)"
fi
ip netns del "${prefix}-x"
unshare --mount true 2>/dev/null || skip "this machine refuses mount namespaces (unshare --mount failed)"

# The doc's commands start from a clean shell: none of this one's
# GRADSYNC_* settings (a local cluster's, say).
for variable in "${!GRADSYNC_@}"; do unset "$variable"; done

# ---- the doc's blocks ----

# The lines of the fenced block after <!-- deploy-test: NAME -->, without
# the fence's indentation.
block_lines() {
  awk -v want="$1" '
    inblock && /^[[:space:]]*```[[:space:]]*$/ { exit }
    inblock { print substr($0, indent + 1); next }
    armed && /^[[:space:]]*```/ {
      inblock = 1; match($0, /^[[:space:]]*/); indent = RLENGTH; next
    }
    /<!-- deploy-test: / {
      name = $0; sub(/.*<!-- deploy-test: */, "", name); sub(/ *-->.*/, "", name)
      armed = (name == want); next
    }
    armed && NF { armed = 0 }
  ' "$doc"
}
# The commands of block NAME into the array `commands`: a line with its
# backslash continuations is one command; comment lines are skipped.
read_block() {
  commands=()
  local line current=""
  while IFS= read -r line; do
    if [[ $line =~ ^(.*)\\[[:space:]]*$ ]]; then
      current+="${BASH_REMATCH[1]} "
      continue
    fi
    current+="$line"
    if [[ -n ${current//[[:space:]]/} && ! $current =~ ^[[:space:]]*# ]]; then
      commands+=("$(tr -s ' ' <<<"$current")")
    fi
    current=""
  done < <(block_lines "$1")
  [ ${#commands[@]} -gt 0 ] ||
    fail "$doc has no fenced block after <!-- deploy-test: $1 -->"
}

# Before any namespace exists: every planned block is in the doc, and every
# block the doc marks is in the plan.
planned=" "
for entry in "${plan[@]}"; do
  read -r name _ <<<"$entry"
  read_block "$name"
  planned+="$name "
done
while read -r name; do
  [[ $planned == *" $name "* ]] ||
    fail "$doc marks block '$name' for this test, but its plan does not run it (add it to the plan in $0)"
done < <(sed -n 's/.*<!-- deploy-test: *\([^ ]*\) *-->.*/\1/p' "$doc")

# ---- the nodes ----

work=$(mktemp -d "${TMPDIR:-/tmp}/gradsync-across.XXXXXX")
subnet="10.81.$(($$ % 200))"
bridge="${prefix}-br"
declare -A netns=([node0]="${prefix}-n0" [node1]="${prefix}-n1" [node2]="${prefix}-n2")
declare -A address=([node0]="${subnet}.10" [node1]="${subnet}.11" [node2]="${subnet}.12")
host_address=${address[node0]}
made_etc_gradsync=0
daemons=() # "pid name log" of each daemon started

alive() {
  local state
  state=$(awk '{print $3}' "/proc/$1/stat" 2>/dev/null || true)
  [ -n "$state" ] && [ "$state" != Z ]
}

# Stops every daemon (SIGTERM, the servers and workers before the
# coordinator, so that they withdraw; SIGKILL after 10 s) and whatever else
# still runs in a node, then removes the nodes, the bridge and the mount
# point. Safe to run twice.
teardown() {
  local pid ns node group i name entry
  for group in others coordinator; do
    local -a pids=()
    for ((i = ${#daemons[@]} - 1; i >= 0; i--)); do
      read -r pid name _ <<<"${daemons[$i]}"
      if [[ $group == coordinator && $name == gradsync-coordinator ]] ||
        [[ $group == others && $name != gradsync-coordinator ]]; then
        pids+=("$pid")
      fi
    done
    for pid in "${pids[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
    local deadline=$((SECONDS + 10))
    for pid in "${pids[@]}"; do
      while alive "$pid" && [ "$SECONDS" -lt "$deadline" ]; do sleep 0.1; done
    done
  done
  for node in node0 node1 node2; do
    ns=${netns[$node]}
    # A daemon that ignored SIGTERM, a rank it left behind.
    for pid in $(ip netns pids "$ns" 2>/dev/null); do kill -KILL "$pid" 2>/dev/null || true; done
  done
  for entry in "${daemons[@]}"; do
    read -r pid _ <<<"$entry"
    wait "$pid" 2>/dev/null || true
  done
  for node in node0 node1 node2; do
    ip netns del "${netns[$node]}" 2>/dev/null || true
    ip link del "${netns[$node]}v" 2>/dev/null || true
  done
  ip link del "$bridge" 2>/dev/null || true
  if [ "$made_etc_gradsync" -eq 1 ]; then
    rmdir /etc/gradsync 2>/dev/null || true
    made_etc_gradsync=0
  fi
}

cleanup() {
  local status=$? entry pid name log
  set +e
  teardown
  if [ "$status" -ne 0 ] && [ "$said_why" -eq 0 ]; then
    echo "across_nodes_test: FAILED: exit status $status at $last_error" >&2
  fi
  if [ "$status" -ne 0 ]; then
    for entry in "${daemons[@]}"; do
      read -r pid name log <<<"$entry"
      echo "---- the last lines of $log ($name, pid $pid) ----" >&2
      tail -n 15 "$log" >&2
    done
  fi
  rm -rf "$work"
  exit "$status"
}
trap cleanup EXIT
# Interrupted (Ctrl-C, a kill): clean up all the same.
trap 'exit 130' INT
trap 'exit 143' TERM

if [ ! -e /etc/gradsync ]; then
  mkdir /etc/gradsync
  made_etc_gradsync=1
fi
[ -d /etc/gradsync ] || fail "/etc/gradsync is not a directory"

mkdir -p "$work/bin"
for binary in "${binaries[@]}"; do
  [ -x "$binary" ] || fail "$binary is not an executable"
  ln -s "$(readlink -f "$binary")" "$work/bin/$(basename "$binary")"
done
gradsync="$work/bin/gradsync"

ip link add "$bridge" type bridge
ip link set "$bridge" up
for node in node0 node1 node2; do
  ns=${netns[$node]}
  veth="${ns}v"
  ip netns add "$ns"
  ip link add "$veth" type veth peer name "${veth}p"
  ip link set "${veth}p" netns "$ns"
  ip -n "$ns" link set "${veth}p" name eth0
  ip link set "$veth" master "$bridge" up
  ip -n "$ns" addr add "${address[$node]}/24" dev eth0
  ip -n "$ns" link set lo up
  ip -n "$ns" link set eth0 up
  mkdir -p "$work/$node/etc" "$work/$node/home"
done
mkdir -p "$work/admin/etc" "$work/admin/home" "$work/user"
say "nodes: node0 ${address[node0]}, node1 ${address[node1]}, node2 ${address[node2]} (bridge $bridge)"

# Where a place's commands run: its network namespace (none: the admin
# host's), its host name, the directory bound on /etc/gradsync, and its home
# (also the working directory).
place_netns() {
  case $1 in admin) echo "" ;; user) echo "${netns[node1]}" ;; *) echo "${netns[$1]}" ;; esac
}
place_host() { case $1 in admin) echo admin ;; user) echo node1 ;; *) echo "$1" ;; esac; }
place_etc() { case $1 in user) echo "$work/node1/etc" ;; *) echo "$work/$1/etc" ;; esac; }
place_home() { case $1 in user) echo "$work/user" ;; *) echo "$work/$1/home" ;; esac; }

# run_at PLACE exec|eval COMMAND: COMMAND at PLACE, with HOST replaced; exec
# replaces the shell (a daemon: its pid is this process's), eval runs it
# and keeps the place's exported GRADSYNC_* variables for its next command.
run_at() {
  local place=$1 how=$2 command=$3 ns
  command=$(sed -E "s/(^|[^A-Za-z0-9_])HOST([^A-Za-z0-9_]|$)/\1${host_address}\2/g" <<<"$command")
  ns=$(place_netns "$place")
  local -a enter=()
  # A command that is not a daemon gets a time limit (timeout signals its
  # whole process group).
  [ "$how" = exec ] || enter=(timeout --kill-after=5 "$command_timeout")
  [ -z "$ns" ] || enter+=(ip netns exec "$ns")
  local env_file
  env_file="$(place_home "$place")/.deploy-test-env"
  # exec: ip netns exec, unshare and the shell each exec the next, so a
  # backgrounded run_at's pid ($!) is the daemon's.
  [ "$how" = exec ] && enter=(exec "${enter[@]}")
  # shellcheck disable=SC2016 # expanded by the inner shell
  "${enter[@]}" unshare --mount --uts --propagation private bash -c '
    set -euo pipefail
    hostname "$1"
    mount --bind "$2" /etc/gradsync
    cd "$3"
    export HOME="$3" PATH="$4:$PATH"
    [ ! -f "$5" ] || . "$5"
    if [ "$6" = exec ]; then eval "exec $7"; fi
    eval "$7"
    export -p | grep "^declare -x GRADSYNC_" >"$5" || true
  ' bash "$(place_host "$place")" "$(place_etc "$place")" "$(place_home "$place")" \
    "$work/bin" "$env_file" "$how" "$command"
}

# The test's own view of the cluster (not the doc's): the admin's users'
# certificate and the coordinator's token, from node0.
observe() {
  local what=$1
  shift
  ip netns exec "${netns[node0]}" "$gradsync" "$what" "$@" --coordinator "${host_address}:29400" \
    --tls-dir "$work/admin/etc/tls" --token-file "$work/node0/etc/user-token" --timeout 5
}

# How often PATTERN occurs in TEXT.
count() { { grep -o "$1" <<<"$2" || true; } | wc -l; }

check_daemons_alive() {
  local entry pid name log
  for entry in "${daemons[@]}"; do
    read -r pid name log <<<"$entry"
    alive "$pid" ||
      fail "$name exited early (pid $pid), its log beginning with: $(head -n 3 "$log")"
  done
}

# Waits (bounded) until everything started so far answers: the coordinator,
# and as many workers and servers registered as were started.
want_workers=0
want_servers=0
coordinator_started=0
wait_for_daemons() {
  local out="" workers servers deadline=$((SECONDS + 30))
  while [ "$SECONDS" -lt "$deadline" ]; do
    check_daemons_alive
    if out=$(observe workers --json 2>&1); then
      workers=$(count '"workerId"' "$out")
      servers=$(count '"psId"' "$out")
      [ "$workers" -ge "$want_workers" ] && [ "$servers" -ge "$want_servers" ] && return 0
    fi
    sleep 0.1
  done
  fail "after 30 s the cluster is not up (want $want_workers workers and $want_servers servers): $out"
}

# The users' copy of the token: made on the coordinator's node by the doc's
# first command; "users get a copy" (readable by them only).
give_users_the_token() {
  if [ -f "$work/node0/etc/user-token" ] && [ ! -f "$work/user/user-token" ]; then
    install -m 0600 "$work/node0/etc/user-token" "$work/user/user-token"
  fi
}

# Before `gradsync switch JOB ...` ("while it runs"): wait until JOB runs
# and has taken a few steps, so that the switch happens at runtime.
wait_until_running() {
  local job=$1 out="" step deadline=$((SECONDS + 60))
  while [ "$SECONDS" -lt "$deadline" ]; do
    out=$(observe status "$job" --json 2>&1 || true)
    step=$(sed -n 's/.*"step":"\{0,1\}\([0-9]*\).*/\1/p' <<<"$out")
    if grep -q '"state":"JOB_STATE_RUNNING"' <<<"$out" && [ "${step:-0}" -ge 3 ]; then
      return 0
    fi
    if grep -q '"state":"JOB_STATE_\(SUCCEEDED\|FAILED\|CANCELLED\)"' <<<"$out"; then
      fail "$job ended before it could be switched: $out"
    fi
    sleep 0.1
  done
  fail "$job did not reach step 3 within 60 s: $out"
}

run_command() {
  local place=$1 command=$2 first
  read -r first _ <<<"$command"
  case $first in
    gradsync-coordinator | gradsync-worker | gradsync-ps)
      local log
      log="$work/$place-$first.log"
      echo "[$place]\$ $command &"
      run_at "$place" exec "$command" >"$log" 2>&1 &
      daemons+=("$! $first $log")
      case $first in
        gradsync-coordinator) coordinator_started=1 ;;
        gradsync-worker) want_workers=$((want_workers + 1)) ;;
        gradsync-ps) want_servers=$((want_servers + 1)) ;;
      esac
      if [ "$coordinator_started" -eq 1 ]; then wait_for_daemons; fi
      ;;
    *)
      [ "$place" != user ] || give_users_the_token
      if [[ $command =~ ^gradsync\ switch\ ([^ ]+) ]]; then
        wait_until_running "${BASH_REMATCH[1]}"
      fi
      echo "[$place]\$ $command"
      outputs=$((outputs + 1))
      local status=0 out="$work/output-$outputs.txt"
      run_at "$place" eval "$command" >"$out" 2>&1 || status=$?
      cat "$out"
      [ "$status" -ne 124 ] || fail "[$place] '$command' did not end within $command_timeout s ($doc)"
      [ "$status" -eq 0 ] || fail "[$place] '$command' exited $status ($doc)"
      if [ "$place" = user ]; then
        user_commands+=("$command")
        user_outputs+=("$out")
      fi
      ;;
  esac
}

outputs=0
user_commands=() # the users' commands, HOST not replaced
user_outputs=()  # and the files with their output

distribute_certificates() {
  local tls="$work/admin/etc/tls" node
  # "On every node ... put the daemons' part": copied to each node (as scp
  # would), where the doc's install commands take them from.
  for node in node0 node1 node2; do
    cp "$tls/ca.pem" "$tls/node.pem" "$tls/node.key" "$work/$node/home/"
  done
  # "Give each user ca.pem, client.pem and client.key (mode 0600)".
  cp "$tls/ca.pem" "$tls/client.pem" "$tls/client.key" "$work/user/"
  chmod 0600 "$work/user/client.key"
}

# ---- the doc, block by block ----

started=$SECONDS
for entry in "${plan[@]}"; do
  read -r name where <<<"$entry"
  read_block "$name"
  say "block '$name' (${#commands[@]} commands, $where)"
  case $where in
    admin | user)
      for command in "${commands[@]}"; do run_command "$where" "$command"; done
      ;;
    every-node)
      for place in node0 node1 node2; do
        for command in "${commands[@]}"; do run_command "$place" "$command"; done
      done
      ;;
    per-line)
      for command in "${commands[@]}"; do
        comment=""
        [[ $command =~ [[:space:]]#[[:space:]]*(.*)$ ]] && comment=${BASH_REMATCH[1]}
        places=$(place_of_comment "$comment") ||
          fail "block '$name': '$command' does not say where it runs (its comment: '$comment')"
        for place in $places; do run_command "$place" "$command"; done
      done
      ;;
    *) fail "plan: unknown place '$where' for block '$name'" ;;
  esac
  [ "$name" != certs ] || distribute_certificates
done

# ---- what the doc promises ----

workers=$(observe workers --json)
for node in node0 node1 node2; do
  grep -q "\"host\":\"$node\"" <<<"$workers" || fail "no worker on host $node: $workers"
  grep -q "\"${address[$node]}[:\"]" <<<"$workers" ||
    fail "nothing registered at ${address[$node]} ($node), the address that reaches the coordinator: $workers"
done
[ "$(count '"psId"' "$workers")" -eq 2 ] || fail "want 2 parameter servers: $workers"
! grep -q '127\.0\.0\.' <<<"$workers" || fail "a daemon advertises a loopback address: $workers"
mode=$(stat -c %a "$work/node0/etc/user-token")
[ "$mode" = 600 ] || fail "the doc's user-token has mode $mode: others on the node can read it"

# The users' commands this test checks. Where the doc stops showing one,
# say so rather than check less.
user_output() { # REGEX WHAT: the output of the user's command that matches
  local i
  for i in "${!user_commands[@]}"; do
    if [[ ${user_commands[$i]} =~ $1 ]]; then
      echo "${user_outputs[$i]}"
      return 0
    fi
  done
  fail "the doc's users no longer run $2; update the checks in $0 with the doc"
}
submitted() { # MODE: the first job submitted with it ("submitted job job-1 (...: 12 workers, ring)")
  sed -n "s/^submitted job \([^ ]*\) (.*, $1)\$/\1/p" "${user_outputs[@]}" | head -1
}
ring_job=$(submitted ring)
ps_job=$(submitted ps)
[ -n "$ring_job" ] || fail "the doc's users submit no ring job"
[ -n "$ps_job" ] || fail "the doc's users submit no PS job"
user_output "^gradsync switch $ps_job " "gradsync switch on the PS job ($ps_job)" >/dev/null
metrics=$(user_output '^gradsync metrics [^ ]+ -o table --link-gbps ' \
  "gradsync metrics JOB -o table --link-gbps B (the README's flags)")
grep -q '^ideal busbw' "$metrics" || fail "gradsync metrics --link-gbps printed no ideal busbw"
grep -q 'OF_IDEAL' "$metrics" || fail "gradsync metrics --link-gbps printed no share of the ideal"
probe=$(user_output '^gradsync links probe' "gradsync links probe")
grep -q '^B = ' "$probe" || fail "gradsync links probe printed no link facts"
grep -q "link facts are set" "$probe" || fail "gradsync links probe did not set the coordinator's link facts"
[ "$(grep -cE '^node[0-9] -> node[0-9] ' "$probe")" -eq 3 ] || fail "gradsync links probe did not measure the 3 hosts' ring"
explain=$(user_output '^gradsync explain ' "gradsync explain")
grep -q 'over 3 hosts' "$explain" || fail "gradsync explain does not see the job's 3 hosts"
grep -q '^verdict: ' "$explain" || fail "gradsync explain gave no verdict"
grep -q 'from links probe job-' "$explain" || fail "gradsync explain does not use the probed link facts"

# The ring job crossed every node; each job ran every step once with the
# ranks bitwise equal, and the PS job switched at runtime.
ring_status=$(observe status "$ring_job" --json)
for node in node0 node1 node2; do
  grep -q "\"host\":\"$node\"" <<<"$ring_status" || fail "$ring_job has no rank on $node"
done
export GRADSYNC="$gradsync" GRADSYNC_COORDINATOR="${host_address}:29400" \
  GRADSYNC_TLS_DIR="$work/admin/etc/tls" GRADSYNC_TOKEN_FILE="$work/node0/etc/user-token"
ip netns exec "${netns[node0]}" "$check_job" "$ring_job"
ip netns exec "${netns[node0]}" "$check_job" "$ps_job" --switches 1

# Teardown leaves nothing: no daemon, namespace, interface or mount point.
pids=()
for entry in "${daemons[@]}"; do
  read -r pid _ <<<"$entry"
  pids+=("$pid")
done
made=$made_etc_gradsync
teardown
for pid in "${pids[@]}"; do
  ! alive "$pid" || fail "daemon $pid is still running after teardown"
done
left=$(ip netns list | grep "^${prefix}-" || true)
[ -z "$left" ] || fail "namespaces left: $left"
left=$(ip -o link show | grep -o "${prefix}-[^:@]*" || true)
[ -z "$left" ] || fail "interfaces left: $left"
[ "$made" -eq 0 ] || [ ! -e /etc/gradsync ] || fail "/etc/gradsync (made by this test) left"

say "ran the doc's commands and checked them in $((SECONDS - started)) s"
say "OK"

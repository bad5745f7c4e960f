#!/usr/bin/env bash
# scripts/check_layering.sh against small trees made here: each breaks one
# rule (a lower layer including a higher one; common/ including security/
# or observability/, or those two including each other; the CLI framework
# including a room of commands; a room including one it may not use) and
# must fail
# naming the file, line and include; the same tree with the rooms' allowed
# includes passes.
#
#   tests/repo/layering_check_test.sh scripts/check_layering.sh
set -euo pipefail
check=${1:?usage: $0 CHECK_LAYERING_SH}
dir=$(mktemp -d "${TMPDIR:-/tmp}/gradsync-layering.XXXXXX")
trap 'rm -rf "$dir"' EXIT

# A tree whose includes follow every rule.
good_tree() {
  rm -rf "$dir/tree"
  mkdir -p "$dir/tree"/{common,worker,cli/framework,cli/control,cli/lab}
  mkdir -p "$dir/tree"/{cli/bench,cli/plan,security,observability}
  cd "$dir/tree"
  echo '#include "common/flags.h"' >cli/framework/command_env.h
  echo '#include "cli/framework/command_env.h"' >cli/control/job_commands.cc
  echo '#include "cli/control/local_cluster.h"' >cli/lab/lab_up.cc
  echo '#include "cli/framework/format.h"' >cli/lab/lab_report.cc
  echo '#include "cli/framework/plot_script.h"' >cli/bench/bench_command.cc
  echo '#include "cli/lab/lab_config.h"' >cli/plan/sim_flags.cc
  echo '#include "cli/bench/bench_command.h"' >cli/commands.cc
  echo '#include "common/flags.h"' >worker/main.cc
  echo '#include "security/tls.h"' >>worker/main.cc
  echo '#include "observability/metrics_http.h"' >>worker/main.cc
  echo '#include "common/flags.h"' >security/tls.cc
  echo '#include "security/tls_dir.h"' >>security/tls.cc
  echo '#include "common/flags.h"' >observability/metrics_http.cc
  echo '#include "observability/prometheus.h"' >>observability/metrics_http.cc
  echo '#include "common/units.h"' >common/flags.cc
  cd - >/dev/null
}

# Adds `line` to `file` in a fresh good tree and expects the check to fail
# saying `expected`.
expect_caught() {
  local file=$1 line=$2 expected=$3 out
  good_tree
  echo "$line" >>"$dir/tree/$file"
  if out=$("$check" "$dir/tree" 2>&1); then
    echo "not caught: $file: $line" >&2
    exit 1
  fi
  if ! grep -qF -- "$expected" <<<"$out"; then
    echo "caught without saying '$expected': $out" >&2
    exit 1
  fi
  echo "caught: $file: $line"
}

good_tree
"$check" "$dir/tree"
expect_caught worker/main.cc '#include "cli/commands.h"' \
  'worker/main.cc:4: worker includes "cli/commands.h" (cli, a higher layer)'
expect_caught common/flags.cc '#include "security/tls.h"' \
  'common/flags.cc:2: common/ includes "security/tls.h" (security/), a room beside it'
expect_caught common/flags.cc '#include "observability/prometheus.h"' \
  'common/flags.cc:2: common/ includes "observability/prometheus.h" (observability/)'
expect_caught security/tls.cc '#include "observability/prometheus.h"' \
  'security/tls.cc:3: security/ includes "observability/prometheus.h" (observability/)'
expect_caught observability/metrics_http.cc '#include "security/secret.h"' \
  'observability/metrics_http.cc:3: observability/ includes "security/secret.h" (security/)'
expect_caught security/tls.cc '#include "worker/main.h"' \
  'security/tls.cc:3: security includes "worker/main.h" (worker, a higher layer)'
expect_caught cli/framework/command_env.h \
  '#include "cli/control/command_common.h"' \
  'cli/framework/command_env.h:2: cli/framework includes "cli/control/command_common.h" (cli/control), a room it may not use (it may use: none)'
expect_caught cli/framework/command_env.h '#include "cli/commands.h"' \
  'cli/framework includes "cli/commands.h" (cli/*)'
expect_caught cli/bench/bench_command.cc '#include "cli/control/format.h"' \
  'cli/bench includes "cli/control/format.h" (cli/control), a room it may not use (it may use: framework)'
expect_caught cli/control/job_commands.cc '#include "cli/lab/lab_up.h"' \
  'cli/control includes "cli/lab/lab_up.h" (cli/lab)'
expect_caught cli/plan/sim_flags.cc '#include "cli/bench/sizes.h"' \
  'cli/plan includes "cli/bench/sizes.h" (cli/bench)'
echo "layering-check-test-ok"

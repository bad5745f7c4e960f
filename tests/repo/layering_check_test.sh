#!/usr/bin/env bash
# scripts/check_layering.sh against small trees made here: each breaks one
# rule (a lower layer including a higher one; the study including anything
# but common/; the CLI framework including a room of commands; a room
# including one it may not use) and must fail
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
  mkdir -p "$dir/tree"/{cli/bench,cli/plan,study/alpha_beta,jobspec}
  cd "$dir/tree"
  echo '#include "common/status_macros.h"' >study/alpha_beta/sync_model.cc
  echo '#include "study/alpha_beta/sync_model.h"' >jobspec/sync_model_inputs.h
  echo '#include "common/flags.h"' >cli/framework/command_env.h
  echo '#include "cli/framework/command_env.h"' >cli/control/job_commands.cc
  echo '#include "cli/control/local_cluster.h"' >cli/lab/lab_up.cc
  echo '#include "cli/framework/format.h"' >cli/lab/lab_report.cc
  echo '#include "cli/framework/plot_script.h"' >cli/bench/bench_command.cc
  echo '#include "cli/lab/lab_config.h"' >cli/plan/sim_flags.cc
  echo '#include "cli/bench/bench_command.h"' >cli/commands.cc
  echo '#include "common/flags.h"' >worker/main.cc
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
  'worker/main.cc:2: worker includes "cli/commands.h" (cli, a higher layer)'
expect_caught study/alpha_beta/sync_model.cc '#include "proto/job.pb.h"' \
  'study/alpha_beta/sync_model.cc:2: study/ includes "proto/job.pb.h"; the study sees only common/ and absl'
expect_caught study/alpha_beta/sync_model.cc '#include "jobspec/job_spec.h"' \
  'study/ includes "jobspec/job_spec.h"; the study sees only common/'
expect_caught study/alpha_beta/sync_model.cc \
  '#include "collectives/types.h"' \
  'study/ includes "collectives/types.h"; the study sees only common/'
expect_caught study/alpha_beta/sync_model.cc '#include <grpcpp/grpcpp.h>' \
  'study/ includes the gRPC header <grpcpp/grpcpp.h>'
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

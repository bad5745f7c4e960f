#!/usr/bin/env bash
# scripts/check_layering.sh against small trees made here: each breaks one
# rule (a lower layer including a higher one; common/ including security/
# or observability/, or those two including each other; the study
# including anything but common/; the CLI framework including a room of commands; a room
# including one it may not use; a collectives transport including an
# algorithm, or the other way round; the same for the parameter server's
# rooms, and a file outside them; a model kind's spec part leaving the job
# spec's room) and must fail naming the file, line and include; the same
# tree with the rooms' allowed
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
  mkdir -p "$dir/tree"/{cli/bench,cli/plan,study/alpha_beta,jobspec,models/mlp}
  mkdir -p "$dir/tree"/{security,observability}
  mkdir -p "$dir/tree"/collectives/{transports/tcp,algorithms,tcp,nccl}
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
  echo '#include "security/tls.h"' >>worker/main.cc
  echo '#include "observability/metrics_http.h"' >>worker/main.cc
  echo '#include "common/flags.h"' >security/tls.cc
  echo '#include "security/tls_dir.h"' >>security/tls.cc
  echo '#include "common/flags.h"' >observability/metrics_http.cc
  echo '#include "observability/prometheus.h"' >>observability/metrics_http.cc
  echo '#include "common/units.h"' >common/flags.cc
  # A model kind: its spec part in the job spec's room, its builder on
  # the worker's floor.
  echo '#include "models/mlp/mlp_spec.h"' >jobspec/job_spec.cc
  echo '#include "jobspec/job_spec.h"' >models/mlp/mlp_spec.cc
  echo '#include "worker/train/train_model.h"' >models/mlp/mlp_builder.cc
  echo '#include "models/mlp/mlp_builder.h"' >models/model_builders.cc
  echo '#include "common/status.h"' >collectives/pair.h
  echo '#include "collectives/pair.h"' >collectives/transports/tcp/socket.h
  echo '#include "collectives/pair.h"' >collectives/algorithms/ring.h
  printf '%s\n' '#include "collectives/algorithms/ring.h"' \
    '#include "collectives/transports/tcp/socket.h"' \
    >collectives/tcp/tcp_communicator.cc
  echo '#include "collectives/communicator.h"' >collectives/nccl/nccl.cc
  mkdir -p server/ps/{shard,transport,client,daemon,bench}
  echo '#include "common/flags.h"' >server/ps/shard/ps_shard.h
  echo '#include "proto/ps.pb.h"' >server/ps/transport/tensor_stream.h
  echo '#include "server/ps/transport/tensor_stream.h"' \
    >server/ps/client/ps_step.h
  echo '#include "server/ps/shard/ps_shard.h"' >server/ps/daemon/ps_service.h
  echo '#include "server/ps/transport/tensor_stream.h"' \
    >>server/ps/daemon/ps_service.h
  echo '#include "server/ps/client/ps_step.h"' >server/ps/bench/bench_roles.cc
  echo '#include "server/ps/daemon/ps_service.h"' \
    >>server/ps/bench/bench_roles.cc
  echo '#include "server/ps/client/ps_step.h"' >worker/ps_sync.h
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
expect_caught models/mlp/mlp_spec.cc '#include "worker/train/train_model.h"' \
  "models/mlp/mlp_spec.cc:2: a model kind's spec part includes \"worker/train/train_model.h\""
expect_caught models/mlp/mlp_spec.cc '#include "server/ps/shard/ps_shard.h"' \
  "models/mlp/mlp_spec.cc:2: a model kind's spec part includes \"server/ps/shard/ps_shard.h\""
expect_caught jobspec/job_spec.cc '#include "models/mlp/mlp_builder.h"' \
  'jobspec/job_spec.cc:2: jobspec/ includes "models/mlp/mlp_builder.h"'
expect_caught collectives/transports/tcp/socket.h \
  '#include "collectives/algorithms/ring.h"' \
  'collectives/transports/tcp/socket.h:2: collectives/transports includes "collectives/algorithms/ring.h" (collectives/algorithms), a room it may not use (it may use: root)'
expect_caught collectives/algorithms/ring.h \
  '#include "collectives/transports/tcp/wire.h"' \
  'collectives/algorithms includes "collectives/transports/tcp/wire.h" (collectives/transports)'
expect_caught collectives/algorithms/ring.h \
  '#include "collectives/tcp/tcp_communicator.h"' \
  'collectives/algorithms includes "collectives/tcp/tcp_communicator.h" (collectives/tcp)'
expect_caught collectives/pair.h '#include "collectives/tcp/socket.h"' \
  'collectives/* includes "collectives/tcp/socket.h" (collectives/tcp), a room it may not use (it may use: none)'
expect_caught collectives/nccl/nccl.cc \
  '#include "collectives/tcp/tcp_communicator.h"' \
  'collectives/nccl includes "collectives/tcp/tcp_communicator.h" (collectives/tcp)'
expect_caught server/ps/shard/ps_shard.h \
  '#include "server/ps/transport/tensor_codec.h"' \
  'server/ps/shard/ps_shard.h:2: server/ps/shard includes "server/ps/transport/tensor_codec.h" (server/ps/transport), a room it may not use (it may use: none)'
expect_caught server/ps/transport/tensor_stream.h \
  '#include "server/ps/client/ps_client.h"' \
  'server/ps/transport includes "server/ps/client/ps_client.h" (server/ps/client)'
expect_caught server/ps/client/ps_step.h \
  '#include "server/ps/daemon/ps_service.h"' \
  'server/ps/client includes "server/ps/daemon/ps_service.h" (server/ps/daemon), a room it may not use (it may use: transport)'
expect_caught server/ps/daemon/ps_service.h \
  '#include "server/ps/client/ps_step.h"' \
  'server/ps/daemon includes "server/ps/client/ps_step.h" (server/ps/client)'
expect_caught server/ps/ps_client.h '#include "common/flags.h"' \
  'server/ps/ps_client.h sits at server/ps/, outside its rooms'
echo "layering-check-test-ok"

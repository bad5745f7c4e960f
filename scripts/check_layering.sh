#!/usr/bin/env bash
# The layering rule, checked over every C++/CUDA source under ROOT (default:
# the repository this script sits in):
#
#   common · security · observability -> collectives -> study
#          -> server/{store,coordinator,ps} -> worker -> cli
#
# (python/, the C API under the Python package, shares the cli floor)
# with the tests above all. study/ (what the project studies, as plain
# functions: the alpha-beta model and its fits, the sync bandwidth, the
# model profiles, the explanation's logic, the sweep analysis, the auto
# mode's policy, the step simulator) sits between collectives and the
# servers, so that jobspec/, the servers, the workers and the CLI may use
# it; it sees only common/ (and absl), never collectives/, proto/,
# jobspec/, server/ or a <grpc...> header: the study is arithmetic on
# numbers, not on the wire. A file may include its own layer and the layers
# to its left, never one to its right; the three server rooms share a floor.
# The generated protos (proto/) count as the server floor: the wire starts
# there. jobspec/, what a spec means (its defaults, checks, JSON and
# names), shares it, so that the coordinator, the workers and the CLI read
# a spec one way; but it is the room below the servers, not one of them:
# it includes only common/, collectives/ (data types, all-reduce
# algorithms), study/ (the alpha-beta model its inputs feed, the auto
# mode's settings), proto/ and itself, never server/. collectives/
# also stays free of gRPC (it sees the rendezvous only through Store), so
# it includes no <grpc...> header.
#
# The bottom floor holds three rooms: common/ (the foundations: status,
# units, flags, threads, JSON, hosts, gRPC helpers), security/ (secrets,
# certificates, TLS, refused handshakes, path roots) and observability/
# (Prometheus, /metrics, the health port). security/ and observability/
# each include common/ and themselves, not each other (nothing needs it);
# common/ includes neither; every floor above may include all three.
#
# models/ holds the model kinds, a folder each (models/model_kind_spec.h):
# a kind's spec part (models/model_kinds.*, models/model_kind_spec.h and
# models/<kind>/<kind>_spec.*, compiled into gradsync_jobspec) is in the
# job spec's room, with its rules; the rest of models/ (the builders, on
# worker/train/'s interfaces) shares the worker floor.
#
# Inside the cli floor, rooms (a room includes itself and those listed):
#
#   cli/framework  commands, flags, CommandEnv, output formats: no room
#   cli/bench      framework
#   cli/control    framework
#   cli/lab        framework, control (it runs a cluster of its own)
#   cli/plan       framework, lab (its link-rate parser)
#   cli/*.{h,cc}   every room (the table of commands, main)
#
# so the framework never reaches into a command's room, and a room reaches
# another only where the table says.
#
# Inside the collectives floor, rooms (as Gloo puts its allreduce_*
# algorithms above transport/; a room includes itself and those listed):
#
#   collectives/*.{h,cc}     the root: Communicator, Store, Pair, types,
#                            the all-reduce algorithm's names and choice:
#                            no room
#   collectives/transports   root (tcp/ and shm/: Pairs, rendezvous, wire)
#   collectives/algorithms   root (ring, halving-doubling over Pairs;
#                            hierarchical over Communicators)
#   collectives/tcp          root, transports, algorithms (the TCP backend:
#                            where a transport meets the algorithms)
#   collectives/nccl         root (the NCCL backend, beside tcp/)
#
# so no transport knows an algorithm, no algorithm knows a transport, and
# only a backend puts them together.
#
# Inside server/ps, rooms the same way, one library each:
#
#   server/ps/shard      the shard and its update rules: no room
#   server/ps/transport  gRPC tensor streams, the tensor plane, codecs: no room
#   server/ps/client     PsClient, PsStep, the admin client: transport
#   server/ps/daemon     the service, its server, registration, metrics,
#                        gradsync-ps: shard, transport
#   server/ps/bench      gradsync-ps-bench: shard, transport, client, daemon
#
# so the shard logic stays free of the wire, the client never links the
# server, and no file sits at server/ps/ outside a room.
#
# Usage: scripts/check_layering.sh [ROOT]
# Prints each offending include as "file:line: ..." and exits 1 when there
# is one; prints a one-line summary and exits 0 otherwise.
set -euo pipefail
ROOT=${1:-"$(cd "$(dirname "$0")/.." && pwd)"}
cd "$ROOT"

files=$(for dir in common security observability collectives study jobspec models server worker cli python tests; do
  if [ -d "$dir" ]; then
    find "$dir" -type f \( -name '*.h' -o -name '*.cc' -o -name '*.cu' \
      -o -name '*.cuh' \)
  fi
done | sort)
if [ -z "$files" ]; then
  echo "check_layering: no sources found under $ROOT" >&2
  exit 1
fi

# One pass over every include line: "file:line:#include ...".
# shellcheck disable=SC2086
grep -nE '^[[:space:]]*#[[:space:]]*include[[:space:]]*["<]' $files |
awk -F: -v nfiles="$(wc -l <<<"$files")" '
  # The floor of a path relative to the root, or -1 when it is outside
  # the layered tree (absl/, gtest/, system headers, ...).
  function floor_of(path) {
    if (path ~ /^(common|security|observability)\//) return 0
    if (path ~ /^collectives\//) return 1
    if (path ~ /^study\//) return 2
    if (path ~ /^(proto|jobspec|server\/store|server\/coordinator|server\/ps)\//)
      return 3
    if (spec_room(path)) return 3
    if (path ~ /^(worker|models)\//) return 4
    if (path ~ /^(cli|python)\//) return 5
    if (path ~ /^tests\//) return 6
    return -1
  }
  # True for the job spec'"'"'s room: jobspec/ and the model kinds'"'"' spec
  # parts (models/model_kind_spec.h, models/model_kinds.*,
  # models/<kind>/<kind>_spec.*), which gradsync_jobspec compiles.
  function spec_room(path) {
    return path ~ /^jobspec\// ||
      path ~ /^models\/model_kinds?(_spec)?\.(h|cc)$/ ||
      path ~ /^models\/[^\/]+\/[^\/]+_spec\.(h|cc)$/
  }
  # The room of a path on the bottom floor: common, security or
  # observability; "" elsewhere.
  function bottom_room(path,    parts) {
    if (path !~ /^(common|security|observability)\//) return ""
    split(path, parts, "/")
    return parts[1]
  }
  # The room of a path under cli/: framework, bench, control, lab or plan;
  # "top" for cli/*.{h,cc}; "" outside cli/ (or in a folder not listed).
  function cli_room(path,    parts) {
    if (path !~ /^cli\//) return ""
    if (split(path, parts, "/") == 2) return "top"
    return (parts[2] in uses) ? parts[2] : ""
  }
  # The room of a path under server/ps/: shard, transport, client, daemon
  # or bench; "top" for server/ps/*.{h,cc}; "" elsewhere (or in a folder
  # not listed).
  function ps_room(path,    parts) {
    if (path !~ /^server\/ps\//) return ""
    if (split(path, parts, "/") == 3) return "top"
    return (parts[3] in ps_uses) ? parts[3] : ""
  }
  # The room of a path under collectives/: root, transports, algorithms,
  # tcp or nccl; "" outside collectives/ (or in a folder not listed).
  function coll_room(path,    parts) {
    if (path !~ /^collectives\//) return ""
    if (split(path, parts, "/") == 2) return "root"
    return (parts[2] in coll_uses) ? parts[2] : ""
  }
  BEGIN {
    split("common collectives study server worker cli tests", names, " ")
    # coll_uses[ROOM]: the collectives rooms it may include besides itself.
    coll_uses["root"] = ""
    coll_uses["transports"] = "root"
    coll_uses["algorithms"] = "root"
    coll_uses["tcp"] = "root transports algorithms"
    coll_uses["nccl"] = "root"
    # ps_uses[ROOM]: the server/ps rooms it may include besides itself.
    ps_uses["shard"] = ""
    ps_uses["transport"] = ""
    ps_uses["client"] = "transport"
    ps_uses["daemon"] = "shard transport"
    ps_uses["bench"] = "shard transport client daemon"
    # uses[ROOM]: the rooms it may include besides itself.
    uses["framework"] = ""
    uses["bench"] = "framework"
    uses["control"] = "framework"
    uses["lab"] = "framework control"
    uses["plan"] = "framework lab"
    violations = 0
    includes = 0
  }
  {
    file = $1
    line = $2
    text = $0
    sub(/^[^:]*:[^:]*:/, "", text)
    target = text
    sub(/^[[:space:]]*#[[:space:]]*include[[:space:]]*["<]/, "", target)
    sub(/[">].*$/, "", target)
    includes++
    from = floor_of(file)
    if (from < 0) next
    if (from == 1 && target ~ /^grpc/) {
      printf "%s:%s: collectives/ includes the gRPC header <%s>; collectives sees the rendezvous only through Store\n", file, line, target
      violations++
      next
    }
    if (from == 2 && target ~ /^grpc/) {
      printf "%s:%s: study/ includes the gRPC header <%s>; the study sees only common/ and absl\n", file, line, target
      violations++
      next
    }
    to = floor_of(target)
    if (from == 2 && to >= 0 && target !~ /^(common|study)\//) {
      printf "%s:%s: study/ includes \"%s\"; the study sees only common/ and absl (jobspec/, the servers, workers and CLI include it, not the other way round)\n", file, line, target
      violations++
      next
    }
    if (spec_room(file) && to >= 0 && !spec_room(target) &&
        target !~ /^(common|collectives|study|proto)\//) {
      printf "%s:%s: %s includes \"%s\"; the job spec'"'"'s room (jobspec/ and the model kinds'"'"' spec parts) sees only common/, collectives/, study/, proto/ and itself (the servers, workers and CLI include it, not the other way round)\n", file, line, (file ~ /^jobspec\// ? "jobspec/" : "a model kind'"'"'s spec part"), target
      violations++
      next
    }
    if (to > from) {
      printf "%s:%s: %s includes \"%s\" (%s, a higher layer); move the shared code down to the lower layer (common/ for what several rooms need)\n", file, line, (from == 0 ? bottom_room(file) : names[from + 1]), target, names[to + 1]
      violations++
      next
    }
    below = bottom_room(file)
    under = bottom_room(target)
    if (below != "" && under != "" && under != below && under != "common") {
      printf "%s:%s: %s/ includes \"%s\" (%s/), a room beside it; common/ includes neither security/ nor observability/, and those two include only common/ and themselves\n", file, line, below, target, under
      violations++
      next
    }
    room = coll_room(file)
    into = coll_room(target)
    if (room != "" && into != "" && into != room &&
        index(" " coll_uses[room] " ", " " into " ") == 0) {
      printf "%s:%s: collectives/%s includes \"%s\" (collectives/%s), a room it may not use (it may use: %s); transports and algorithms meet only in a backend (collectives/tcp)\n", file, line, (room == "root" ? "*" : room), target, (into == "root" ? "*" : into), (coll_uses[room] == "" ? "none" : coll_uses[room])
      violations++
      next
    }
    ps_from = ps_room(file)
    ps_into = ps_room(target)
    if (ps_from == "top") {
      printf "%s:%s: %s sits at server/ps/, outside its rooms; put it in the room of its library (shard, transport, client, daemon or bench)\n", file, line, file
      violations++
      next
    }
    if (ps_from != "" && ps_into != "" && ps_into != ps_from &&
        index(" " ps_uses[ps_from] " ", " " ps_into " ") == 0) {
      printf "%s:%s: server/ps/%s includes \"%s\" (server/ps/%s), a room it may not use (it may use: %s); what both ends of the wire share goes into server/ps/transport\n", file, line, ps_from, target, (ps_into == "top" ? "*" : ps_into), (ps_uses[ps_from] == "" ? "none" : ps_uses[ps_from])
      violations++
      next
    }
    room = cli_room(file)
    into = cli_room(target)
    if (room != "" && room != "top" && into != "" && into != room &&
        index(" " uses[room] " ", " " into " ") == 0) {
      printf "%s:%s: cli/%s includes \"%s\" (cli/%s), a room it may not use (it may use: %s); what several rooms need goes into cli/framework\n", file, line, room, target, (into == "top" ? "*" : into), (uses[room] == "" ? "none" : uses[room])
      violations++
    }
  }
  END {
    if (violations > 0) {
      printf "check_layering: %d include(s) break the layering common (security, observability) -> collectives -> study -> server -> worker -> cli -> tests, the collectives rooms (the root beneath transports and algorithms, both beneath the tcp backend), the server/ps rooms (shard and transport beneath client and daemon) or the cli rooms (cli/framework beneath bench, control, lab and plan)\n", violations
      exit 1
    }
    printf "check_layering: %d files, %d includes, layering holds\n", nfiles, includes
  }'

#!/usr/bin/env bash
# The layering rule, checked over every C++/CUDA source under ROOT (default:
# the repository this script sits in):
#
#   common · security · observability -> collectives -> study
#          -> server/{store,coordinator,ps} -> worker -> cli
#
# (python/, the C API under the Python package, shares the cli floor)
# with the tests above all. study/ (the alpha-beta model's successors: the
# step simulator) sits between collectives and the servers, so that the
# servers, the workers and the CLI may use it and it sees only what is
# below (in practice common/). A file may include its own layer and the layers
# to its left, never one to its right; the three server rooms share a floor.
# The generated protos (proto/) count as the server floor: the wire starts
# there. jobspec/, what a spec means (its defaults, checks, JSON and
# names), shares it, so that the coordinator, the workers and the CLI read
# a spec one way; but it is the room below the servers, not one of them:
# it includes only common/, collectives/ (data types, all-reduce
# algorithms), proto/ and itself, never server/ or study/. collectives/
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
# Usage: scripts/check_layering.sh [ROOT]
# Prints each offending include as "file:line: ..." and exits 1 when there
# is one; prints a one-line summary and exits 0 otherwise.
set -euo pipefail
ROOT=${1:-"$(cd "$(dirname "$0")/.." && pwd)"}
cd "$ROOT"

files=$(for dir in common security observability collectives study jobspec server worker cli python tests; do
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
    if (path ~ /^worker\//) return 4
    if (path ~ /^(cli|python)\//) return 5
    if (path ~ /^tests\//) return 6
    return -1
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
  BEGIN {
    split("common collectives study server worker cli tests", names, " ")
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
    to = floor_of(target)
    if (file ~ /^jobspec\// && to >= 0 &&
        target !~ /^(common|collectives|proto|jobspec)\//) {
      printf "%s:%s: jobspec/ includes \"%s\"; jobspec sees only common/, collectives/ and proto/ (the servers, workers and CLI include it, not the other way round)\n", file, line, target
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
      printf "check_layering: %d include(s) break the layering common (security, observability) -> collectives -> study -> server -> worker -> cli -> tests, or the cli rooms (cli/framework beneath bench, control, lab and plan)\n", violations
      exit 1
    }
    printf "check_layering: %d files, %d includes, layering holds\n", nfiles, includes
  }'

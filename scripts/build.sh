#!/usr/bin/env bash
# Configures and builds gradsync into build/ (CUDA/NCCL parts when found).
# Prints nothing on success; the compiler's output on failure.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${BUILD_DIR:-build}
if [ ! -f "$BUILD_DIR/build.ninja" ]; then
  if ! out=$(cmake -S . -B "$BUILD_DIR" -G Ninja \
               -DCMAKE_BUILD_TYPE=RelWithDebInfo 2>&1); then
    echo "$out"
    exit 1
  fi
fi
if ! out=$(cmake --build "$BUILD_DIR" -j "$(nproc)" 2>&1); then
  echo "$out" | grep -vE '^\[[0-9]+/[0-9]+\] ' | tail -n 80
  exit 1
fi

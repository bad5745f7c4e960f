#!/usr/bin/env bash
# The test command: installs what is missing, builds, runs every test.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install_deps.sh
scripts/build.sh
cd "${BUILD_DIR:-build}"
# install_deps.sh installed dataset-fashion-mnist: the tests that need it
# fail rather than skip if it is missing (tests/util/fashion_mnist.h).
export GRADSYNC_REQUIRE_FASHION_MNIST=1
# The same for the checking tools it installs (promtool, yamllint,
# systemd-analyze): a test fails, not skips, without them.
export GRADSYNC_REQUIRE_TOOLS=1
ctest --output-on-failure --timeout 300 -j 2 "$@"

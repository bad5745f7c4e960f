#!/usr/bin/env bash
# Writes gradsync's man pages into OUT_DIR with help2man, from the binary's
# own help: gradsync.1 from `gradsync --help`, and gradsync-COMMAND.1 from
# `gradsync COMMAND --help` for every command `gradsync --help` lists (its
# summary becomes the page's NAME line). Run by the build (cli/
# CMakeLists.txt); by hand:
#   scripts/make_man_pages.sh build/cli/gradsync /tmp/man 0.1.0
set -euo pipefail

if [ $# -ne 3 ]; then
  echo "usage: $0 GRADSYNC_BINARY OUT_DIR VERSION" >&2
  exit 2
fi
binary=$1
out=$2
version=$3
help2man=${HELP2MAN:-help2man}

# Wide enough that no summary wraps (help wraps to $COLUMNS off a terminal).
export COLUMNS=500
mkdir -p "$out"
# help2man reads "Usage: PROG ..." and its "  or: PROG ..." lines as the
# SYNOPSIS; gradsync prints "usage:" with the other forms aligned under
# the program name. help2man runs the help option through the shell, so a
# sed after it gives the text the shape help2man reads.
shape="sed -e 's/^usage:/Usage:/' -e 's/^       gradsync /  or:  gradsync /'"
"$help2man" --no-info --no-discard-stderr --version-string="$version" \
  --help-option="--help | $shape" \
  --name="distributed data-parallel training: jobs, clusters, benchmarks" \
  --output="$out/gradsync.1" "$binary"

# The commands: the lines between "commands:" and the next blank line that
# start a row (a summary's wrapped lines are indented further; stderr off
# the terminal, so that nothing wraps to its width).
"$binary" --help 2>/dev/null |
  awk '/^commands:/{on=1; next} on && /^$/{exit} on && /^  [a-z]/' |
  while read -r command summary; do
    page="$out/gradsync-$command.1"
    "$help2man" --no-info --no-discard-stderr --version-string="$version" \
      --help-option="$command --help | $shape" --name="$summary" \
      --output="$page" "$binary"
    # help2man names the page after the binary: make it gradsync-COMMAND,
    # in the title and on the NAME line (as git's pages are named).
    upper=$(echo "gradsync-$command" | tr '[:lower:]' '[:upper:]')
    sed -i -e "s/^\.TH GRADSYNC /.TH $upper /" \
      -e "s/^gradsync \\\\- /gradsync-$command \\\\- /" "$page"
  done

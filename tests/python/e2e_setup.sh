# Sourced by the torch end-to-end tests (torch_*_e2e.sh) after they set
# `gradsync` and `src`: skips (exit 77) without Debian's torch, makes
# $dir (removed at exit, with its local cluster and any process left in
# $dir/work) and $work holding ddp_check.py. $name: the temp dir's name.
py=/usr/bin/python3
if ! $py -c "import torch" 2>/dev/null; then
  echo "SKIP: Debian's python3-torch is not installed"
  exit 77
fi
dir=$(mktemp -d "${TMPDIR:-/tmp}/$name.XXXXXX")
cleanup() {
  "$gradsync" local down --run-dir "$dir" >/dev/null 2>&1 || true
  pkill -KILL -f "$dir/work" 2>/dev/null || true
  rm -rf "$dir"
}
trap cleanup EXIT
work=$dir/work
mkdir -p "$work"
cp "$src/tests/python/ddp_check.py" "$work/"

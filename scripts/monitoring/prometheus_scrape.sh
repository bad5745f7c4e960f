#!/usr/bin/env bash
# A real Prometheus scraping a real gradsync cluster (docs/monitoring.md):
# starts a coordinator, a parameter server and a worker with
# --metrics-listen on 127.0.0.1, runs a short job that switches from the
# ring to the PS, lets Prometheus (Debian's 2.42, taken out of its package
# without installing it, as scripts/install_deps.sh does for promtool)
# scrape all three every second, and then asks Prometheus's HTTP API that
# every target is up and that each daemon's series arrived. Cleans up every
# process and file, even on failure.
#
#   scripts/monitoring/prometheus_scrape.sh [BUILD_DIR]    (default: build)
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
build="${1:-$root/build}"
dir=$(mktemp -d "${TMPDIR:-/tmp}/gradsync-prom.XXXXXX")
pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$dir"
}
trap cleanup EXIT
fail() { echo "prometheus_scrape: $*" >&2; exit 1; }

prometheus="${PROMETHEUS:-$(command -v prometheus || true)}"
if [ -z "$prometheus" ]; then
  chmod 755 "$dir"  # apt-get download runs as _apt
  (cd "$dir" && apt-get download -qq prometheus >/dev/null 2>&1) ||
    fail "cannot download Debian's prometheus package (apt-get download prometheus)"
  dpkg-deb -x "$dir"/prometheus_*.deb "$dir/pkg"
  prometheus="$dir/pkg/usr/bin/prometheus"
fi
"$prometheus" --version 2>&1 | head -1

free_port() {
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}
coord_port=$(free_port); m_coord=$(free_port); m_ps=$(free_port)
m_worker=$(free_port); prom_port=$(free_port)
coordinator="127.0.0.1:$coord_port"

"$build/server/coordinator/gradsync-coordinator" --insecure \
  --listen "$coordinator" --metrics-listen "127.0.0.1:$m_coord" \
  >"$dir/coordinator.log" 2>&1 &
pids+=($!)
sleep 1
"$build/server/ps/gradsync-ps" --insecure --listen 127.0.0.1:0 \
  --coordinator "$coordinator" --metrics-listen "127.0.0.1:$m_ps" \
  >"$dir/ps.log" 2>&1 &
pids+=($!)
"$build/worker/gradsync-worker" --insecure --coordinator "$coordinator" \
  --devices cpu:2 --metrics-listen "127.0.0.1:$m_worker" \
  >"$dir/worker.log" 2>&1 &
pids+=($!)

cat >"$dir/prometheus.yml" <<EOF
global:
  scrape_interval: 1s
  scrape_timeout: 1s
scrape_configs:
  - job_name: gradsync
    static_configs:
      - targets: ["127.0.0.1:$m_coord", "127.0.0.1:$m_ps", "127.0.0.1:$m_worker"]
EOF
"$prometheus" --config.file="$dir/prometheus.yml" \
  --storage.tsdb.path="$dir/tsdb" --web.listen-address="127.0.0.1:$prom_port" \
  >"$dir/prometheus.log" 2>&1 &
pids+=($!)

gradsync="$build/cli/gradsync"
export GRADSYNC_COORDINATOR=$coordinator
for _ in $(seq 50); do
  "$gradsync" workers --insecure 2>/dev/null | grep -q "cpu:1" && break
  sleep 0.2
done
job=$("$gradsync" submit --insecure --workers 2 --model synthetic \
      --synthetic-floats 1M --steps 400 --ps-shards 1 --switch-at 200:ps -o json |
      sed -n 's/.*"jobId":"\([^"]*\)".*/\1/p')
[ -n "$job" ] || fail "submit printed no job id"
"$gradsync" watch --insecure "$job" >/dev/null
sleep 3  # three more scrapes after the end

query() {
  curl -sf --get "http://127.0.0.1:$prom_port/api/v1/query" \
    --data-urlencode "query=$1"
}
up=$(query 'up{job="gradsync"}')
echo "up: $up"
[ "$(echo "$up" | python3 -c 'import json,sys; r=json.load(sys.stdin)["data"]["result"]; print(sum(1 for x in r if x["value"][1] == "1"))')" = 3 ] ||
  fail "not every target is up: $up"
# Over the last five minutes: a job's series end with the job (its shards
# are released), and Prometheus marks them stale at once.
for series in gradsync_build_info gradsync_coordinator_jobs \
              gradsync_job_step gradsync_ps_received_bytes_total \
              gradsync_worker_steps_total gradsync_worker_allreduce_seconds_bucket; do
  n=$(query "count(count_over_time(${series}[5m]))" |
      python3 -c 'import json,sys; r=json.load(sys.stdin)["data"]["result"]; print(r[0]["value"][1] if r else 0)')
  echo "$series: $n series"
  [ "$n" != 0 ] || fail "Prometheus holds no $series series"
done
echo "prometheus-scrape-ok: job $job scraped from 3 daemons"

#!/usr/bin/env bash
# Stop the one-node Slurm cluster that scripts/slurm-up.sh started: slurmd, slurmctld, munged
# (SIGTERM, then wait for them to exit). Jobs still queued or running are dropped (their
# cells stay missing in dyad's cache; a resubmission computes them). Idempotent. Needs root
# (or sudo).
set -euo pipefail
SUDO=""
if [ "$(id -u)" != 0 ]; then SUDO="sudo"; fi
for d in slurmd slurmctld munged; do
  if pgrep -x "$d" >/dev/null; then
    $SUDO pkill -TERM -x "$d" || true
    for _ in $(seq 1 30); do
      pgrep -x "$d" >/dev/null || break
      sleep 0.5
    done
    if pgrep -x "$d" >/dev/null; then
      echo "slurm-down: $d did not stop within 15 s" >&2
      exit 1
    fi
    echo "slurm-down: $d stopped"
  fi
done

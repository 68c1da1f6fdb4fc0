#!/usr/bin/env bash
# A real single-node Slurm cluster on this machine (Debian's slurmctld + slurmd 22.05 with
# munge), for `dyad reproduce --executor slurm` and its test. Idempotent: installs what is
# missing (apt), writes /etc/slurm/slurm.conf for this host (all its CPUs and memory), starts
# munged, slurmctld and slurmd without systemd, and waits until the node is idle.
# Needs root (or sudo). `scripts/slurm-down.sh` stops the daemons. A controller it starts begins
# with an empty queue (see below).
set -euo pipefail
SUDO=""
if [ "$(id -u)" != 0 ]; then SUDO="sudo"; fi

need=()
for b in slurmctld:slurmctld slurmd:slurmd munged:munge sbatch:slurm-client; do
  command -v "${b%%:*}" >/dev/null 2>&1 || [ -x "/usr/sbin/${b%%:*}" ] || need+=("${b##*:}")
done
if [ ${#need[@]} -gt 0 ]; then
  echo "slurm-up: installing ${need[*]}"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${need[@]}" >/dev/null
fi

host=$(hostname -s)
cpus=$(nproc --all)
mem_mb=$(( $(awk '/MemTotal/ {print $2}' /proc/meminfo) / 1024 - 1024 ))
state=/var/spool/slurmctld
spool=/var/spool/slurmd
$SUDO mkdir -p /etc/slurm "$state" "$spool" /var/log/slurm /run/munge /var/lib/munge /var/log/munge
if [ ! -s /etc/munge/munge.key ]; then
  $SUDO mungekey --create --keyfile /etc/munge/munge.key 2>/dev/null ||
    $SUDO dd if=/dev/urandom of=/etc/munge/munge.key bs=1024 count=1 status=none
fi
$SUDO chown -R munge:munge /etc/munge /run/munge /var/lib/munge /var/log/munge
$SUDO chmod 0700 /etc/munge /var/lib/munge /var/log/munge
$SUDO chmod 0400 /etc/munge/munge.key
$SUDO chmod 0755 /run/munge

old_conf=$(cat /etc/slurm/slurm.conf 2>/dev/null || true)
$SUDO tee /etc/slurm/slurm.conf >/dev/null <<CONF
# Written by dyad's scripts/slurm-up.sh: one node, this machine.
ClusterName=dyad
SlurmctldHost=${host}
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
StateSaveLocation=${state}
SlurmdSpoolDir=${spool}
SlurmctldPidFile=/run/slurmctld.pid
SlurmdPidFile=/run/slurmd.pid
SlurmctldLogFile=/var/log/slurm/slurmctld.log
SlurmdLogFile=/var/log/slurm/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
ReturnToService=2
MpiDefault=none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
# Start a batch job (an array task) as soon as a CPU frees: the default batch_sched_delay of
# 3 s left a CPU idle ~2 s between short cell tasks (28 s for 20 tasks of 0.2 s at %2; 9.5 s
# with 0).
SchedulerParameters=batch_sched_delay=0
MinJobAge=300
KillWait=5
SlurmctldTimeout=30
SlurmdTimeout=30
InactiveLimit=0
Waittime=0
NodeName=${host} CPUs=${cpus} RealMemory=${mem_mb} State=UNKNOWN
PartitionName=main Nodes=${host} Default=YES MaxTime=INFINITE State=UP
CONF
# No cgroup confinement (containers often lack a writable cgroup tree): linuxproc tracks
# processes, task/none binds nothing.
$SUDO rm -f /etc/slurm/cgroup.conf

as_munge() {
  if [ -n "$SUDO" ]; then sudo -u munge "$@"; else runuser -u munge -- "$@"; fi
}
if [ ! -S /run/munge/munge.socket.2 ] || ! pgrep -x munged >/dev/null; then
  as_munge /usr/sbin/munged
fi
if pgrep -x slurmctld >/dev/null; then
  # Running daemons read a changed configuration on `scontrol reconfigure`.
  [ "$old_conf" = "$(cat /etc/slurm/slurm.conf)" ] || $SUDO scontrol reconfigure
else
  # A controller started afresh forgets the jobs it saved in $state (-c): their processes
  # died with the old daemons, yet slurmctld would recover them as RUNNING and hold the node
  # `allocated` (seen in CI on a machine whose spool survived an interrupted run). Nothing of
  # dyad's is lost: `dyad reproduce --executor slurm` resubmits exactly the missing cells.
  if [ -s "$state/job_state" ]; then
    echo "slurm-up: starting slurmctld with a clean state (jobs of a stopped controller dropped)"
  fi
  $SUDO /usr/sbin/slurmctld -c
fi
pgrep -x slurmd >/dev/null || $SUDO /usr/sbin/slurmd
for _ in $(seq 1 60); do
  if sinfo -h -N -o '%T' 2>/dev/null | grep -qE '^(idle|mixed|allocated)'; then
    squeue -h 2>/dev/null | grep -q . && { echo "slurm-up: jobs already queued:"; squeue; }
    echo "slurm-up: node ${host} up ($(sinfo -h -N -o '%c CPUs, %T'))"
    exit 0
  fi
  scontrol update NodeName="${host}" State=RESUME >/dev/null 2>&1 || true
  sleep 1
done
echo "slurm-up: the node did not come up; see /var/log/slurm/slurmctld.log and slurmd.log" >&2
sinfo -N >&2 || true
exit 1

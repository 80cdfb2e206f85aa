#!/usr/bin/env bash
# A real four-node Slurm on this one machine, for the tests under srun and for trying collbench
# under a scheduler: munge, one slurmctld and four slurmd (nodes n1 to n4, one slurmd each on
# ports 17001 to 17004 of 127.0.0.1), no cgroups (proctrack/linuxproc, task/none). Most tests
# use n1 and n2; bisection needs 3 or more nodes.
#
#   scripts/slurm-local.sh start    # installs nothing; needs root, slurm-wlm and munge
#   scripts/slurm-local.sh status   # sinfo; exit 0 once every node is idle
#   scripts/slurm-local.sh stop     # stops the daemons it started and removes its state
#
# Everything lives under $COLLBENCH_SLURM_DIR (default /tmp/collbench-slurm): slurm.conf, state,
# spool, logs. The node names must resolve (srun and collbench's store reach rank 0 by its node
# name): `start` adds "127.0.0.1 n1 n2 n3 n4" to /etc/hosts with a marker, `stop` removes that
# line.
# SLURM_CONF points the client commands at this cluster: `export SLURM_CONF=$DIR/slurm.conf`.
set -euo pipefail

DIR="${COLLBENCH_SLURM_DIR:-/tmp/collbench-slurm}"
CONF="$DIR/slurm.conf"
NODES=(n1 n2 n3 n4)
PORTS=(17001 17002 17003 17004)
CTLD_PORT=17000
MARK="# collbench-slurm-local"
# CPUs per node as Slurm is told (config_overrides: more tasks than cores, as on any laptop).
CPUS="${COLLBENCH_SLURM_CPUS:-4}"

die() { echo "slurm-local: $*" >&2; exit 2; }

write_conf() {
    mkdir -p "$DIR/state" "$DIR/log"
    for n in "${NODES[@]}"; do mkdir -p "$DIR/spool-$n"; done
    cat > "$CONF" <<EOF
ClusterName=collbench
SlurmctldHost=localhost(127.0.0.1)
SlurmctldPort=$CTLD_PORT
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
StateSaveLocation=$DIR/state
SlurmdSpoolDir=$DIR/spool-%n
SlurmctldPidFile=$DIR/slurmctld.pid
SlurmdPidFile=$DIR/slurmd-%n.pid
SlurmctldLogFile=$DIR/log/slurmctld.log
SlurmdLogFile=$DIR/log/slurmd-%n.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
SchedulerType=sched/builtin
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
SlurmdParameters=config_overrides
MpiDefault=none
ReturnToService=2
KillWait=5
InactiveLimit=0
MinJobAge=30
EOF
    local i
    for i in "${!NODES[@]}"; do
        echo "NodeName=${NODES[$i]} NodeHostname=${NODES[$i]} NodeAddr=127.0.0.1" \
            "Port=${PORTS[$i]} CPUs=$CPUS State=UNKNOWN" >> "$CONF"
    done
    local list
    list="$(IFS=,; echo "${NODES[*]}")"
    echo "PartitionName=local Nodes=$list Default=YES MaxTime=INFINITE State=UP OverSubscribe=YES" \
        >> "$CONF"
}

hosts_add() {
    # A line an older version of this script left (fewer nodes) is replaced.
    hosts_remove
    echo "127.0.0.1 ${NODES[*]} $MARK" >> /etc/hosts
}

hosts_remove() {
    if grep -q "$MARK" /etc/hosts 2>/dev/null; then
        # /etc/hosts may be a bind mount (containers): rewrite it in place, never replace it.
        local kept
        kept="$(grep -v "$MARK" /etc/hosts)"
        printf '%s\n' "$kept" > /etc/hosts
    fi
}

start_munge() {
    if [ -S /run/munge/munge.socket.2 ] && munge -n >/dev/null 2>&1; then return; fi
    mkdir -p /run/munge /var/log/munge /var/lib/munge /etc/munge
    [ -s /etc/munge/munge.key ] || {
        dd if=/dev/urandom of=/etc/munge/munge.key bs=1024 count=1 status=none
        chmod 400 /etc/munge/munge.key
    }
    # munged refuses root unless forced; this cluster's daemons all run as root.
    munged --force
    for _ in $(seq 50); do munge -n >/dev/null 2>&1 && return; sleep 0.1; done
    die "munged did not start"
}

status() {
    SLURM_CONF="$CONF" sinfo -h -N -o '%N %T' 2>/dev/null
}

wait_idle() {
    local i
    for i in $(seq 300); do
        local s
        s="$(status || true)"
        if [ "$(grep -cE ' (idle|mixed|allocated)' <<<"$s")" = "${#NODES[@]}" ]; then return 0; fi
        sleep 0.1
    done
    echo "slurm-local: nodes not idle after 30 s:" >&2
    status >&2 || true
    tail -n 5 "$DIR"/log/*.log >&2 || true
    return 1
}

start() {
    [ "$(id -u)" = 0 ] || die "needs root (slurmd runs tasks as their user)"
    for c in slurmctld slurmd munged sinfo srun; do
        command -v "$c" >/dev/null 2>&1 || die "$c is missing: apt-get install slurm-wlm munge"
    done
    stop_daemons
    write_conf
    hosts_add
    start_munge
    slurmctld -f "$CONF" -i
    # Each slurmd gets its own TmpFS: Slurm's PMIx plugin makes its per-step folders there, and
    # two nodes on one host would otherwise collide ("spmix_appdir_...: File exists").
    for n in "${NODES[@]}"; do
        mkdir -p "$DIR/tmp-$n"
        { cat "$CONF"; echo "TmpFS=$DIR/tmp-$n"; } > "$DIR/slurm-$n.conf"
        slurmd -f "$DIR/slurm-$n.conf" -N "$n"
    done
    wait_idle || die "the cluster did not come up (logs under $DIR/log)"
    echo "slurm-local: nodes ${NODES[*]} up; export SLURM_CONF=$CONF"
}

stop_daemons() {
    local f
    for f in "$DIR"/slurmd-*.pid "$DIR"/slurmctld.pid; do
        [ -f "$f" ] || continue
        kill "$(cat "$f")" 2>/dev/null || true
    done
    # slurmstepd of a task still running, and the daemons, are given a moment to go.
    for _ in $(seq 50); do
        pgrep -f "$DIR/slurm" >/dev/null 2>&1 || break
        sleep 0.1
    done
    pkill -9 -f "$DIR/slurm" 2>/dev/null || true
    rm -f "$DIR"/*.pid
}

stop() {
    stop_daemons
    hosts_remove
    rm -rf "$DIR"
}

case "${1:-}" in
    start) start ;;
    stop) stop ;;
    status) status && wait_idle >/dev/null 2>&1 ;;
    *) die "usage: $0 start|status|stop" ;;
esac

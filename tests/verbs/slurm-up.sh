#!/usr/bin/env bash
# tests/verbs/slurm-up.sh RWDIR - run INSIDE each guest of a pair: a Slurm
# cluster of the two guests (Debian's slurmctld/slurmd 22.05 with munge),
# slurmctld in A (10.99.0.1), slurmd in both, nodes vm-a and vm-b of
# partition "main". Everything lives in the guest's own overlay (/etc/slurm,
# /var/spool, /run), so nothing reaches the host; the munge key is the
# host's /etc/munge/munge.key (the package makes one) or, when there is
# none, one that guest A makes in RWDIR/slurm for both. Returns once both
# nodes are up (exit 0), else prints why and the daemons' logs (exit 1).
set -u
RW=${1:?rw dir}
ME=${IBCR_VM_NAME:?not in a pair guest}
SD=$RW/slurm
mkdir -p "$SD"

die() {
	echo "slurm-up ($ME): $*"
	for f in /var/log/slurm/*.log /var/log/munge/munged.log; do
		[[ -f $f ]] && { echo "---- $f"; tail -n 15 "$f" | sed 's/^/    /'; }
	done
	exit 1
}

grep -q ' vm-b$' /etc/hosts || printf '10.99.0.1 vm-a\n10.99.0.2 vm-b\n' >>/etc/hosts
mkdir -p /etc/slurm /var/spool/slurmctld /var/spool/slurmd /var/log/slurm /run/munge \
	/var/lib/munge /var/log/munge
chown -R munge:munge /run/munge /var/lib/munge /var/log/munge 2>/dev/null || true
key=/etc/munge/munge.key
if [[ ! -s $key ]]; then
	if [[ $ME == A ]]; then
		dd if=/dev/urandom of="$SD/.munge.key" bs=1024 count=1 2>/dev/null &&
			mv "$SD/.munge.key" "$SD/munge.key"
	fi
	for ((i = 0; i < 600; i++)); do
		[[ -s $SD/munge.key ]] && break
		sleep 0.1
	done
	key=$SD/munge.key
fi
cp "$key" /etc/munge/ibcr.key && chmod 600 /etc/munge/ibcr.key || die "no munge key"
munged --force --key-file=/etc/munge/ibcr.key --num-threads=2 || die "munged did not start"

cat >/etc/slurm/slurm.conf <<'EOF'
ClusterName=ibcr
SlurmctldHost=vm-a(10.99.0.1)
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
MpiDefault=none
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SlurmdParameters=config_overrides
ReturnToService=2
StateSaveLocation=/var/spool/slurmctld
SlurmdSpoolDir=/var/spool/slurmd
SlurmctldPidFile=/run/slurmctld.pid
SlurmdPidFile=/run/slurmd.pid
SlurmctldLogFile=/var/log/slurm/slurmctld.log
SlurmdLogFile=/var/log/slurm/slurmd.log
SchedulerType=sched/builtin
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
JobCompType=jobcomp/none
SlurmctldTimeout=300
SlurmdTimeout=300
MessageTimeout=60
InactiveLimit=0
KillWait=10
Waittime=0
NodeName=vm-a NodeAddr=10.99.0.1 CPUs=4 RealMemory=500 State=UNKNOWN
NodeName=vm-b NodeAddr=10.99.0.2 CPUs=4 RealMemory=500 State=UNKNOWN
PartitionName=main Nodes=vm-a,vm-b Default=YES MaxTime=INFINITE State=UP OverSubscribe=FORCE:4
EOF
# no systemd in the guest: slurmd makes its cgroup v2 directories itself
cat >/etc/slurm/cgroup.conf <<'EOF'
CgroupPlugin=cgroup/v2
IgnoreSystemd=yes
ConstrainCores=no
ConstrainRAMSpace=no
EOF
mkdir -p /sys/fs/cgroup/system.slice || die "no cgroup v2 to put slurmstepd in"
if [[ $ME == A ]]; then
	slurmctld -i || die "slurmctld did not start"
fi
slurmd || die "slurmd did not start"
# both nodes up: idle, or already in the other guest's allocation (that
# guest may be quicker); a deadline, since each sinfo takes a while in TCG
deadline=$((SECONDS + 300))
while ((SECONDS < deadline)); do
	[[ $(sinfo -h -N -o '%T' 2>/dev/null | grep -cE '^(idle|allocated|mixed)$') == 2 ]] && exit 0
	sleep 0.25
done
die "the two nodes are not up after 300 s: $(sinfo -N 2>&1)"

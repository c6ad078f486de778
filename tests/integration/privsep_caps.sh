#!/bin/bash
# Every worker and daemon of a running node holds exactly its row's
# capabilities (supervisor/simtable.c): CapPrm = CapEff = CapBnd = the row
# (as far as our own bounding set reaches), CapInh = CapAmb = 0.  mock-ib
# is started with CHOWN too and drops it from its permitted and effective
# sets once its socket has its group (it cannot shrink its bounding set
# without SETPCAP, and no_new_privs keeps it from regaining it).  Prints
# each process's sets.
. "$(dirname "$0")/../lib.sh"

[ "$(id -u)" = 0 ] || { note "needs root"; exit 77; }

# CAP_* numbers (linux/capability.h) of the rows.
files=$(( (1<<1)|(1<<3) ))	# DAC_OVERRIDE, FOWNER
declare -A want=(
	[mokka-worker-pcibus]=$files [mokka-worker-nvlink]=$files
	[mokka-worker-fabricmanager]=$files [mokka-worker-kernellog]=$files
	[mokka-worker-gpudriver]=$(( files|(1<<27)|(1<<21) ))	# + MKNOD, SYS_ADMIN
	[mokka-worker-ib]=$(( files|(1<<27) )) [mokka-worker-imex]=$(( files|(1<<27) ))
	[mokka-worker-cri]=$(( files|(1<<18) ))			# + SYS_CHROOT
	[nv-fabricmanager]=0 [mokka-kernellog]=0
	[mock-ib]=$(( 1<<10 ))					# NET_BIND_SERVICE
	[mokka-pcifs]=$(( 1<<21 ))				# SYS_ADMIN (the FUSE mount)
	[mokka-nri]=0						# cri's, NRI on by default
)
declare -A bounding=([mock-ib]=$(( (1<<10)|(1<<0) )))		# + CHOWN, dropped after use
ours=$(( 16#$(awk '/^CapBnd/ { print $2 }' /proc/self/status) ))

cp "$S/etc/profiles/h100.yaml" "$T/profile.yaml"
start_supervisor --config "$T/profile.yaml" --node-name node-a --kernel-log "$T/kmsg"
wait_for 30 sh -c "pgrep -P $SUP_PID -f '^mock-ib' >/dev/null && pgrep -P $SUP_PID -f '^nv-fabricmanager' >/dev/null && pgrep -P $SUP_PID -f '^mokka-kernellog' >/dev/null && pgrep -P $SUP_PID -f 'mokka-pcifs' >/dev/null && pgrep -P $SUP_PID -f '^mokka-nri' >/dev/null" ||
	fail "not every daemon started: $(pgrep -a -P "$SUP_PID" | tr '\n' ';')"

seen=0
for pid in $(pgrep -P "$SUP_PID"); do
	name=$(tr '\0' ' ' < "/proc/$pid/cmdline" | awk '{ print $1 }')
	name=${name##*/}
	[ -n "${want[$name]+x}" ] || { note "skipping pid $pid ($name): not a row"; continue; }
	seen=$((seen + 1))
	row=$(( ${want[$name]} & ours ))
	sets=$(awk '/^Cap(Inh|Prm|Eff|Bnd|Amb)/ { printf "%s%s ", $1, $2 }' "/proc/$pid/status")
	note "$name (pid $pid): $sets(row $(printf '%016x' $row))"
	for f in CapInh CapAmb; do
		v=$(( 16#$(awk -v f="$f:" '$1 == f { print $2 }' "/proc/$pid/status") ))
		check "$name: $f is empty" [ "$v" -eq 0 ]
	done
	for f in CapPrm CapEff CapBnd; do
		v=$(( 16#$(awk -v f="$f:" '$1 == f { print $2 }' "/proc/$pid/status") ))
		r=$row
		[ "$f" = CapBnd ] && [ -n "${bounding[$name]+x}" ] && r=$(( ${bounding[$name]} & ours ))
		check "$name: $f = its row" [ "$v" -eq "$r" ]
	done
done
check "every worker and the five daemons were checked ($seen)" [ "$seen" -ge 13 ]
finish

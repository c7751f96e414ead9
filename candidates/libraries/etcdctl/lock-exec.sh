# etcdctl-lock (as shipped): the cron-singleton pattern, `etcdctl lock --ttl=N NAME -- CMD` in
# a loop. etcdctl (v3.4.23, etcdctl/ctlv3/command/lock_command.go) opens a session with a
# --ttl lease, waits in concurrency.Mutex.Lock, then runs CMD (leader.sh) with ETCD_LOCK_KEY
# and ETCD_LOCK_REV and waits for it (cmd.Run); when CMD exits it deletes its lock key. It
# never watches the session while CMD runs: on lease expiry CMD is not told and not stopped.
lib=${0%/*}
. "$lib/splitbrain.sh"

# The contract's TTL as the session's --ttl: whole seconds, at least 2 on the project's etcd.
ttl_s=$(((sb_ttl_ms + 999) / 1000))
[ "$ttl_s" -ge 2 ] || ttl_s=2
# R16: only the dial is bounded (--dial-timeout, default 2 s; here TTL/2, at most 2 s). The
# lock command ignores --command-timeout: the lease grant, Lock and the Unlock after CMD run
# on context.TODO/Background in 3.4.23, so etcdctl itself bounds none of them.
dial_ms=$((sb_ttl_ms / 2 < 2000 ? sb_ttl_ms / 2 : 2000))

# R10: a SIGTERM that comes before leader.sh exists cannot reach it; this file tells it.
stop=/tmp/splitbrain-etcdctl-stop.$$
rm -f "$stop"
export SPLITBRAIN_ETCDCTL_STOP="$stop"

term=0 pid=
# etcdctl passes no signal on to CMD (it only cancels its own context and then waits for CMD),
# so SIGTERM goes to etcdctl's whole process group, as a service manager stopping the unit
# would: leader.sh steps down and exits, then etcdctl deletes the lock key and exits 0.
on_term() {
	term=1
	: >"$stop"
	[ -n "$pid" ] && kill -TERM "-$pid" 2>/dev/null
}
trap on_term TERM INT

while [ "$term" = 0 ]; do
	sb_emit '"kind":"campaigning"}'
	# setsid: etcdctl leads a process group of its own (the shell's background child is no
	# group leader, so setsid execs without forking and $! is etcdctl).
	setsid etcdctl --endpoints="$sb_endpoints" --dial-timeout="${dial_ms}ms" \
		lock --ttl="$ttl_s" "etcdctl-lock/$sb_election" -- "$lib/leader.sh" &
	pid=$!
	[ "$term" = 1 ] && kill -TERM "-$pid" 2>/dev/null
	wait "$pid"
	rc=$?
	if [ "$term" = 1 ]; then
		# R11: the Unlock after CMD has no deadline (an unreachable etcd holds it forever).
		(sleep 3 && kill -KILL "-$pid") 2>/dev/null &
		guard=$!
		wait "$pid"
		kill "$guard" 2>/dev/null
		rm -f "$stop"
		break
	fi
	sb_log "etcdctl lock exited with status $rc"
	pid=
	sleep "$sb_retry_sleep"
done
exit 0

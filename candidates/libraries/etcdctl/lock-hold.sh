# etcdctl-lock-hold (as shipped, the README's other form): `etcdctl -w fields lock --ttl=N
# NAME` without a command. etcdctl (v3.4.23, lock_command.go) takes the lock, re-reads its
# lock key (exit "lock lost on init" if it is gone), prints that GET and then holds the lock
# "until etcdctl is terminated" (etcdctl/README.md, LOCK); in the code it also exits by
# itself with "session expired" when the session's lease is lost. So this adapter leads
# while that etcdctl process runs, with the lock key's CreateRevision as token, and checks
# that the process still runs before every write.
lib=${0%/*}
. "$lib/splitbrain.sh"

ttl_s=$(((sb_ttl_ms + 999) / 1000)) # --ttl: whole seconds, at least 2 on the project's etcd
[ "$ttl_s" -ge 2 ] || ttl_s=2
dial_ms=$((sb_ttl_ms / 2 < 2000 ? sb_ttl_ms / 2 : 2000)) # R16: only the dial is bounded
out=/tmp/etcdctl-lock.$$.out
err=/tmp/etcdctl-lock.$$.err

term=0 pid=
trap 'term=1' TERM INT

# alive: etcdctl still runs (not exited; an exited child stays a zombie until waited for).
alive() {
	[ -r "/proc/$pid/stat" ] || return 1
	read -r _ _ st _ <"/proc/$pid/stat" || return 1 # comm "(etcdctl)" has no blank
	[ "$st" != Z ]
}
# release: SIGTERM makes etcdctl delete its lock key and exit 0 (README: "LOCK returns a zero
# exit code only if it is terminated by a signal and releases the lock"). Its Unlock has no
# deadline, so after 3 s it is killed (R11).
release() {
	kill -TERM "$pid" 2>/dev/null
	(sleep 3 && kill -KILL "$pid") 2>/dev/null &
	guard=$!
	wait "$pid"
	kill "$guard" 2>/dev/null
}

while [ "$term" = 0 ]; do
	sb_emit '"kind":"campaigning"}'
	: >"$out"
	etcdctl --endpoints="$sb_endpoints" --dial-timeout="${dial_ms}ms" -w fields \
		lock --ttl="$ttl_s" "etcdctl-lock/$sb_election" >"$out" 2>"$err" &
	pid=$!
	token=
	# The lock is ours once etcdctl has printed the GET of its key (polled every retry interval).
	while [ "$term" = 0 ] && alive; do
		while read -r k _ v; do [ "$k" = '"CreateRevision"' ] && token=$v; done <"$out"
		[ -n "$token" ] && break
		sleep "$sb_retry_sleep"
	done
	if [ -n "$token" ] && [ "$term" = 0 ]; then
		sb_emit "\"kind\":\"elected\",\"token\":$token}"
		reason=
		while :; do
			[ "$term" = 1 ] && reason=sigterm && break
			if ! alive; then
				reason="etcdctl lock exited: $(tail -n 1 "$err")"
				break
			fi
			sb_write "$token"
			[ "$sb_result" = rejected ] && reason="fenced: the resource answered 409 (a newer lock revision wrote)" && break
			[ "$term" = 1 ] && reason=sigterm && break
			sleep "$sb_write_sleep"
		done
		sb_stepped_down "$reason"
	fi
	if alive; then release; else wait "$pid"; fi
	rc=$?
	[ "$term" = 1 ] && break
	sb_log "etcdctl lock exited with status $rc: $(tail -n 1 "$err")"
	sleep "$sb_retry_sleep"
done
exit 0

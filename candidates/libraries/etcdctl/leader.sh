#!/bin/sh
# The CMD of `etcdctl lock NAME -- CMD`: the "cron job". It leads from its start with token
# ETCD_LOCK_REV (the revision of the lock grant, which etcdctl puts in its environment) and
# writes every write interval until SIGTERM or a 409 from the resource. etcdctl tells it
# nothing else, so it knows of no session loss (lock_command.go).
lib=${0%/*}
. "$lib/splitbrain.sh"

term=0
trap 'term=1' TERM INT
# R10: the launcher got SIGTERM before this process existed.
[ -e "${SPLITBRAIN_ETCDCTL_STOP:-/nonexistent}" ] && exit 0
token=${ETCD_LOCK_REV:?etcdctl set no ETCD_LOCK_REV}
[ "$term" = 1 ] && exit 0
sb_emit "\"kind\":\"elected\",\"token\":$token}"
reason=
while :; do
	[ "$term" = 1 ] && reason=sigterm && break
	sb_write "$token"
	[ "$sb_result" = rejected ] && reason="fenced: the resource answered 409 (a newer ETCD_LOCK_REV wrote)" && break
	[ "$term" = 1 ] && reason=sigterm && break
	sleep "$sb_write_sleep"
done
sb_stepped_down "$reason"
exit 0

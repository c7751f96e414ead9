#!/bin/sh
# The cluster's "leader": an ocf:heartbeat:anything resource (binfile), started and stopped
# by Pacemaker alone. Its stdout is the container's (logfile=/proc/1/fd/1), so its event
# lines reach the harness. It knows nothing of the cluster: it leads from its start until
# Pacemaker stops it (SIGTERM), writing to the unfenced resource; fencing is the only safety.
lib=${0%/*}
# The contract's environment as the launcher saw it (pacemaker-execd passes its own).
. /run/splitbrain/env
. "$lib/splitbrain.sh"
term=0
trap 'term=1' TERM INT
# No token from Pacemaker: the label is the host's uptime in ms at the start, which grows
# with every start on any node (containers share the host's uptime).
sb_now
token=$sb_now_ms
sb_emit "\"kind\":\"elected\",\"token\":$token}"
while [ "$term" = 0 ]; do
	sb_write "$token"
	[ "$term" = 1 ] && break
	sleep "$sb_write_sleep"
done
sb_stepped_down "sigterm: pacemaker stopped the resource"
exit 0

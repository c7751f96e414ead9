#!/bin/sh
# A splitbrain candidate in POSIX shell: an etcd lease through etcd's JSON gateway, with curl
# and jq. It follows docs/candidates.md only. The leader key is created in a transaction
# guarded by "key does not exist", attached to a lease; the token is the key's create
# revision (the transaction's revision), the lease is kept alive every TTL/3, and the leader
# stops believing when its own deadline (from the keepalive's SEND time) passes.
#
# Run it (Debian packages curl and jq, installed into a cached image):
#   splitbrain run --store etcd --candidate-cmd examples/shell/candidate.sh \
#       --candidate-packages curl,jq --nemesis kill-leader --time 30s
#
# Timestamps: a shell has no CLOCK_MONOTONIC, so every line's t and call_t are read from
# /proc/uptime, which counts from boot like CLOCK_MONOTONIC on a host that has never been
# suspended (docs/candidates.md R5).
set -u

die() { echo "candidate.sh: $*" >&2; exit 64; }
node=${SPLITBRAIN_NODE_ID:?SPLITBRAIN_NODE_ID is not set}
[ "${SPLITBRAIN_STORE:-}" = etcd ] || die "this example runs on SPLITBRAIN_STORE=etcd only"
endpoints=${SPLITBRAIN_STORE_ENDPOINTS:?SPLITBRAIN_STORE_ENDPOINTS is not set}
resource=${SPLITBRAIN_RESOURCE_URL:?SPLITBRAIN_RESOURCE_URL is not set}
election=${SPLITBRAIN_ELECTION:-splitbrain}

# ms of a Go duration of the simple forms the harness passes (2s, 1.5s, 50ms, 500µs).
ms() {
	case $1 in
	*ms) echo "${1%ms}" | awk '{printf "%d", $1}' ;;
	*us | *µs) echo 1 ;;
	*s) echo "${1%s}" | awk '{printf "%d", $1 * 1000}' ;;
	*) die "duration $1: use s or ms" ;;
	esac
}
ttl_ms=$(ms "${SPLITBRAIN_LEASE_TTL:-2s}")
write_ms=$(ms "${SPLITBRAIN_WRITE_INTERVAL:-50ms}")
renew_ms=$(ms "${SPLITBRAIN_RENEW_INTERVAL:-$((ttl_ms / 3))ms}")
retry_ms=$(ms "${SPLITBRAIN_RETRY_INTERVAL:-100ms}")
ttl_s=$(((ttl_ms + 999) / 1000)) # etcd leases are whole seconds
[ "$ttl_s" -ge 2 ] || ttl_s=2    # and at least 2 s on the project's etcd
sec() { awk -v m="$1" 'BEGIN { printf "%.3f", m / 1000 }'; }
write_sleep=$(sec "$write_ms")
retry_sleep=$(sec "$retry_ms")
write_max=$(sec $((write_ms * 4 > 2000 ? 2000 : (write_ms * 4 < 200 ? 200 : write_ms * 4))))

# now sets now_ms and now_ns from /proc/uptime (10 ms steps) without starting a process:
# a loaded machine makes every fork cost tens of ms, and a leader must write on time.
now() {
	read -r up _ </proc/uptime
	c=${up#*.}
	c=${c#0}
	now_ms=$((${up%.*} * 1000 + c * 10))
	now_ns=${now_ms}000000
}

# emit prints one event line with its own t, so all of this node's times come from one clock
# (/proc/uptime): mixing them with the harness's receipt stamps would put a write's call_t
# before the receipt of the elected line that preceded it. uptime has 10 ms steps and reads
# the step's start, so a write's answer came at or after the value read then; "after" waits
# for the next step and prints that: a t at or after the answer (an answer is never early)
# and not after the line leaves (the harness refuses a t later than its receipt). t never
# goes back in print order (docs/candidates.md R1, R5).
last_t=0
emit() { # emit JSON_WITHOUT_OPENING_BRACE [after]
	now
	if [ "${2:-}" = after ]; then
		answered_ms=$now_ms
		while [ "$now_ms" -le "$answered_ms" ]; do now; done # at most one 10 ms step
	fi
	t=$now_ns
	[ "$t" -lt "$last_t" ] && t=$last_t
	last_t=$t
	printf '{"t":%s,%s\n' "$t" "$1" # one write(2) per line: the shell does not buffer printf
}
b64() { printf '%s' "$1" | base64 | tr -d '\n'; }

key=$(b64 "/example/$election/leader")
now
holder="$node-$now_ns" # unique across restarts of this node
seq=0
term=0
trap 'term=1' TERM INT

# etcd POSTs to each endpoint in turn: a name that does not resolve (its node is down) or
# an address that moved is looked up again on every call.
etcd() {
	path=$1 body=$2
	oldifs=$IFS IFS=,
	for ep in $endpoints; do
		IFS=$oldifs
		if out=$(curl -sf --max-time 1 -H 'Content-Type: application/json' -d "$body" "http://$ep$path"); then
			printf '%s' "$out"
			return 0
		fi
	done
	IFS=$oldifs
	return 1
}

release() { # revoke the lease: the key goes with it
	[ -n "${lease:-}" ] && etcd /v3/lease/revoke "{\"ID\":\"$lease\"}" >/dev/null
	lease=
}

while [ $term = 0 ]; do
	emit '"kind":"campaigning"}'
	lease= token=0
	while [ $term = 0 ]; do
		now
		if [ -z "$lease" ]; then
			lease=$(etcd /v3/lease/grant "{\"TTL\":$ttl_s}" | jq -r '.ID // empty')
			lease_sent=$now_ms
		elif [ $((now_ms - lease_sent)) -ge "$renew_ms" ]; then
			# Keep the waiting lease alive too, so a won key does not expire before the
			# leader's first keepalive.
			left=$(etcd /v3/lease/keepalive "{\"ID\":\"$lease\"}" | jq -r '.result.TTL // "0"')
			case $left in
			'' | 0) lease= ;;
			*) lease_sent=$now_ms ;;
			esac
			continue
		fi
		if [ -n "$lease" ]; then
			txn="{\"compare\":[{\"target\":\"CREATE\",\"key\":\"$key\",\"create_revision\":\"0\"}],
				\"success\":[{\"request_put\":{\"key\":\"$key\",\"value\":\"$(b64 "$holder")\",\"lease\":\"$lease\"}}]}"
			if resp=$(etcd /v3/kv/txn "$txn"); then
				if [ "$(printf '%s' "$resp" | jq -r '.succeeded // false')" = true ]; then
					# BEGIN token
					token=$(printf '%s' "$resp" | jq -r '.header.revision')
					# END token
					break
				fi
			else
				emit '"kind":"error","reason":"txn: no etcd endpoint answered"}'
			fi
		else
			emit '"kind":"error","reason":"lease grant: no etcd endpoint answered"}'
		fi
		sleep "$retry_sleep"
	done
	if [ $term = 1 ]; then
		release # SIGTERM while campaigning: never announce a term won after it
		break
	fi
	deadline=$((lease_sent + ttl_s * 990)) # from the SEND time of the grant or keepalive
	emit "\"kind\":\"elected\",\"token\":$token}"
	next_renew=$((lease_sent + renew_ms))
	reason=
	while [ -z "$reason" ]; do
		[ $term = 1 ] && reason=sigterm && break
		now
		if [ "$now_ms" -ge "$next_renew" ]; then
			sent=$now_ms
			left=$(etcd /v3/lease/keepalive "{\"ID\":\"$lease\"}" | jq -r '.result.TTL // "0"')
			case $left in
			'') ;; # no answer: keep the old deadline
			0) reason="lease expired (keepalive)" && break ;;
			*) deadline=$((sent + ttl_s * 990)) ;;
			esac
			next_renew=$((sent + renew_ms))
			now
		fi
		[ "$now_ms" -ge "$deadline" ] && reason="lease expired (local deadline)" && break
		seq=$((seq + 1))
		id="$holder-$seq"
		call_t=$now_ns
		code=$(curl -s -o /dev/null -w '%{http_code}' --max-time "$write_max" \
			-H 'Content-Type: application/json' -d "{\"node\":\"$node\",\"token\":$token,\"write_id\":\"$id\"}" "$resource/write")
		case $code in
		200) result=accepted ;;
		4??) result=rejected ;;
		*) result=unknown ;;
		esac
		emit "\"kind\":\"write\",\"token\":$token,\"write_id\":\"$id\",\"call_t\":$call_t,\"result\":\"$result\"}" after
		[ $result = rejected ] && reason="fenced: the resource saw a newer token" && break
		sleep "$write_sleep"
	done
	# The belief ends here, before the lease is revoked: no gap can hide an overlap.
	emit "\"kind\":\"stepped-down\",\"reason\":\"$reason\"}"
	release
done
exit 0

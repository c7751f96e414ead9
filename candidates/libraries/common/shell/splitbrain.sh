# The splitbrain candidate contract for POSIX shell adapters (docs/candidates.md, contract 1).
# Sourced (". /splitbrain-lib/splitbrain.sh"), it reads the environment (exit 64 on a bad
# one, R15), prints event lines with t from /proc/uptime (R5) and makes one resource write
# (section 3). No election logic and no signal handling: the adapter owns both. Based on
# examples/shell/candidate.sh.
#
#   sb_emit '"kind":"campaigning"}'        # JSON without the opening brace; t is added
#   sb_write "$token"                       # one write; sets sb_result (accepted|rejected|unknown)
#   sb_stepped_down "reason"                # escapes the reason
set -u

sb_log() { echo "splitbrain.sh: $*" >&2; }
sb_die() { # exit 64 with the variable named (R15)
	sb_log "$*"
	exit 64
}

# sb_ms DURATION sets sb_ms_out to a Go duration (2s, 1.5s, 50ms, 1m30s, 0) in whole ms,
# rounded up, or to "bad". Shell arithmetic only, and no $(...): on a loaded host every fork
# costs, and a leader.sh started per term pays this before it prints elected.
sb_ms() {
	sb_s=$1 sb_us=0 sb_ms_out=bad
	[ "$sb_s" = 0 ] && sb_ms_out=0 && return
	[ -n "$sb_s" ] || return
	while [ -n "$sb_s" ]; do
		sb_n=${sb_s%%[!0-9.]*}
		sb_s=${sb_s#"$sb_n"}
		sb_u=${sb_s%%[0-9.]*}
		sb_s=${sb_s#"$sb_u"}
		case $sb_n in '' | *.*.* | .) return ;; esac
		sb_i=${sb_n%%.*} sb_f=
		case $sb_n in *.*) sb_f=${sb_n#*.} ;; esac
		sb_f=${sb_f}000000000
		sb_f=${sb_f%"${sb_f#?????????}"} # the fraction as nine digits (units of 1e-9)
		sb_i=${sb_i#"${sb_i%%[!0]*}"}     # no leading zeros: $((010)) is octal
		case $sb_u in                      # microseconds per unit
		h) sb_m=3600000000 ;;
		m) sb_m=60000000 ;;
		s) sb_m=1000000 ;;
		ms) sb_m=1000 ;;
		us | µs | μs) sb_m=1 ;;
		ns) sb_m=0 ;;
		*) return ;;
		esac
		# "1$sb_f % 1e9": the nine digits as a number, leading zeros kept harmless
		sb_us=$((sb_us + ${sb_i:-0} * sb_m + 1$sb_f % 1000000000 * sb_m / 1000000000))
	done
	sb_ms_out=$(((sb_us + 999) / 1000))
}
# sb_sec MS sets sb_sec_out to seconds with 3 decimals, for sleep and curl.
sb_sec() {
	sb_r=$(($1 % 1000))
	case ${#sb_r} in 1) sb_r=00$sb_r ;; 2) sb_r=0$sb_r ;; esac
	sb_sec_out=$(($1 / 1000)).$sb_r
}
sb_env_ms() { # VAR DEFAULT: sets sb_ms_out, exits 64 on a bad value
	eval "sb_v=\${$1:-$2}"
	sb_ms "$sb_v"
	[ "$sb_ms_out" = bad ] && sb_die "$1=$sb_v is not a Go duration such as 2s or 50ms"
}

[ "${SPLITBRAIN_CONTRACT:-1}" = 1 ] || sb_die "SPLITBRAIN_CONTRACT=$SPLITBRAIN_CONTRACT: this helper speaks contract 1 only"
sb_missing=
sb_need="SPLITBRAIN_NODE_ID SPLITBRAIN_STORE SPLITBRAIN_RESOURCE_URL"
# Store "none" (candidates that elect among themselves) has no endpoints.
[ "${SPLITBRAIN_STORE:-}" = none ] || sb_need="$sb_need SPLITBRAIN_STORE_ENDPOINTS"
for sb_k in $sb_need; do
	eval "[ -n \"\${$sb_k:-}\" ]" || sb_missing="$sb_missing $sb_k"
done
[ -z "$sb_missing" ] || sb_die "required variable(s) not set:$sb_missing"
case $SPLITBRAIN_NODE_ID in *[!A-Za-z0-9_.-]*) sb_die "SPLITBRAIN_NODE_ID=$SPLITBRAIN_NODE_ID: letters, digits, -_. only" ;; esac
sb_election=${SPLITBRAIN_ELECTION:-splitbrain}
case $sb_election in *[!A-Za-z0-9_.-]*) sb_die "SPLITBRAIN_ELECTION=$sb_election: letters, digits, -_. only" ;; esac
sb_node=$SPLITBRAIN_NODE_ID
sb_endpoints=${SPLITBRAIN_STORE_ENDPOINTS:-}
sb_resource=${SPLITBRAIN_RESOURCE_URL%/}
sb_env_ms SPLITBRAIN_LEASE_TTL 2s
sb_ttl_ms=$sb_ms_out
sb_env_ms SPLITBRAIN_WRITE_INTERVAL 50ms
sb_write_ms=$sb_ms_out
sb_env_ms SPLITBRAIN_RETRY_INTERVAL 50ms
sb_retry_ms=$sb_ms_out
[ "$sb_ttl_ms" -gt 0 ] || sb_die "SPLITBRAIN_LEASE_TTL must be > 0"
sb_sec "$sb_write_ms"
sb_write_sleep=$sb_sec_out
sb_sec "$sb_retry_ms"
sb_retry_sleep=$sb_sec_out
# The library helpers' write timeout: 2 s, the top of the Go runtime's clamp (why:
# docs/libraries.md, "How a library runs"). No fault cuts the harness's resource off, so only a
# loaded host answers later; a write given up sooner could land after the job had released the
# lock and a next tenure had written.
sb_write_max=2

# sb_now sets sb_now_ms and sb_now_ns from /proc/uptime (10 ms steps) without a fork: a
# shell has no CLOCK_MONOTONIC, and uptime counts from boot like it (R5).
sb_now() {
	read -r sb_up _ </proc/uptime
	sb_c=${sb_up#*.}
	sb_c=${sb_c#0}
	sb_now_ms=$((${sb_up%.*} * 1000 + sb_c * 10))
	sb_now_ns=${sb_now_ms}000000
}

# sb_emit prints one event line with its own t, so all of this process's times come from one
# clock. uptime reads the start of its 10 ms step, so "after" (a write's answer) waits for
# the next step: a t at or after the answer and not after the line leaves. t never goes back
# in this process's print order (R2); a later process reads a later uptime.
sb_last_t=0
sb_emit() { # JSON_WITHOUT_OPENING_BRACE [after]
	sb_now
	if [ "${2:-}" = after ]; then
		sb_answered=$sb_now_ms
		while [ "$sb_now_ms" -le "$sb_answered" ]; do sb_now; done
	fi
	sb_t=$sb_now_ns
	[ "$sb_t" -lt "$sb_last_t" ] && sb_t=$sb_last_t
	sb_last_t=$sb_t
	printf '{"t":%s,%s\n' "$sb_t" "$1" # one write(2) per line: printf is a builtin
}

# sb_json_str TEXT: TEXT as a JSON string body (quotes, backslashes and control bytes made safe).
sb_json_str() {
	case $1 in
	*[\"\\]* | *[![:print:]]*) printf '%s' "$1" | tr '\n\r\t' '   ' | sed 's/\\/\\\\/g; s/"/\\"/g' ;;
	*) printf '%s' "$1" ;; # nothing to escape: no fork
	esac
}
sb_stepped_down() { sb_emit "\"kind\":\"stepped-down\",\"reason\":\"$(sb_json_str "$1")\"}"; }
sb_error() { sb_emit "\"kind\":\"error\",\"reason\":\"$(sb_json_str "$1")\"}"; }

# write ids: node, this process's start on uptime and its pid, a counter (unique per run, R7).
sb_now
sb_writer="$sb_node-$sb_now_ns-$$"
sb_seq=0

# sb_write TOKEN: one POST /write; prints the write event and sets sb_result.
sb_write() {
	sb_seq=$((sb_seq + 1))
	sb_id="$sb_writer-$sb_seq"
	sb_now
	sb_call_t=$sb_now_ns
	sb_code=$(curl -s -o /dev/null -w '%{http_code}' --max-time "$sb_write_max" \
		-H 'Content-Type: application/json' \
		-d "{\"node\":\"$sb_node\",\"token\":$1,\"write_id\":\"$sb_id\"}" "$sb_resource/write")
	case $sb_code in
	200) sb_result=accepted ;;
	4??) sb_result=rejected ;;
	*) sb_result=unknown ;;
	esac
	sb_emit "\"kind\":\"write\",\"token\":$1,\"write_id\":\"$sb_id\",\"call_t\":$sb_call_t,\"result\":\"$sb_result\"}" after
}

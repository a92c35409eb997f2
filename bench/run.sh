#!/usr/bin/env bash
# Recall's load script: one command, everything on loopback.
#
#   bench/run.sh            full run (about 15 minutes on 2 cores)
#   bench/run.sh -quick     short run (about 2 minutes), same rows, noisier figures
#   bench/run.sh -nopin     do not pin processes to cores (see PINNING below)
#
# It builds recall, bench/fakeupstream (an instant OpenAI-compatible fake) and
# bench/load (the load generator), installs nginx from the distribution's
# packages if it is missing (the nginx rows are skipped if it cannot), and
# measures side by side:
#
#   direct          the fake upstream itself
#   nginx           nginx as a plain reverse proxy (upstream keepalive) in front of it
#   direct-ctx50, nginx-ctx50
#                   the same, with a stateless client resending 50 earlier turns
#                   in every request: the context size the history rows send upstream
#   floor-ctx50     bench/bareproxy sending nginx-ctx50's context upstream from
#                   memory to a client that sends only its new message: a Go
#                   proxy that kept the conversation and did nothing else
#   floor-durable-ctx50 (pairs only) the same, each answered turn also appended
#                   to a file and fsynced in groups before the answer: the
#                   least a proxy that keeps conversations durably does
#   floor-store-ctx50 (pairs only) the same, each answered turn committed to
#                   Recall's embedded store instead: the least a proxy on
#                   Recall's store does
#   floor-badger-ctx50 (pairs only) the same, each answered turn written to a
#                   Badger database of its own in three entries, with
#                   Badger's own durable mode (SyncWrites)
#   recall-nohist   Recall without X-Conversation-ID (a plain proxy call)
#   recall-sync     Recall with history: 1,000 conversations seeded with 50 turns
#                   each that grow during the run, default budget, durable writes
#   recall-relaxed  the same with sync_writes: false
#   recall-sync-responses, recall-sync-responses-bridged,
#   recall-sync-messages, recall-sync-messages-bridged,
#   recall-sync-gemini, recall-sync-gemini-bridged
#                   recall-sync through the Responses API, Anthropic Messages
#                   and Gemini (bench/load -protocol), closed loop only: native
#                   (the default upstream for Responses, RECALL_UPSTREAM_PROTOCOL
#                   anthropic for Messages, gemini for Gemini) and bridged to
#                   chat completions (RECALL_UPSTREAM_PROTOCOL=chat for
#                   Responses, the default for the others), the conversations
#                   seeded in the row's protocol; with recall-sync they make
#                   the protocol matrix, with each native row's peak RSS and
#                   cold start (process start to the first answered request)
#   recall-pg       recall-sync on PostgreSQL (store_url): a private server
#                   started in the work directory if PostgreSQL's server
#                   binaries are installed (the rows are skipped otherwise),
#                   durable commits (fsync, synchronous_commit on),
#                   max_wal_size 8GB and checkpoint_timeout 30min (the
#                   operator settings docs/performance.md gives: with the
#                   default 1GB a checkpoint started every ~30 s of the rows),
#                   statements of 100 ms or more and autovacuum logged and
#                   counted under the tables
#   recall-pg-2     the same with two Recall processes (replicas) on one
#                   database (seeded afresh as recall-pg's was, on the same
#                   server), sharing the proxy's core, no balancer: bench/load
#                   spreads the requests over both URLs, each conversation's
#                   requests alternating between the replicas; each replica
#                   has replica_url, so the one that does not own a
#                   conversation forwards its requests to the one that does
#                   (fleet), which keeps the conversation's lease between
#                   them (store/pgstore/keep.go)
#                   AFFINITY=1 runs it as behind a balancer with affinity
#                   instead: each conversation's requests all to one
#                   replica (load -affinity), no replica_url, no forwarding;
#                   NOFORWARD=1 (the pairs' pg-2 row only) keeps requests
#                   alternating without replica_url: each replica serves
#                   all of them under the store's lease
#                   Both report the PostgreSQL server's CPU a request (its
#                   processes, over each row's measured part), and after
#                   them pgbench measures what the commit's one statement
#                   alone costs the server, with Recall stopped (skipped
#                   without pgbench)
#
# each non-streaming and streaming, in a closed loop (max throughput, 32 in
# flight) and an open loop (1,000 requests/s, latency from the scheduled send
# time: no coordinated omission). Then the cost against stored history length
# (32 conversations seeded with 10 / 1,000 / 10,000 turns, open loop at
# 200 requests/s) and
# Recall's peak RSS (VmHWM) after a closed-loop run over 10,000 conversations
# (cache_mb: 64). Then the proxy ceiling: wrk (faster than bench/load,
# which saturates near 11,000 req/s here) drives nginx and Recall without
# history in front of an nginx that answers from memory, so that the
# proxy, not the load generator or the upstream, is the bottleneck, with
# bench/bareproxy (fasthttp's server and client doing nothing else) as the
# reference for what a Go proxy costs here (skipped if wrk is missing and
# cannot be installed).
# It prints markdown tables; raw JSON lines stay in the work directory.
#
# PINNING: the 2 cores are shared by the load generator, the proxy and the
# upstream. By default the proxy under test (nginx with one worker, or
# Recall, which then runs one Go processor, four while a computation holds
# it: see internal/procs) runs alone on CPU 0 and
# the load generator and fake upstream share CPU 1, so that the proxies get
# the same single core and do not steal the load generator's. -nopin lets
# everything float over every core.
#
# ONLY, a comma list of row groups, runs just those (default: all): direct
# (direct, direct-ctx50), nginx (nginx, nginx-ctx50), floor, nohist, sync, relaxed,
# protocols (the Responses, Messages and Gemini rows), pairs (each of those
# rows against the chat row, recall-sync against nginx-ctx50, the durable
# floor against nginx-ctx50 (durable-ctx50), the floor on Recall's store
# against nginx-ctx50 (store-ctx50), Badger's own durable mode against
# nginx-ctx50 (badger-ctx50), recall-pg-2
# against recall-pg, two unshared recall-syncs against one (sync-2), in
# alternating slices: PAIR_ROWS; and, only when PAIR_ROWS names it,
# two unshared recall-pgs against one, pg-apart), pg (recall-pg,
# recall-pg-2), series (cost against history length), rss, ceiling. Example:
# ONLY=sync,pg bench/run.sh -quick.
#
# Environment: FAKE_FLAGS (default -fast: chat completions, Messages and
# Responses answered without validation; FAKE_FLAGS= for the strict fake). PG_CONF adds server settings to the recall-pg rows' PostgreSQL
# (e.g. PG_CONF="-c commit_delay=200 -c commit_siblings=5"); PG_CPU=proxy
# pins it to the proxy's core instead of the load generator's. PG_STATS=1 (with
# PG_CONF="-c shared_preload_libraries=pg_stat_statements") writes the
# recall-pg row's statements by total time to pg-statements.txt in the work
# directory, recall-pg-2's to pg-2-statements.txt.
# BASE_PORT (19801; eleven ports from it), RATE (default 1000), SERIES_RATE (200), CONC (32), DUR and WARM (10s/2s, quick
# 2s/0.5s), KEEP=1 keeps the work directory, SAMPLES=1 writes each row's requests
# (due and send times, latency: load -samples) to samples-ROW.csv in it, SEED_SUMMARIES=0 seeds no
# summaries (see SUMMARIZED below).
# TRACE=1 builds Recall with -tags pprof and, in every Recall row's open
# loop, records a runtime/trace of the measured part (trace-ROW.out in the
# work directory, which is then kept) and what the request goroutines
# waited on in it, by stack (trace-ROW-sync.txt: go tool trace -pprof=sync;
# -net.txt for the poller, where the durable commit's fsync waits) and
# what held the processor while requests waited 8 ms or more for it
# (trace-ROW-stalls.txt: bench/tracestall, with the samples of a CPU
# profile taken beside the trace, trace-ROW-cpu.pb, and ending with how
# much of the proxy's core other processes took meanwhile); Recall runs with
# GODEBUG=gctrace=1 (its GC lines in recall.log).
# Every open row with history runs a probe of the disk beside it (load
# -disk-probe: a 4 KB block of a preallocated file in the work directory,
# fdatasync every 10 ms) and reports its syncs: a stall the probe saw in a
# row's seconds is the disk's. DISK_PROBE=0 runs none. Every row of a
# proxy reports its CPU a request (load -proxy-cpu).
# PROFILE=1 builds Recall with -tags pprof and writes a CPU profile of the
# first Recall process over each Recall row's closed-loop measured part
# (profile-ROW.pb in the work directory, which is then kept; profile-ROW.txt
# its top entries, flat and cumulative): where a saturated core's time goes.
# It also prints what Badger's counters moved by over the profile, a request
# of the row (entries and bytes put, value-log and level-0 bytes, Gets): the
# main database's, or with BADGER_METRICS=side the side database's.
# PROFILE_OPEN=1 (with PROFILE=1) profiles the open-loop parts too: where a
# request's CPU goes at the open rate, when the core is not saturated.
# PERF=1 records both cores with `perf record -a -g` over up to 6 s of each
# closed row's measured part and writes each core's time by what ran on it,
# in µs a request of the row (bench/perfbudget), to perf-ROW.txt in the work
# directory, which is then kept with the recordings (perf-ROW.data; perfbudget
# -within CATEGORY lists what one category's time went through): the
# kernel's share too (fsync workers, softirq, the load generator), which a
# Go profile does not see.
set -euo pipefail

QUICK=0
PIN=1
for a in "$@"; do
	case "$a" in
	-quick | --quick) QUICK=1 ;;
	-nopin | --nopin) PIN=0 ;;
	-h | --help)
		awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"
		exit 0
		;;
	*)
		echo "run.sh: unknown flag $a" >&2
		exit 2
		;;
	esac
done

ROOT=$(cd "$(dirname "$0")/.." && pwd)
ONLY=${ONLY:-}
# want GROUP: whether ONLY selects GROUP (every group when ONLY is empty).
want() {
	[ -z "$ONLY" ] || [[ ",$ONLY," == *",$1,"* ]]
}
# pair_wanted ROW: whether the pairs group runs ROW (PAIR_ROWS, below).
pair_wanted() {
	want pairs && { [ -z "${PAIR_ROWS:-}" ] || [[ ",$PAIR_ROWS," == *",$1,"* ]]; }
}
for g in ${ONLY//,/ }; do
	case "$g" in
	direct | nginx | floor | nohist | sync | relaxed | protocols | pairs | pg | series | rss | ceiling) ;;
	*)
		echo "run.sh: unknown group $g in ONLY (want direct, nginx, floor, nohist, sync, relaxed, protocols, pairs, pg, series, rss, ceiling)" >&2
		exit 2
		;;
	esac
done
RATE=${RATE:-1000}
CONC=${CONC:-32}
if [ "$QUICK" = 1 ]; then
	DUR=${DUR:-2s}
	WARM=${WARM:-500ms}
else
	DUR=${DUR:-10s}
	WARM=${WARM:-2s}
fi
BASE_PORT=${BASE_PORT:-19801}
UP_PORT=$BASE_PORT
NGINX_PORT=$((BASE_PORT + 1))
RECALL_PORT=$((BASE_PORT + 2))
PG_PORT=$((BASE_PORT + 3))
STATIC_PORT=$((BASE_PORT + 4))
NGINX_WRK_PORT=$((BASE_PORT + 5))
BARE_PORT=$((BASE_PORT + 6))
RECALL2_PORT=$((BASE_PORT + 7))
PPROF_PORT=$((BASE_PORT + 8))  # TRACE=1: the first Recall's net/http/pprof
PPROF2_PORT=$((BASE_PORT + 9)) # PROFILE=1: the second replica's (recall-pg-2)
RECALL3_PORT=$((BASE_PORT + 10)) # the pairs' pg-2 row: its second replica
for p in "$UP_PORT" "$NGINX_PORT" "$RECALL_PORT" "$PG_PORT" "$STATIC_PORT" "$NGINX_WRK_PORT" "$BARE_PORT" "$RECALL2_PORT" "$PPROF_PORT" "$PPROF2_PORT" "$RECALL3_PORT"; do
	if (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then
		echo "run.sh: port $p is already in use: set BASE_PORT to a free range" >&2
		exit 1
	fi
done
SEED_TURNS=50
# Seeded conversations carry the summary Recall's default summaries would
# have left (all but the newest 3 turns), so that the rows measure the
# steady state; SEED_SUMMARIES=0 seeds none, and every conversation is
# then compacted on its first request (the catch-up after an upgrade).
SUMMARIZED=true
[ "${SEED_SUMMARIES:-1}" = 0 ] && SUMMARIZED=false

WORK=$(mktemp -d "${TMPDIR:-/tmp}/recall-bench.XXXXXX")
BIN=$WORK/bin
RESULTS=$WORK/results.jsonl
PIDS=()

cleanup() {
	for p in "${PIDS[@]:-}"; do
		[ -n "$p" ] && kill "$p" 2>/dev/null || true
	done
	wait 2>/dev/null || true
	if [ "${KEEP:-0}" = 1 ] || [ "${TRACE:-0}" = 1 ] || [ "${PROFILE:-0}" = 1 ] || [ "${PERF:-0}" = 1 ]; then
		echo "work directory kept: $WORK" >&2
	else
		rm -rf "$WORK"
	fi
}
trap cleanup EXIT

if [ "$PIN" = 1 ] && [ "$(nproc)" -ge 2 ] && command -v taskset >/dev/null; then
	PROXY_CPU=(taskset -c 0)
	LOAD_CPU=(taskset -c 1)
	NGINX_WORKERS=1
else
	PIN=0
	PROXY_CPU=()
	LOAD_CPU=()
	NGINX_WORKERS=auto
fi

echo "building into $BIN" >&2
RECALL_TAGS=()
{ [ "${TRACE:-0}" = 1 ] || [ "${PROFILE:-0}" = 1 ]; } && RECALL_TAGS=(-tags pprof)
(cd "$ROOT" && GOFLAGS=${GOFLAGS:--mod=mod} go build "${RECALL_TAGS[@]}" -o "$BIN/recall" ./cmd/recall &&
	GOFLAGS=${GOFLAGS:--mod=mod} go build -o "$BIN/fakeupstream" ./bench/fakeupstream &&
	GOFLAGS=${GOFLAGS:--mod=mod} go build -o "$BIN/load" ./bench/load &&
	GOFLAGS=${GOFLAGS:--mod=mod} go build -o "$BIN/bareproxy" ./bench/bareproxy &&
	GOFLAGS=${GOFLAGS:--mod=mod} go build -o "$BIN/tracestall" ./bench/tracestall &&
	GOFLAGS=${GOFLAGS:--mod=mod} go build -o "$BIN/perfbudget" ./bench/perfbudget)

# nginx: from the distribution's packages if missing.
NGINX=$(command -v nginx || true)
if [ -z "$NGINX" ] && command -v apt-get >/dev/null; then
	SUDO=()
	[ "$(id -u)" = 0 ] || SUDO=(sudo -n)
	echo "nginx missing: installing it with apt-get" >&2
	if "${SUDO[@]}" apt-get update -qq >&2 &&
		DEBIAN_FRONTEND=noninteractive "${SUDO[@]}" apt-get install -y -qq nginx-light >&2 ||
		DEBIAN_FRONTEND=noninteractive "${SUDO[@]}" apt-get install -y -qq nginx >&2; then
		NGINX=$(command -v nginx || true)
	fi
fi
[ -n "$NGINX" ] || echo "nginx unavailable and could not be installed: skipping the nginx rows" >&2
WRK=$(command -v wrk || true)
if [ -z "$WRK" ] && [ -n "$NGINX" ] && command -v apt-get >/dev/null; then
	SUDO=()
	[ "$(id -u)" = 0 ] || SUDO=(sudo -n)
	echo "wrk missing: installing it with apt-get" >&2
	DEBIAN_FRONTEND=noninteractive "${SUDO[@]}" apt-get install -y -qq wrk >&2 && WRK=$(command -v wrk || true)
fi
[ -n "$WRK" ] && [ -n "$NGINX" ] || echo "wrk or nginx unavailable: skipping the proxy-ceiling rows" >&2

# nginx_head DIR WORKERS: the start of an nginx configuration living in DIR,
# up to and with the opening of its http block.
nginx_head() {
	cat <<EOF
worker_processes $2;
daemon off;
pid $1/nginx.pid;
error_log $1/error.log warn;
events { worker_connections 4096; }
http {
	access_log off;
	client_body_temp_path $1/body;
	proxy_temp_path $1/proxy;
	fastcgi_temp_path $1/fastcgi;
	uwsgi_temp_path $1/uwsgi;
	scgi_temp_path $1/scgi;
EOF
}

# wait_http URL: wait up to 10s for URL to answer.
wait_http() {
	for _ in $(seq 100); do
		curl -fsS -o /dev/null "$1" 2>/dev/null && return 0
		sleep 0.1
	done
	echo "run.sh: $1 did not come up" >&2
	return 1
}

# wait_port PORT: wait up to 10s for a listener on PORT.
wait_port() {
	for _ in $(seq 100); do
		(exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0
		sleep 0.1
	done
	echo "run.sh: nothing listening on port $1" >&2
	return 1
}

# core_use: the proxy's core's busy time (CPU 0, /proc/stat) and the Recall
# processes' CPU time (RECALL_PIDS), in clock ticks, on one line.
core_use() {
	local busy recall=0 p
	busy=$(awk '$1 == "cpu0" { print $2 + $3 + $4 + $7 + $8 + $9 }' /proc/stat)
	for p in "${RECALL_PIDS[@]:-}"; do
		[ -r "/proc/$p/stat" ] && recall=$((recall + $(awk '{ print $14 + $15 }' "/proc/$p/stat" 2>/dev/null || echo 0)))
	done
	echo "$busy $recall"
}

# core_report FILE: what the proxy's core did between core_use's two lines in
# FILE (the traced part): what Recall used of it and what other processes
# did (on a shared machine, others' work the trace cannot see: a goroutine
# shown running while the kernel ran another process).
core_report() {
	[ "$PIN" = 1 ] && [ "$(wc -l <"$1")" = 2 ] || return 0
	awk -v hz="$(getconf CLK_TCK)" 'NR == 1 { b = $1; r = $2 } NR == 2 {
		busy = ($1 - b) * 1000 / hz; rec = ($2 - r) * 1000 / hz
		printf "\nCPU 0, the proxy core, in the traced part: busy %d ms, Recall %d ms, other processes %d ms\n", busy, rec, busy - rec
	}' "$1"
}

# badger_writes LABEL BEFORE AFTER: what Badger's counters (/debug/vars,
# both of Recall's databases together) moved by over LABEL's profile,
# a request of the row (its requests from RESULTS): entries put, bytes
# put, value-log bytes, level-0 bytes flushed, compaction bytes, and the
# Gets. The profile and the row's measured part both last DUR after WARM.
badger_writes() {
	[ -s "$2" ] && [ -s "$3" ] || return 0
	local n
	n=$(jq -r --arg l "$1" 'select(.label == $l) | .requests' "$RESULTS" | tail -1)
	[ -n "$n" ] && [ "$n" -gt 0 ] || return 0
	jq -rn --argjson n "$n" --slurpfile a "$2" --slurpfile b "$3" '
		def d(k): (($b[0][k] // 0) - ($a[0][k] // 0));
		def dm(k): ((($b[0][k] // {}) | [.[]] | add // 0) - (($a[0][k] // {}) | [.[]] | add // 0));
		def r(x): (x / $n * 10 | round / 10);
		"run.sh: \($ARGS.named.label // "") badger a request: puts \(r(d("badger_put_num_user"))), bytes put \(r(d("badger_write_bytes_user"))), value log \(r(d("badger_write_bytes_vlog"))), level 0 \(r(d("badger_write_bytes_l0"))), compaction \(r(dm("badger_write_bytes_compaction"))), gets \(r(d("badger_get_num_user"))) (memtable \(r(d("badger_get_num_memtable"))), tables \(r(dm("badger_get_num_lsm"))))"' --arg label "$1" >&2
}

# proxy_pids LABEL: the running processes of LABEL's proxy under test, a
# comma list (load -proxy-cpu: its CPU a request).
proxy_pids() {
	local p out=
	case "$1" in
	nginx*) out=${NGINX_PID:-} ;;
	floor-*) out=${FLOOR_PID:-} ;;
	pairs-*) out=${PAIR_PID:-} ;;
	recall-*)
		for p in "${RECALL_PIDS[@]:-}"; do
			[ -n "$p" ] && kill -0 "$p" 2>/dev/null && out+=${out:+,}$p
		done
		;;
	esac
	echo "$out"
}

# load LABEL ARGS...: one load-generator run, its JSON line appended to RESULTS.
load() {
	local label=$1
	shift
	local samples=()
	[ "${SAMPLES:-0}" = 1 ] && samples=(-samples "$WORK/samples-${label//\//-}.csv")
	local measure=(-cpu-busy)
	local pids
	pids=$(proxy_pids "$label")
	[ -n "$pids" ] && measure+=(-proxy-cpu "$pids")
	# The disk's own syncs beside each open row with history: its stalls,
	# told apart from the proxy's.
	if [ "${DISK_PROBE:-1}" = 1 ] && [[ "$label" == recall-*/open ]] && [[ "$label" != recall-nohist/* ]]; then
		measure+=(-disk-probe "$WORK")
	fi
	local tracer=
	if [ "${TRACE:-0}" = 1 ] && [[ "$label" == recall-*/open ]]; then
		# the measured part: from the end of the warm-up, for DUR
		local warm=${WARM%s}
		[[ "$WARM" == *ms ]] && warm=$(awk -v ms="${WARM%ms}" 'BEGIN { print ms / 1000 }')
		# A CPU profile beside the trace puts its samples in it (tracestall
		# lists what they caught in the stalls).
		(sleep "$warm" && core_use >"$WORK/trace-${label//\//-}.core" &&
			{ curl -fsS -o "$WORK/trace-${label//\//-}-cpu.pb" "http://127.0.0.1:$PPROF_PORT/debug/pprof/profile?seconds=${DUR%s}" & } &&
			curl -fsS -o "$WORK/trace-${label//\//-}.out" "http://127.0.0.1:$PPROF_PORT/debug/pprof/trace?seconds=${DUR%s}" &&
			core_use >>"$WORK/trace-${label//\//-}.core") &
		tracer=$!
	fi
	local profiler= profiler2=
	if [ "${PROFILE:-0}" = 1 ] && [[ "$label" == recall-*/closed || ("${PROFILE_OPEN:-0}" = 1 && "$label" == recall-*/open) ]]; then
		local warm=${WARM%s}
		[[ "$WARM" == *ms ]] && warm=$(awk -v ms="${WARM%ms}" 'BEGIN { print ms / 1000 }')
		# Badger's own counters (expvar, both databases together) around
		# the profile: what a request writes (badger_writes, below).
		(sleep "$warm" && curl -fsS -o "$WORK/vars-${label//\//-}-0.json" "http://127.0.0.1:$PPROF_PORT/debug/vars" &&
			curl -fsS -o "$WORK/profile-${label//\//-}.pb" "http://127.0.0.1:$PPROF_PORT/debug/pprof/profile?seconds=${DUR%s}" &&
			curl -fsS -o "$WORK/vars-${label//\//-}-1.json" "http://127.0.0.1:$PPROF_PORT/debug/vars") &
		profiler=$!
		# recall-pg-2: the second replica too (profile-ROW-b.pb).
		if [[ "$label" == recall-pg-2/* ]]; then
			(sleep "$warm" && curl -fsS -o "$WORK/profile-${label//\//-}-b.pb" "http://127.0.0.1:$PPROF2_PORT/debug/pprof/profile?seconds=${DUR%s}") &
			profiler2=$!
		fi
	fi
	local perfer=
	if [ "${PERF:-0}" = 1 ] && [[ "$label" == */closed ]]; then
		local warm=${WARM%s} secs=${DUR%s}
		[[ "$WARM" == *ms ]] && warm=$(awk -v ms="${WARM%ms}" 'BEGIN { print ms / 1000 }')
		[[ "$DUR" == *ms ]] && secs=$(awk -v ms="${DUR%ms}" 'BEGIN { print ms / 1000 }')
		secs=$(awk -v s="$secs" 'BEGIN { print (s > 6 ? 6 : s) }')
		(sleep "$warm" && perf record -q -a -g -o "$WORK/perf-${label//\//-}.data" -- sleep "$secs" >/dev/null 2>&1) &
		perfer=$!
	fi
	"${LOAD_CPU[@]}" "$BIN/load" -label "$label" -duration "$DUR" -warmup "$WARM" "${samples[@]}" "${measure[@]}" "$@" >>"$RESULTS"
	if [ -n "$perfer" ] && wait "$perfer"; then
		local f=$WORK/perf-${label//\//-} rps
		rps=$(jq -r --arg l "$label" 'select(.label == $l) | .rps' "$RESULTS" | tail -1)
		perf script -i "$f.data" -F cpu,comm,time,ip,sym 2>/dev/null | "$BIN/perfbudget" -rate "$rps" -end load >"$f.txt" || true
		echo "run.sh: $label under perf: $f.txt" >&2
	fi
	if [ -n "$tracer" ] && wait "$tracer"; then
		local t=$WORK/trace-${label//\//-}
		for kind in sync net; do
			go tool trace -pprof=$kind "$t.out" >"$t-$kind.pb" 2>/dev/null &&
				go tool pprof -top -cum -nodecount=40 "$t-$kind.pb" >"$t-$kind.txt" 2>/dev/null || true
		done
		# What held the processor while requests waited (bench/tracestall).
		"$BIN/tracestall" -min 8ms "$t.out" >"$t-stalls.txt" 2>&1 || true
		core_report "$t.core" >>"$t-stalls.txt"
		echo "run.sh: $label traced: $t.out, $t-sync.txt, $t-net.txt, $t-stalls.txt" >&2
	fi
	if [ -n "$profiler" ] && wait "$profiler"; then
		local p=$WORK/profile-${label//\//-}
		{ go tool pprof -top -nodecount=30 "$BIN/recall" "$p.pb" && echo &&
			go tool pprof -top -cum -nodecount=60 "$BIN/recall" "$p.pb"; } >"$p.txt" 2>/dev/null || true
		echo "run.sh: $label profiled: $p.pb, $p.txt" >&2
		badger_writes "$label" "$WORK/vars-${label//\//-}-0.json" "$WORK/vars-${label//\//-}-1.json"
	fi
	if [ -n "$profiler2" ] && wait "$profiler2"; then
		echo "run.sh: $label profiled (second replica): $WORK/profile-${label//\//-}-b.pb" >&2
	fi
}

# matrix TARGET URL ARGS...: closed and open loop, non-streaming and streaming.
matrix() {
	local target=$1 url=$2
	shift 2
	load "$target/plain/closed" -url "$url" -concurrency "$CONC" "$@"
	load "$target/plain/open" -url "$url" -rate "$RATE" "$@"
	load "$target/stream/closed" -url "$url" -concurrency "$CONC" -stream "$@"
	load "$target/stream/open" -url "$url" -rate "$RATE" -stream "$@"
}

RECALL_PID=
RECALL_PIDS=() # every Recall started (core_use)
# start_recall DATADIR SYNC [STORE_URL]: start Recall on RECALL_PORT (or
# RECALL_AT), durable writes if SYNC is true, on PostgreSQL if STORE_URL is
# set; RECALL_CONF adds lines to its configuration, UPSTREAM replaces the
# fake upstream, UPSTREAM_PROTOCOL sets its upstream.protocol (default
# openai). NOWAIT=1 returns without waiting for it to listen.
start_recall() {
	local port=${RECALL_AT:-$RECALL_PORT}
	cat >"$WORK/recall-$2.yaml" <<EOF
log_level: warn
sync_writes: $2
${RECALL_CONF:-}
EOF
	local debug=()
	[ "${TRACE:-0}" = 1 ] && [ -z "${RECALL_AT:-}" ] && debug=(GODEBUG=gctrace=1 RECALL_PPROF=127.0.0.1:$PPROF_PORT)
	# BADGER_METRICS=side counts the side database's writes (badger_writes)
	# instead of the main one's.
	[ "${PROFILE:-0}" = 1 ] && [ "${TRACE:-0}" != 1 ] && [ -z "${RECALL_AT:-}" ] && debug=(RECALL_PPROF=127.0.0.1:$PPROF_PORT RECALL_BADGER_METRICS=${BADGER_METRICS:-main})
	[ "${PROFILE:-0}" = 1 ] && [ "${TRACE:-0}" != 1 ] && [ "${RECALL_AT:-}" = "$RECALL2_PORT" ] && debug=(RECALL_PPROF=127.0.0.1:$PPROF2_PORT)
	env "${debug[@]}" RECALL_LISTEN=127.0.0.1:$port RECALL_UPSTREAM_URL=${UPSTREAM:-http://127.0.0.1:$UP_PORT/v1} \
		RECALL_DATA_DIR=$1 RECALL_CONFIG=$WORK/recall-$2.yaml RECALL_STORE_URL=${3:-} \
		RECALL_REPLICA_URL=${REPLICA:+http://127.0.0.1:$port} \
		RECALL_UPSTREAM_PROTOCOL=${UPSTREAM_PROTOCOL:-openai} \
		"${PROXY_CPU[@]}" "${RECALL_BIN:-$BIN/recall}" serve 2>>"$WORK/recall.log" &
	RECALL_PID=$!
	PIDS+=("$RECALL_PID")
	RECALL_PIDS+=("$RECALL_PID")
	[ -n "${NOWAIT:-}" ] || wait_http "http://127.0.0.1:$port/healthz"
}

# cold_start TARGET PROTOCOL DATADIR SYNC: start Recall as start_recall
# does and record, as coldstart/TARGET, the time from its start to the
# first answered request in one of the seeded conversations (PROTOCOL's
# API): what a restarted replica costs before it serves.
cold_start() {
	local target=$1 proto=$2 path
	shift 2
	path=/v1/$proto
	case $proto in
	chat) path=$URL ;;
	gemini) path=/v1beta/models ;;
	esac
	local t0
	t0=$(date +%s%N)
	NOWAIT=1 start_recall "$@"
	"${LOAD_CPU[@]}" "$BIN/load" -cold-start "$t0" -label "coldstart/$target" -protocol "$proto" \
		-url "http://127.0.0.1:${RECALL_AT:-$RECALL_PORT}$path" -conversations 1000 -seeded "$SEED_TURNS" >>"$RESULTS"
	wait_http "http://127.0.0.1:${RECALL_AT:-$RECALL_PORT}/healthz"
}

# summary_counts PORT ROW: what Recall's summary worker did over ROW's
# rows (its metrics: landed, discarded as stale, failed, summariser calls),
# to summaries.txt, under the tables.
summary_counts() {
	curl -fsS "http://127.0.0.1:$1/metrics" 2>/dev/null | awk -v row="$2" '
		/^recall_summaries_total/ {landed += $2}
		/^recall_summaries_stale_total/ {stale += $2}
		/^recall_summary_failures_total/ {failed += $2}
		/^recall_summary_job_calls_sum/ {calls += $2}
		/^recall_summary_job_calls_count/ {attempts += $2}
		END {printf "- %s: %d landed, %d stale, %d failed; %d attempts made %d summariser calls\n", row, landed, stale, failed, attempts, calls}' >>"$WORK/summaries.txt" || true
}

stop_recall() {
	kill "$RECALL_PID"
	wait "$RECALL_PID" || true
	RECALL_PID=
}

# seed DIR CONVERSATIONS TURNS [PROTOCOL]: write turns straight into a data
# dir, stored as PROTOCOL's (default chat) as Recall stores its clients'.
seed() {
	"$BIN/load" -seed-dir "$1" -conversations "$2" -prefill "$3" -conv-prefix bench- -summarized="$SUMMARIZED" \
		-protocol "${4:-chat}" 2>>"$WORK/seed.log"
}

URL=/v1/chat/completions
# FAKE_FLAGS (default -fast): the fake answers chat completions, Messages
# and Responses without validating them, so that checking ~60 KB prompts
# does not saturate the core it shares with the load generator
# (FAKE_FLAGS= for the strict fake).
# shellcheck disable=SC2086
"${LOAD_CPU[@]}" "$BIN/fakeupstream" -listen "127.0.0.1:$UP_PORT" ${FAKE_FLAGS--fast} 2>>"$WORK/upstream.log" &
PIDS+=("$!")
wait_port "$UP_PORT"

echo "running: duration $DUR (+ $WARM warm-up) per row" >&2
if want direct; then
	matrix direct "http://127.0.0.1:$UP_PORT$URL"
	matrix "direct-ctx$SEED_TURNS" "http://127.0.0.1:$UP_PORT$URL" -context-turns "$SEED_TURNS"
fi

if [ -n "$NGINX" ] && { want nginx || want ceiling || pair_wanted ctx50 || pair_wanted durable-ctx50 ||
	pair_wanted store-ctx50 || pair_wanted badger-ctx50; }; then
	mkdir -p "$WORK/nginx"
	{
		nginx_head "$WORK/nginx" "$NGINX_WORKERS"
		cat <<EOF
	client_body_buffer_size 1m; # bodies in memory, as Recall keeps them
	upstream fake { server 127.0.0.1:$UP_PORT; keepalive 128; }
	server {
		listen 127.0.0.1:$NGINX_PORT;
		location / {
			proxy_pass http://fake;
			proxy_http_version 1.1;
			proxy_set_header Connection "";
			proxy_buffering off;
		}
	}
}
EOF
	} >"$WORK/nginx/nginx.conf"
	"${PROXY_CPU[@]}" "$NGINX" -c "$WORK/nginx/nginx.conf" -e "$WORK/nginx/error.log" 2>>"$WORK/nginx/error.log" &
	PIDS+=("$!")
	NGINX_PID=$!
	wait_port "$NGINX_PORT"
	if want nginx; then
		matrix nginx "http://127.0.0.1:$NGINX_PORT$URL"
		# The same context size as the history rows, resent by a stateless client.
		matrix "nginx-ctx$SEED_TURNS" "http://127.0.0.1:$NGINX_PORT$URL" -context-turns "$SEED_TURNS"
	fi
fi

# floor-ctxN: bench/bareproxy sending the nginx-ctxN row's context
# upstream from memory (-body), driven as the history rows are (the client
# sends only its new message, naming one of 1,000 conversations): a Go
# proxy that kept the conversation and did nothing else. Above it, what
# the context's second leg costs a fasthttp proxy against nginx; between
# it and recall-sync, what Recall's own work costs.
if want floor; then
	"$BIN/load" -print-body -context-turns "$SEED_TURNS" >"$WORK/ctx.json"
	"$BIN/load" -print-body -context-turns "$SEED_TURNS" -stream >"$WORK/ctx-stream.json"
	"${PROXY_CPU[@]}" "$BIN/bareproxy" -listen "127.0.0.1:$BARE_PORT" -upstream "http://127.0.0.1:$UP_PORT" \
		-body "$WORK/ctx.json" -stream-body "$WORK/ctx-stream.json" 2>>"$WORK/bareproxy.log" &
	FLOOR_PID=$!
	PIDS+=("$FLOOR_PID")
	wait_port "$BARE_PORT"
	matrix "floor-ctx$SEED_TURNS" "http://127.0.0.1:$BARE_PORT$URL" -conversations 1000
	kill "$FLOOR_PID"
	wait "$FLOOR_PID" 2>/dev/null || true
	FLOOR_PID=
fi

# Recall's rows also read its own added time from its metrics, free of
# the load generator's queueing on the core it shares with the upstream.
RECALL_METRICS="http://127.0.0.1:$RECALL_PORT/metrics"
if want nohist; then
	start_recall "$WORK/data-nohist" true
	matrix recall-nohist "http://127.0.0.1:$RECALL_PORT$URL" -metrics "$RECALL_METRICS"
	stop_recall
fi

for mode in sync relaxed; do
	want "$mode" || continue
	sync=true
	[ "$mode" = relaxed ] && sync=false
	seed "$WORK/data-$mode" 1000 "$SEED_TURNS"
	cold_start "recall-$mode" chat "$WORK/data-$mode" "$sync"
	matrix "recall-$mode" "http://127.0.0.1:$RECALL_PORT$URL" -conversations 1000 -seeded "$SEED_TURNS" -metrics "$RECALL_METRICS" -pid "$RECALL_PID"
	summary_counts "$RECALL_PORT" "recall-$mode"
	stop_recall
done

# recall-sync through the Responses API, Messages and Gemini, each native
# and bridged to chat completions, closed loop, non-streamed and streamed:
# what the seam (translation, rendering) costs over the chat row above,
# with the native rows' peak RSS and cold start (the protocol matrix).
# The conversations are seeded in the row's protocol, once per protocol
# and copied for its second row.
for row in "responses openai responses" "responses chat responses-bridged" \
	"messages anthropic messages" "messages openai messages-bridged" \
	"gemini gemini gemini" "gemini openai gemini-bridged"; do
	want protocols || break
	read -r proto upstream name <<<"$row"
	path=/v1/$proto
	[ "$proto" = gemini ] && path=/v1beta/models # bench/load adds /{model}:generateContent
	[ -d "$WORK/seed-$proto" ] || seed "$WORK/seed-$proto" 1000 "$SEED_TURNS" "$proto"
	cp -a "$WORK/seed-$proto" "$WORK/data-$name"
	UPSTREAM_PROTOCOL=$upstream cold_start "recall-sync-$name" "$proto" "$WORK/data-$name" true
	for kind in plain stream; do
		stream=()
		[ "$kind" = stream ] && stream=(-stream)
		load "recall-sync-$name/$kind/closed" -protocol "$proto" -url "http://127.0.0.1:$RECALL_PORT$path" \
			-concurrency "$CONC" -conversations 1000 -seeded "$SEED_TURNS" -pid "$RECALL_PID" "${stream[@]}"
	done
	stop_recall
	rm -rf "$WORK/data-$name"
done

# pairs: a row against its baseline, closed loop, in alternating slices
# of PAIR_DUR (2s, after 500ms of warm-up), after each side's PAIR_WARMUP
# (2s; pg-2 6s) unmeasured, PAIR_ROUNDS (3) rounds of four
# slices (the baseline and the row, non-streamed then streamed; every
# other round the row first). Both run side by side on the proxy's core,
# each on its own copy of its seeded conversations, and only one takes
# load at a time. This machine's speed moves by up to 2x within a minute,
# which rows run one after the other cannot tell from their own costs: a
# ratio of two slices seconds apart can. The rows: each protocol's
# (chat, responses, responses-bridged, messages, messages-bridged, gemini,
# gemini-bridged, and chat-bridged: chat completions to an Anthropic
# upstream) against the chat row, the first of them, chat against
# chat, the method's own bias; ctx50, recall-sync against nginx-ctx50
# (nginx needed); pg-2, recall-pg-2's two replicas against recall-pg, on
# two databases of the recall-pg rows' server (PostgreSQL needed); sync-2,
# two unshared recall-syncs against one (below). The
# report's "Pairs" table gives each row's median ratio over the rounds.
# PAIR_ROWS, a comma list of the rows' names, runs just those;
# PAIR_FIRST=row starts a protocol row's Recall before the chat one's (the
# default starts the chat one first). PAIR_BASE_BIN, another build's
# recall binary, runs the baseline side of every protocol row on it: with
# PAIR_ROWS=chat, a change against the build before it.
#
# pair_rounds ROW BASE_PIDS ROW_PIDS: the rounds, the load generator's
# arguments in the arrays PAIR_BASE and PAIR_ROW (-stream added for the
# streamed slices); the PIDS (comma lists) are whose CPU a request is read.
pair_rounds() {
	local name=$1 base_pids=$2 row_pids=$3 round kind who stream slices
	# Each side's conversations read into its caches first, unmeasured
	# (PAIR_WARMUP closed each, default 2s, 6s for pg-2: its cold replicas
	# made 244-471 req/s): a cold side's first slice would otherwise stand
	# for its round.
	local warm=${PAIR_WARMUP:-2s}
	[ "$name" = pg-2 ] || [ "$name" = pg-apart ] && warm=${PAIR_WARMUP:-6s}
	"${LOAD_CPU[@]}" "$BIN/load" -label "pairs-$name/warm-up/base" -duration "$warm" -warmup 0s "${PAIR_BASE[@]}" >/dev/null
	"${LOAD_CPU[@]}" "$BIN/load" -label "pairs-$name/warm-up/row" -duration "$warm" -warmup 0s "${PAIR_ROW[@]}" >/dev/null
	for round in $(seq "${PAIR_ROUNDS:-3}"); do
		for kind in plain stream; do
			stream=()
			[ "$kind" = stream ] && stream=(-stream)
			slices=(base row)
			[ $((round % 2)) = 0 ] && slices=(row base)
			for who in "${slices[@]}"; do
				if [ "$who" = base ]; then
					PAIR_PID=$base_pids DUR=${PAIR_DUR:-2s} WARM=500ms load "pairs-$name/$round/base/$kind" "${PAIR_BASE[@]}" "${stream[@]}"
				else
					PAIR_PID=$row_pids DUR=${PAIR_DUR:-2s} WARM=500ms load "pairs-$name/$round/row/$kind" "${PAIR_ROW[@]}" "${stream[@]}"
				fi
			done
		done
	done
}

# stop_pair PID...: stops a pairs row's Recall processes.
stop_pair() {
	local pid
	for pid in "$@"; do
		kill "$pid"
		wait "$pid" || true
	done
	RECALL_PID=
}

if pair_wanted ctx50 && [ -n "${NGINX_PID:-}" ]; then
	[ -d "$WORK/seed-chat" ] || seed "$WORK/seed-chat" 1000 "$SEED_TURNS"
	rm -rf "$WORK/data-pair-ctx50"
	cp -a "$WORK/seed-chat" "$WORK/data-pair-ctx50"
	start_recall "$WORK/data-pair-ctx50" true
	PAIR_BASE=(-url "http://127.0.0.1:$NGINX_PORT$URL" -concurrency "$CONC" -context-turns "$SEED_TURNS")
	PAIR_ROW=(-url "http://127.0.0.1:$RECALL_PORT$URL" -concurrency "$CONC" -conversations 1000 -seeded "$SEED_TURNS")
	pair_rounds ctx50 "$NGINX_PID" "$RECALL_PID"
	stop_recall
	rm -rf "$WORK/data-pair-ctx50"
elif pair_wanted ctx50; then
	echo "run.sh: no nginx: skipping the pairs' ctx50 row" >&2
fi

# The floor pairs: nginx-ctx50 against bench/bareproxy keeping the context
# in memory (-body, as floor-ctx50) and each answered turn before the
# answer goes back, against a client that resends the context.
#
# - durable-ctx50 (-durable): appended to a file in the work directory
#   and fsynced in groups: the least a proxy that keeps conversations
#   durably does. Recall's ctx50 ratio over this one's is what its own
#   work costs beyond durability.
# - store-ctx50 (-store): committed to Recall's own embedded store (a
#   durable commit of the turn's two messages, as Recall's after an
#   answer): the least a proxy on Recall's store does. Recall's ctx50
#   ratio over this one's is what its work costs beyond forwarding and
#   the store's commit.
# - badger-ctx50 (-badger): written to a Badger database of bareproxy's
#   own in three entries with Badger's own durable mode (SyncWrites): what
#   the store would cost on that mode.
#
# floor_pair ROW FLAG PATH runs ROW with bareproxy FLAG PATH, PATH removed
# before and after.
floor_pair() {
	local row=$1 flag=$2 path=$3
	pair_wanted "$row" || return 0
	if [ -z "${NGINX_PID:-}" ]; then
		echo "run.sh: no nginx: skipping the pairs' $row row" >&2
		return 0
	fi
	[ -s "$WORK/ctx.json" ] || "$BIN/load" -print-body -context-turns "$SEED_TURNS" >"$WORK/ctx.json"
	[ -s "$WORK/ctx-stream.json" ] || "$BIN/load" -print-body -context-turns "$SEED_TURNS" -stream >"$WORK/ctx-stream.json"
	rm -rf "$path"
	"${PROXY_CPU[@]}" "$BIN/bareproxy" -listen "127.0.0.1:$BARE_PORT" -upstream "http://127.0.0.1:$UP_PORT" \
		-body "$WORK/ctx.json" -stream-body "$WORK/ctx-stream.json" "$flag" "$path" 2>>"$WORK/bareproxy.log" &
	FLOOR_PID=$!
	PIDS+=("$FLOOR_PID")
	wait_port "$BARE_PORT"
	PAIR_BASE=(-url "http://127.0.0.1:$NGINX_PORT$URL" -concurrency "$CONC" -context-turns "$SEED_TURNS")
	PAIR_ROW=(-url "http://127.0.0.1:$BARE_PORT$URL" -concurrency "$CONC" -conversations 1000)
	pair_rounds "$row" "$NGINX_PID" "$FLOOR_PID"
	kill "$FLOOR_PID"
	wait "$FLOOR_PID" 2>/dev/null || true
	FLOOR_PID=
	rm -rf "$path"
}
floor_pair durable-ctx50 -durable "$WORK/turns.log"
floor_pair store-ctx50 -store "$WORK/data-floor-store"
floor_pair badger-ctx50 -badger "$WORK/data-floor-badger"

# sync-2: two recall-sync processes, each on a copy of the seeded
# conversations and sharing nothing, each conversation's requests all to
# one of them (load -affinity), against one recall-sync: what splitting
# the proxy's core between two processes costs with no coordination at
# all, the floor under recall-pg-2's ratio to recall-pg.
if pair_wanted sync-2; then
	[ -d "$WORK/seed-chat" ] || seed "$WORK/seed-chat" 1000 "$SEED_TURNS"
	for d in base a b; do
		rm -rf "$WORK/data-pair-sync2-$d"
		cp -a "$WORK/seed-chat" "$WORK/data-pair-sync2-$d"
	done
	start_recall "$WORK/data-pair-sync2-base" true
	single=$RECALL_PID
	RECALL_AT=$RECALL2_PORT start_recall "$WORK/data-pair-sync2-a" true
	replica_a=$RECALL_PID
	RECALL_AT=$RECALL3_PORT start_recall "$WORK/data-pair-sync2-b" true
	replica_b=$RECALL_PID
	PAIR_BASE=(-url "http://127.0.0.1:$RECALL_PORT$URL" -concurrency "$CONC" -conversations 1000 -seeded "$SEED_TURNS")
	PAIR_ROW=(-url "http://127.0.0.1:$RECALL2_PORT$URL,http://127.0.0.1:$RECALL3_PORT$URL" -concurrency "$CONC"
		-conversations 1000 -seeded "$SEED_TURNS" -affinity)
	pair_rounds sync-2 "$single" "$replica_a,$replica_b"
	stop_pair "$single" "$replica_a" "$replica_b"
	rm -rf "$WORK"/data-pair-sync2-*
fi

for row in "chat openai chat" "responses openai responses" "responses chat responses-bridged" \
	"messages anthropic messages" "messages openai messages-bridged" \
	"gemini gemini gemini" "gemini openai gemini-bridged" "chat anthropic chat-bridged"; do
	read -r proto upstream name <<<"$row"
	pair_wanted "$name" || continue
	path=/v1/$proto
	[ "$proto" = gemini ] && path=/v1beta/models
	[ "$proto" = chat ] && path=$URL
	[ -d "$WORK/seed-chat" ] || seed "$WORK/seed-chat" 1000 "$SEED_TURNS"
	[ -d "$WORK/seed-$proto" ] || seed "$WORK/seed-$proto" 1000 "$SEED_TURNS" "$proto"
	rm -rf "$WORK/data-pair-base" "$WORK/data-pair-$name"
	cp -a "$WORK/seed-chat" "$WORK/data-pair-base"
	cp -a "$WORK/seed-$proto" "$WORK/data-pair-$name"
	if [ "${PAIR_FIRST:-chat}" = row ]; then
		UPSTREAM_PROTOCOL=$upstream RECALL_AT=$RECALL2_PORT start_recall "$WORK/data-pair-$name" true
		row_pid=$RECALL_PID
		RECALL_BIN=${PAIR_BASE_BIN:-} start_recall "$WORK/data-pair-base" true
		chat_pid=$RECALL_PID
	else
		RECALL_BIN=${PAIR_BASE_BIN:-} start_recall "$WORK/data-pair-base" true
		chat_pid=$RECALL_PID
		UPSTREAM_PROTOCOL=$upstream RECALL_AT=$RECALL2_PORT start_recall "$WORK/data-pair-$name" true
		row_pid=$RECALL_PID
	fi
	# Each slice's log syncs from its own Recall's metrics.
	PAIR_BASE=(-url "http://127.0.0.1:$RECALL_PORT$URL" -concurrency "$CONC" -conversations 1000 -seeded "$SEED_TURNS" -metrics "http://127.0.0.1:$RECALL_PORT/metrics")
	PAIR_ROW=(-protocol "$proto" -url "http://127.0.0.1:$RECALL2_PORT$path" -concurrency "$CONC" -conversations 1000 -seeded "$SEED_TURNS" -metrics "http://127.0.0.1:$RECALL2_PORT/metrics")
	pair_rounds "$name" "$chat_pid" "$row_pid"
	stop_pair "$chat_pid" "$row_pid"
	rm -rf "$WORK/data-pair-base" "$WORK/data-pair-$name"
done

# pg_floor: the pgbench runs of the recall-pg rows' statements alone (see
# there).
pg_floor() {
	local tenant secs
	sql() { "$PG_BIN/psql" -qAtX -h 127.0.0.1 -p "$PG_PORT" -U postgres -c "$1"; }
	if ! tenant=$(sql "SELECT tenant FROM recall_conversations WHERE conversation = 'bench-0'") || [ -z "$tenant" ]; then
		echo "run.sh: no seeded conversation for the floor's statements" >&2
		return 0
	fi
	{
		printf '\\set c random(0, 999)\n'
		echo "WITH head AS (UPDATE recall_conversations SET version = version + 1, updated_at = updated_at + 1, meta = meta,"
		echo "  docs = docs + 2, terms = terms + 2 * 60 WHERE tenant = '$tenant' AND conversation = 'bench-' || :c RETURNING version),"
		echo "msgs AS (INSERT INTO recall_messages (tenant, conversation, seq, dl, created_at, body, tsv)"
		sql "SELECT format('  SELECT %L, %L || :c, 1000000000 + head.version * 2 + g, %s, 0, %L::bytea, %L::tsvector FROM head, generate_series(0, 1) g)',
			'$tenant', 'bench-', dl, body, tsv::text) FROM recall_messages WHERE tenant = '$tenant' AND seq <= $((SEED_TURNS * 2))
			ORDER BY octet_length(body) OFFSET (SELECT count(*) / 2 FROM recall_messages WHERE tenant = '$tenant' AND seq <= $((SEED_TURNS * 2))) LIMIT 1" || true
		echo "SELECT count(*) FROM head;"
	} >"$WORK/pg-floor-turn.sql"
	{
		printf '\\set c random(0, 999)\n'
		echo "UPDATE recall_conversations SET version = version + 1, updated_at = updated_at + 1, meta = meta WHERE tenant = '$tenant' AND conversation = 'bench-' || :c;"
	} >"$WORK/pg-floor-update.sql"
	echo "SELECT 1;" >"$WORK/pg-floor-select.sql"
	secs=${DUR%s}
	[[ "$secs" =~ ^[0-9]+$ ]] || secs=10
	for f in turn update select; do
		local c0 c1 out
		# A failure here costs the floor's line, not the run's tables.
		if ! c0=$("$BIN/load" -cpu-now "$PG_PID") ||
			! out=$("${PROXY_CPU[@]}" "$PG_BIN/pgbench" -h 127.0.0.1 -p "$PG_PORT" -U postgres -n -M prepared -c 10 -j 1 -T "$secs" \
				-f "$WORK/pg-floor-$f.sql" postgres 2>>"$WORK/pg.log") ||
			! c1=$("$BIN/load" -cpu-now "$PG_PID"); then
			echo "run.sh: the floor's $f run failed (see $WORK/pg.log)" >&2
			continue
		fi
		echo "$out" | awk -v f="$f" -v ms=$((c1 - c0)) \
			'/^number of transactions actually processed/ {split($0, a, ": "); split(a[2], b, "/"); n = b[1]} /^tps/ {tps = $3} END {printf "%s %.0f %.3f\n", f, tps, n ? ms / n : 0}' \
			>>"$WORK/pg-floor.txt"
	done
}

# recall-pg: recall-sync's rows with the store on PostgreSQL, a private
# server sharing the load generator's core (PG_CPU=proxy: the proxy's
# core, where recall-sync's store, Badger, runs inside Recall).
PG_BIN=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1 || true)
if ! want pg && ! pair_wanted pg-2 && ! pair_wanted pg-apart; then
	:
elif [ -n "$PG_BIN" ] && [ -x "$PG_BIN/postgres" ]; then
	PGDIR=$WORK/pg
	mkdir -p "$PGDIR"
	AS_PG=()
	if [ "$(id -u)" = 0 ]; then
		chmod o+x "$WORK" && chown postgres "$PGDIR" # PostgreSQL refuses to run as root
		AS_PG=(setpriv --reuid=postgres --regid=postgres --init-groups)
	fi
	"${AS_PG[@]}" "$PG_BIN/initdb" -D "$PGDIR/data" --auth=trust -U postgres -E UTF8 --locale=C >>"$WORK/pg.log" 2>&1
	PG_PIN=("${LOAD_CPU[@]}")
	[ "${PG_CPU:-load}" = proxy ] && PG_PIN=("${PROXY_CPU[@]}")
	"${PG_PIN[@]}" "${AS_PG[@]}" "$PG_BIN/postgres" -D "$PGDIR/data" -p "$PG_PORT" -k "$PGDIR" \
		-c listen_addresses=127.0.0.1 -c shared_buffers=256MB \
		-c max_wal_size=8GB -c checkpoint_timeout=30min \
		-c log_min_duration_statement=100 -c log_autovacuum_min_duration=0 -c log_line_prefix='%m [%p] %d ' \
		${PG_CONF:-} >>"$WORK/pg.log" 2>&1 &
	PG_PID=$! # taskset and setpriv exec: the postmaster
	PIDS+=("$PG_PID")
	for _ in $(seq 100); do
		"$PG_BIN/pg_isready" -q -h 127.0.0.1 -p "$PG_PORT" && break
		sleep 0.1
	done
	PG_URL="postgres://postgres@127.0.0.1:$PG_PORT/postgres?sslmode=disable"
	# PG_STATS=1: the recall-pg rows' statements by total time, from
	# pg_stat_statements (PG_CONF must preload it), into pg-statements.txt;
	# plans and their time with -c pg_stat_statements.track_planning=on.
	# pg_stats_reset [DB] and pg_stats_dump FILE [DB]: DB is the row's
	# database (default postgres), whose transactions are counted.
	pg_stats_reset() {
		[ "${PG_STATS:-0}" = 1 ] || return 0
		"$PG_BIN/psql" -q -h 127.0.0.1 -p "$PG_PORT" -U postgres -d "${1:-postgres}" -c 'CREATE EXTENSION IF NOT EXISTS pg_stat_statements' \
			-c 'SELECT pg_stat_statements_reset()' -c "SELECT pg_stat_reset_shared('wal')" -c 'SELECT pg_stat_reset()' >/dev/null
	}
	pg_stats_dump() {
		[ "${PG_STATS:-0}" = 1 ] || return 0
		"$PG_BIN/psql" -h 127.0.0.1 -p "$PG_PORT" -U postgres -d "${2:-postgres}" -c "SELECT calls, plans, round(total_plan_time::numeric, 1) AS plan_ms, round(total_exec_time::numeric, 1) AS total_ms,
	round(mean_exec_time::numeric, 3) AS mean_ms, rows, shared_blks_hit + shared_blks_read AS blks, wal_bytes,
	regexp_replace(left(query, 110), '\s+', ' ', 'g') AS query
FROM pg_stat_statements ORDER BY total_exec_time DESC LIMIT 25" \
			-c "SELECT xact_commit, xact_rollback FROM pg_stat_database WHERE datname = current_database()" \
			-c "SELECT wal_records, wal_bytes, wal_write, wal_sync, round(wal_sync_time::numeric, 1) AS wal_sync_ms FROM pg_stat_wal" >"$1"
	}
	# pg_settle DB: vacuum and analyze DB and write out the dirty pages,
	# so that a row starts on a settled database: without it the
	# autovacuum of a freshly seeded database (or of the database the
	# rows before left) and the writing out of its pages fell in the
	# next rows, on the core the server shares (docs/performance.md).
	pg_settle() {
		"$PG_BIN/psql" -qX -h 127.0.0.1 -p "$PG_PORT" -U postgres -d "$1" -c 'VACUUM (ANALYZE)' -c 'CHECKPOINT' >/dev/null
	}
	# await_replicas PORT...: until each replica sees the other (the
	# fleet's heartbeat, every second, up to 5 s): until then each serves
	# what it thinks it owns.
	await_replicas() {
		local port
		for port in "$@"; do
			for _ in $(seq 50); do
				curl -fsS "http://127.0.0.1:$port/metrics" 2>/dev/null | grep -q '^recall_replicas 2$' && break
				sleep 0.1
			done
		done
	}
	# pg_seed DB: a database of its own, seeded as recall-pg's, settled.
	pg_seed() {
		"$PG_BIN/psql" -qX -h 127.0.0.1 -p "$PG_PORT" -U postgres -c "CREATE DATABASE $1" >/dev/null
		"$BIN/load" -seed-url "postgres://postgres@127.0.0.1:$PG_PORT/$1?sslmode=disable" -conversations 1000 -prefill "$SEED_TURNS" \
			-conv-prefix bench- -summarized="$SUMMARIZED" 2>>"$WORK/seed.log"
		pg_settle "$1"
	}
	if want pg; then
		"$BIN/load" -seed-url "$PG_URL" -conversations 1000 -prefill "$SEED_TURNS" -conv-prefix bench- -summarized="$SUMMARIZED" 2>>"$WORK/seed.log"
		pg_settle postgres
		pg_stats_reset
		PG_LOG_FROM=$(wc -l <"$WORK/pg.log")
		start_recall "$WORK/data-pg" true "$PG_URL"
		matrix recall-pg "http://127.0.0.1:$RECALL_PORT$URL" -conversations 1000 -seeded "$SEED_TURNS" -metrics "$RECALL_METRICS" -cpu "$PG_PID"
		summary_counts "$RECALL_PORT" recall-pg
		stop_recall
		pg_stats_dump "$WORK/pg-statements.txt"
		pg_settle postgres
		# Two replicas, both on the proxy's core, sharing a database of their
		# own seeded as recall-pg's was: the rows start from the same
		# conversations, not recall-pg-2 from the ~70,000 turns recall-pg
		# added in a full run (a larger table, search index and exchange log).
		pg_seed recall2
		PG_URL2="postgres://postgres@127.0.0.1:$PG_PORT/recall2?sslmode=disable"
		pg_stats_reset recall2
		# AFFINITY=1: a balancer's affinity instead of forwarding (each
		# conversation's requests all to one replica, no replica_url).
		replica=1 affinity=()
		[ "${AFFINITY:-0}" = 1 ] && replica= affinity=(-affinity)
		REPLICA=$replica start_recall "$WORK/data-pg-2a" true "$PG_URL2"
		first=$RECALL_PID
		REPLICA=$replica RECALL_AT=$RECALL2_PORT start_recall "$WORK/data-pg-2b" true "$PG_URL2"
		# Measured once each replica sees the other (the fleet's heartbeat,
		# every second): until then each serves what it thinks it owns.
		[ -n "$replica" ] && await_replicas "$RECALL_PORT" "$RECALL2_PORT"
		matrix recall-pg-2 "http://127.0.0.1:$RECALL_PORT$URL,http://127.0.0.1:$RECALL2_PORT$URL" -conversations 1000 -seeded "$SEED_TURNS" \
			-metrics "$RECALL_METRICS,http://127.0.0.1:$RECALL2_PORT/metrics" -cpu "$PG_PID" "${affinity[@]}"
		# What each replica did with the requests it did not own, over the
		# rows (recall_forwarded_requests_total), under the tables.
		for port in "$RECALL_PORT" "$RECALL2_PORT"; do
			curl -fsS "http://127.0.0.1:$port/metrics" 2>/dev/null | awk -v port="$port" \
				'/^recall_forwarded_requests_total/ {gsub(/.*outcome="|"}/, "", $1); printf "%s%s %s", sep, $1, $2; sep = ", "} END {if (sep) print ""; else print "none"}' |
				sed "s/^/- replica on :$port, requests it did not own: /" >>"$WORK/pg-2-hops.txt" || true
			summary_counts "$port" "recall-pg-2, replica on :$port"
		done
		stop_recall
		RECALL_PID=$first
		stop_recall
		pg_stats_dump "$WORK/pg-2-statements.txt" recall2
		# What the server logged while the rows ran (statements of 100 ms or
		# more, autovacuum, checkpoints), by row, under the tables.
		tail -n +"$((PG_LOG_FROM + 1))" "$WORK/pg.log" >"$WORK/pg-rows.log"
		# The statements alone: PostgreSQL (Recall stopped) running, from
		# the proxy's core, the commit's one statement and less, with pgbench
		# in a closed loop, DUR each, on the database the rows left, with as
		# many clients as Recall's connection pool has (10, its default; 32
		# cost the server 0.07-0.11 ms more a transaction, with the search
		# index and without). turn: the commit's one statement (the conversation's
		# row updated, the turn's two message rows inserted with their search
		# terms, as the seeded messages' median body and terms), one
		# transaction; update: the row's update alone; select: SELECT 1, a
		# round trip. Its processes' CPU a transaction (load -cpu-now) and
		# transactions a second go to pg-floor.txt and under the tables.
		if [ -x "$PG_BIN/pgbench" ]; then
			pg_floor
		fi
	fi
	# The pairs' pg-2 row: recall-pg on a database of its own against
	# recall-pg-2's two replicas (requests alternating, as in its row) on
	# another, both seeded as recall-pg's.
	if pair_wanted pg-2; then
		pg_seed pair_pg
		pg_seed pair_pg2
		start_recall "$WORK/data-pair-pg" true "postgres://postgres@127.0.0.1:$PG_PORT/pair_pg?sslmode=disable"
		single=$RECALL_PID
		# AFFINITY=1 as in the recall-pg-2 row: a balancer's affinity.
		replica=1 affinity=()
		[ "${AFFINITY:-0}" = 1 ] && replica= affinity=(-affinity)
		# NOFORWARD=1: requests still alternating, but no replica_url:
		# each replica serves every request itself under the store's
		# lease (what forwarding saves).
		[ "${NOFORWARD:-0}" = 1 ] && replica=
		REPLICA=$replica RECALL_AT=$RECALL2_PORT start_recall "$WORK/data-pair-pg-2a" true "postgres://postgres@127.0.0.1:$PG_PORT/pair_pg2?sslmode=disable"
		replica_a=$RECALL_PID
		REPLICA=$replica RECALL_AT=$RECALL3_PORT start_recall "$WORK/data-pair-pg-2b" true "postgres://postgres@127.0.0.1:$PG_PORT/pair_pg2?sslmode=disable"
		replica_b=$RECALL_PID
		[ -n "$replica" ] && await_replicas "$RECALL2_PORT" "$RECALL3_PORT"
		PAIR_BASE=(-url "http://127.0.0.1:$RECALL_PORT$URL" -concurrency "$CONC" -conversations 1000 -seeded "$SEED_TURNS" -cpu "$PG_PID")
		PAIR_ROW=(-url "http://127.0.0.1:$RECALL2_PORT$URL,http://127.0.0.1:$RECALL3_PORT$URL" -concurrency "$CONC"
			-conversations 1000 -seeded "$SEED_TURNS" -cpu "$PG_PID" "${affinity[@]}")
		pair_rounds pg-2 "$single" "$replica_a,$replica_b"
		stop_pair "$single" "$replica_a" "$replica_b"
	fi
	# pg-apart: recall-pg against two recall-pg processes on the proxy's
	# core, each on a database of its own and sharing nothing, each
	# conversation's requests all to one of them (load -affinity): what
	# splitting recall-pg's core and commits between two processes costs
	# with no coordination at all, the floor under pg-2's ratio (as sync-2
	# is recall-sync's).
	if want pairs && [[ ",${PAIR_ROWS:-}," == *",pg-apart,"* ]]; then
		for db in apart_pg apart_pga apart_pgb; do
			pg_seed "$db"
		done
		start_recall "$WORK/data-pair-apart" true "postgres://postgres@127.0.0.1:$PG_PORT/apart_pg?sslmode=disable"
		single=$RECALL_PID
		RECALL_AT=$RECALL2_PORT start_recall "$WORK/data-pair-apart-a" true "postgres://postgres@127.0.0.1:$PG_PORT/apart_pga?sslmode=disable"
		replica_a=$RECALL_PID
		RECALL_AT=$RECALL3_PORT start_recall "$WORK/data-pair-apart-b" true "postgres://postgres@127.0.0.1:$PG_PORT/apart_pgb?sslmode=disable"
		replica_b=$RECALL_PID
		PAIR_BASE=(-url "http://127.0.0.1:$RECALL_PORT$URL" -concurrency "$CONC" -conversations 1000 -seeded "$SEED_TURNS" -cpu "$PG_PID")
		PAIR_ROW=(-url "http://127.0.0.1:$RECALL2_PORT$URL,http://127.0.0.1:$RECALL3_PORT$URL" -concurrency "$CONC"
			-conversations 1000 -seeded "$SEED_TURNS" -cpu "$PG_PID" -affinity)
		pair_rounds pg-apart "$single" "$replica_a,$replica_b"
		stop_pair "$single" "$replica_a" "$replica_b"
	fi
else
	echo "PostgreSQL server binaries not found (apt-get install postgresql): skipping the recall-pg rows" >&2
fi

# Cost against stored history length: a few conversations, same budget, a
# rate below saturation (SERIES_RATE, default 200/s) so that the figures
# show per-request cost rather than queueing, and relaxed writes so that
# fsync noise does not hide the read cost. The conversations grow during
# the run: the history column shows the turns actually stored and sent.
for turns in 10 1000 10000; do
	want series || break
	seed "$WORK/data-turns-$turns" 32 "$turns"
	start_recall "$WORK/data-turns-$turns" false
	load "turns-$turns" -url "http://127.0.0.1:$RECALL_PORT$URL" -rate "${SERIES_RATE:-200}" -conversations 32 -seeded "$turns"
	stop_recall
done

# Peak RSS over 10,000 conversations (durable writes, the default), with
# a 64 MiB window cache (and so, by default, a 256 MiB soft heap limit).
if want rss; then
	seed "$WORK/data-rss" 10000 10
	RECALL_CONF="cache_mb: 64" start_recall "$WORK/data-rss" true
	load rss -url "http://127.0.0.1:$RECALL_PORT$URL" -concurrency "$CONC" -conversations 10000 -seeded 10 -pid "$RECALL_PID"
	stop_recall
fi

# The proxy ceiling: wrk against nginx and Recall (no history) in front of
# an nginx answering every request from memory, on the load generator's
# core; the proxy under test alone on CPU 0 as above.
if [ -n "$WRK" ] && [ -n "$NGINX" ] && want ceiling; then
	mkdir -p "$WORK/static" "$WORK/nginx-wrk"
	{
		nginx_head "$WORK/static" 1
		cat <<EOF
	keepalive_requests 1000000;
	server {
		listen 127.0.0.1:$STATIC_PORT;
		location / {
			default_type application/json;
			return 200 '{"id":"chatcmpl-1","object":"chat.completion","created":1700000000,"model":"gpt-4o-mini","choices":[{"index":0,"message":{"role":"assistant","content":"Hello there."},"finish_reason":"stop"}],"usage":{"prompt_tokens":12,"completion_tokens":3,"total_tokens":15}}';
		}
	}
}
EOF
	} >"$WORK/static/nginx.conf"
	sed -e "s|$WORK/nginx/|$WORK/nginx-wrk/|g" -e "s|127.0.0.1:$UP_PORT;|127.0.0.1:$STATIC_PORT;|" \
		-e "s|listen 127.0.0.1:$NGINX_PORT;|listen 127.0.0.1:$NGINX_WRK_PORT;|" \
		-e "s|keepalive 128;|keepalive 128; keepalive_requests 1000000;|" "$WORK/nginx/nginx.conf" >"$WORK/nginx-wrk/nginx.conf"
	"${LOAD_CPU[@]}" "$NGINX" -c "$WORK/static/nginx.conf" -e "$WORK/static/error.log" 2>>"$WORK/static/error.log" &
	PIDS+=("$!")
	"${PROXY_CPU[@]}" "$NGINX" -c "$WORK/nginx-wrk/nginx.conf" -e "$WORK/nginx-wrk/error.log" 2>>"$WORK/nginx-wrk/error.log" &
	PIDS+=("$!")
	wait_port "$STATIC_PORT"
	wait_port "$NGINX_WRK_PORT"
	cat >"$WORK/post.lua" <<'EOF'
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
wrk.headers["Authorization"] = "Bearer sk-bench"
wrk.body = '{"model":"gpt-4o-mini","messages":[{"role":"user","content":"Say hello in one short sentence, please."}]}'
EOF
	# ceiling LABEL URL: a warm-up, then a measured wrk run as a result line.
	ceiling() {
		"${LOAD_CPU[@]}" "$WRK" -t1 -c"$CONC" -d1s -s "$WORK/post.lua" "$2" >/dev/null
		"${LOAD_CPU[@]}" "$WRK" -t1 -c"$CONC" -d"$WRK_DUR" --latency -s "$WORK/post.lua" "$2" >"$WORK/wrk-$1.txt"
		"$BIN/load" -wrk "$WORK/wrk-$1.txt" -label "wrk/$1" -concurrency "$CONC" >>"$RESULTS"
	}
	WRK_DUR=10s
	[ "$QUICK" = 1 ] && WRK_DUR=2s
	ceiling nginx "http://127.0.0.1:$NGINX_WRK_PORT$URL"
	# fasthttp-bare and recall-nohist: both up on CPU 0, driven in turn,
	# ROUNDS rounds of RWRK_DUR each after a warm-up; each row is its median
	# round. Measured once each, minutes apart, their ratio moved from 0.79
	# to 1.22 between runs of one tree on this kind of machine. Each round's
	# req/s and the process's CPU time a request (/proc/PID/stat) go to
	# ceiling-rounds.txt and under the tables.
	ROUNDS=5 RWRK_DUR=3s
	[ "$QUICK" = 1 ] && ROUNDS=3 RWRK_DUR=1s
	"${PROXY_CPU[@]}" "$BIN/bareproxy" -listen "127.0.0.1:$BARE_PORT" -upstream "http://127.0.0.1:$STATIC_PORT" 2>>"$WORK/bareproxy.log" &
	BARE_PID=$!
	PIDS+=("$BARE_PID")
	wait_port "$BARE_PORT"
	UPSTREAM=http://127.0.0.1:$STATIC_PORT/v1 start_recall "$WORK/data-ceiling" true
	cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
	for target in "fasthttp-bare $BARE_PORT $BARE_PID" "recall-nohist $RECALL_PORT $RECALL_PID"; do
		read -r label port pid <<<"$target"
		"${LOAD_CPU[@]}" "$WRK" -t1 -c"$CONC" -d1s -s "$WORK/post.lua" "http://127.0.0.1:$port$URL" >/dev/null
	done
	for r in $(seq "$ROUNDS"); do
		for target in "fasthttp-bare $BARE_PORT $BARE_PID" "recall-nohist $RECALL_PORT $RECALL_PID"; do
			read -r label port pid <<<"$target"
			t0=$(cpu_ticks "$pid")
			"${LOAD_CPU[@]}" "$WRK" -t1 -c"$CONC" -d"$RWRK_DUR" --latency -s "$WORK/post.lua" "http://127.0.0.1:$port$URL" >"$WORK/wrk-$label-$r.txt"
			t1=$(cpu_ticks "$pid")
			awk -v label="$label" -v r="$r" -v ticks=$((t1 - t0)) -v hz="$(getconf CLK_TCK)" \
				'/requests in/ {n = $1} /Requests\/sec/ {rps = $2} END {printf "%s %d %.0f %.1f\n", label, r, rps, n ? ticks / hz * 1e6 / n : 0}' \
				"$WORK/wrk-$label-$r.txt" >>"$WORK/ceiling-rounds.txt"
		done
	done
	for label in fasthttp-bare recall-nohist; do
		median=$(awk -v l="$label" '$1 == l' "$WORK/ceiling-rounds.txt" | sort -k3,3n | awk '{a[NR] = $2} END {print a[int((NR + 1) / 2)]}')
		"$BIN/load" -wrk "$WORK/wrk-$label-$median.txt" -label "wrk/$label" -concurrency "$CONC" >>"$RESULTS"
	done
	kill "$BARE_PID"
	wait "$BARE_PID" 2>/dev/null || true
	stop_recall
fi

CPU=$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//')
echo
echo "### Recall load script: $(date -u +%Y-%m-%d)"
echo
echo "Machine: $(nproc) cores, ${CPU:-unknown CPU}, $(uname -sr), $(go version | cut -d' ' -f3); nginx: $([ -n "$NGINX" ] && "$NGINX" -v 2>&1 | cut -d/ -f2 || echo none)."
if [ "$PIN" = 1 ]; then
	echo "Pinning: proxy under test alone on CPU 0 (nginx 1 worker; Recall 1 Go processor, 4 while one is held), load generator + fake upstream on CPU 1."
else
	echo "Pinning: none (every process floats over all cores; nginx worker_processes auto)."
fi
echo "Command: ${ONLY:+ONLY=$ONLY }bench/run.sh $*; $DUR per row after $WARM warm-up; closed loop $CONC in flight; open loop $RATE req/s."
echo "History rows: 1,000 conversations seeded with $SEED_TURNS turns (~40-word questions, ~120-word answers), summarised as Recall's defaults leave them (summaries seeded: $SUMMARIZED), growing during the run; default budget (half the model's input window); the client sends only the new message. Recall log level warn, nginx access_log off."
"$BIN/load" -report "$RESULTS"
if [ -s "$WORK/pg-floor.txt" ]; then
	echo
	echo "The recall-pg rows' statements alone: PostgreSQL (Recall stopped) driven by pgbench from the proxy's core, 10 clients (Recall's pool; the cost a transaction moves with the count), $DUR each, durable commits: transactions a second, and the server's CPU a transaction."
	echo
	awk '{d["turn"] = "the commit'"'"'s one statement (the conversation'"'"'s row updated, two median message rows inserted with their search terms)"; d["update"] = "the conversation'"'"'s row updated alone"; d["select"] = "SELECT 1"; printf "- %s: %s tps, %s ms\n", d[$1], $2, $3}' "$WORK/pg-floor.txt"
fi
if [ -s "$WORK/pg-2-hops.txt" ]; then
	echo
	echo "recall-pg-2's replicas, over its rows (forwarded: served by the owner; fallback: served where it landed, the owner unreachable):"
	echo
	cat "$WORK/pg-2-hops.txt"
fi
if [ -s "$WORK/summaries.txt" ]; then
	echo
	echo "The summary worker over each row's runs (attempts: summary job attempts that reached the summariser):"
	echo
	cat "$WORK/summaries.txt"
fi
if [ -s "$WORK/pg-rows.log" ]; then
	echo
	echo "What the PostgreSQL server logged during the recall-pg rows (its own durations: statements of 100 ms or more; a slow COMMIT is the WAL's flush), by row:"
	echo
	awk '
		function row(db) { return db == "recall2" ? "recall-pg-2" : "recall-pg" }
		# statements of run.sh itself (pg_settle, the second database)
		/ LOG:  duration: .* statement: (VACUUM \(ANALYZE\)|CHECKPOINT|CREATE DATABASE)/ { next }
		/ LOG:  duration: / {
			r = row($5); ms = $8 + 0
			kind = "other statements"
			if ($0 ~ /: COMMIT$/) kind = "COMMIT"
			else if ($0 ~ /gin_clean_pending_list|INSERT INTO recall_messages \(tenant, conversation, seq, dl, body\)$/) kind = "the search index merge"
			k = r SUBSEP kind; n[k]++; if (ms > max[k]) max[k] = ms; rows[r] = 1
		}
		/automatic (aggressive )?(vacuum|analyze) of table "/ {
			match($0, /table "[^.]+/); db = substr($0, RSTART + 7, RLENGTH - 7)
			if (db == "postgres" || db == "recall2") { av[row(db)]++; rows[row(db)] = 1 }
		}
		/checkpoint starting: (wal|time)/ { cp++ }
		END {
			split("recall-pg recall-pg-2", order, " ")
			for (i = 1; i <= 2; i++) {
				r = order[i]
				if (!(r in rows)) continue
				line = ""
				for (k in n) { split(k, p, SUBSEP); if (p[1] == r) line = line sprintf("%s%s %d (max %.0f ms)", line == "" ? "" : "; ", p[2], n[k], max[k]) }
				printf "- %s: %s; autovacuum runs %d\n", r, line == "" ? "no statement of 100 ms or more" : line, av[r]
			}
			printf "- checkpoints started during the rows: %d\n", cp
		}' "$WORK/pg-rows.log"
fi
if [ -s "$WORK/ceiling-rounds.txt" ]; then
	echo
	echo "Proxy ceiling, fasthttp-bare and recall-nohist driven in turn ($ROUNDS rounds of $RWRK_DUR; the table's rows are the median rounds): req/s (CPU µs a request) by round:"
	echo
	awk '{r[$1] = r[$1] (r[$1] == "" ? "" : ", ") $3 " (" $4 ")"} END {for (l in r) print "- " l ": " r[l]}' "$WORK/ceiling-rounds.txt" | sort
	# median FIELD LABEL: the median of a column of LABEL's rounds.
	median() { awk -v l="$2" '$1 == l {print $'"$1"'}' "$WORK/ceiling-rounds.txt" | sort -n | awk '{a[NR] = $1} END {print a[int((NR + 1) / 2)]}'; }
	awk -v br="$(median 3 fasthttp-bare)" -v bc="$(median 4 fasthttp-bare)" -v rr="$(median 3 recall-nohist)" -v rc="$(median 4 recall-nohist)" \
		'BEGIN {if (br > 0 && bc > 0) printf "- recall-nohist over fasthttp-bare, medians: %.2fx the req/s, %.2fx the CPU a request\n", rr / br, rc / bc}'
fi

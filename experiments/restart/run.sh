#!/usr/bin/env bash
# Restarting carve daemon under running tenants, on a GPU machine: carve
# daemon (with carve's MPS), an LS (experiments/ls.py: resnet50 at batch 1,
# Poisson requests at $RATE/s, carve run --ls -n 16) and a BE (be.py:
# resnet50 training, images per second, carve run --be) under tide; the LS
# serves $PHASE s undisturbed, then $PHASE s while the daemon is restarted
# $RESTARTS times (SIGTERM, wait for it to exit, start it again, wait until
# it serves). Reported (summary.json; summarize.py): the tenants' exit
# status and errors, the BE's images per second (restart seconds marked),
# the LS's p50/p99 in each phase, each restart's times and whether the new
# daemon adopted MPS, and MPS's control daemon and server pids before and
# after (the same, or the restarts took the tenants off it). About 2 min.
# Usage: [PHASE=20 RESTARTS=3 RATE=200 PORT=19400] run.sh OUT (bin/ built:
# carve, libcarve.so).
set -u
OUT=$(realpath "${1:?usage: run.sh OUT}")
. "$(dirname "$(realpath "$0")")/../common.sh" restart
: "${PHASE:=20}" "${RESTARTS:=3}" "${RATE:=200}" "${PORT:=19400}"
ADDR=127.0.0.1:$PORT
EV=$OUT/events.jsonl
: >"$EV"
now() { date +%s.%N; }
ev() { echo "$1" | tee -a "$EV"; } # one JSON line of what happened

# serving waits until the daemon of pid $1 answers on /status, up to 20 s
serving() {
	T python3 - "$ADDR" "$1" <<'EOF'
import os, sys, time, urllib.request
addr, pid = sys.argv[1], int(sys.argv[2])
deadline = time.time() + 20
while time.time() < deadline:
    try:
        os.kill(pid, 0)
    except OSError:
        sys.exit("the daemon exited before it served")
    try:
        urllib.request.urlopen(f"http://{addr}/status", timeout=1).read()
        sys.exit(0)
    except OSError:
        time.sleep(0.02)
sys.exit("the daemon did not serve /status within 20 s")
EOF
}
# start_daemon starts carve daemon number $1 in the background. DAEMON is
# the pid of its timeout (not T's: a function in the background is a shell
# of its own), which passes SIGTERM on to it and exits with its status.
start_daemon() {
	timeout 300 "$C" daemon --listen "$ADDR" >"$OUT/daemon-$1.log" 2>&1 &
	DAEMON=$!
}
# ended waits up to 20 s for process $1 (a child) to exit; its status, or 124
ended() {
	local i
	for i in $(seq 400); do
		kill -0 "$1" 2>/dev/null || break
		sleep 0.05
	done
	kill -0 "$1" 2>/dev/null && { kill -KILL "$1"; wait "$1"; return 124; }
	wait "$1"
}
# waitline waits up to 120 s for a line $2 in file $1
waitline() {
	local i
	for i in $(seq 1200); do
		grep -qx "$2" "$1" 2>/dev/null && return 0
		sleep 0.1
	done
	echo "no '$2' in $1 within 120 s"
	return 1
}
mps_state() { "$C" mps status -o json | python3 -c 'import json,sys; d=json.load(sys.stdin); print(json.dumps({"event":"mps","when":sys.argv[1],"control":d.get("pid"),"servers":d.get("servers")}))' "$1"; }

device
step carve daemon, with MPS
start_daemon 0
serving "$DAEMON" || exit 1
ev "{\"event\":\"daemon\",\"i\":0,\"ready\":$(now)}"

step the tenants: a BE and an LS under tide
TO=300 T "$C" run --be -- python3 "$E/be.py" --seconds 240 --done-file "$W/done" >"$OUT/be.out" 2>&1 &
BE=$!
TO=300 T "$C" run --ls -n 16 -- python3 "$ROOT/experiments/ls.py" --rate "$RATE" --seconds $((2 * PHASE)) \
	--wait-file "$W/serve" --trace "$OUT/ls-trace.jsonl" --label "LS beside BE, daemon restarted" >"$OUT/ls.out" 2>&1 &
LS=$!
waitline "$OUT/be.out" ready && waitline "$OUT/ls.out" ready || { touch "$W/done"; wait; exit 1; }

step undisturbed, ${PHASE} s
touch "$W/serve"
ev "{\"event\":\"serve\",\"t\":$(now),\"phase\":$PHASE}"
sleep "$PHASE"
mps_state before | tee -a "$EV"

step the daemon restarted $RESTARTS times in ${PHASE} s
gap=$(python3 -c "print(max(1, ($PHASE - 1) / $RESTARTS))")
for i in $(seq "$RESTARTS"); do
	term=$(now)
	kill -TERM "$DAEMON"
	ended "$DAEMON"
	rc=$?
	exited=$(now)
	start_daemon "$i"
	serving "$DAEMON"
	ok=$?
	adopted=false
	grep -q "MPS adopted" "$OUT/daemon-$i.log" && adopted=true
	ev "{\"event\":\"restart\",\"i\":$i,\"term\":$term,\"exited\":$exited,\"ready\":$(now),\"rc\":$rc,\"serving\":$([ $ok = 0 ] && echo true || echo false),\"adopted\":$adopted}"
	[ "$i" -lt "$RESTARTS" ] && sleep "$(python3 -c "print(max(0, $term + $gap - $(now)))")"
done
wait "$LS"
ev "{\"event\":\"tenant\",\"name\":\"ls\",\"rc\":$?,\"t\":$(now)}"
mps_state after | tee -a "$EV"
touch "$W/done"
wait "$BE"
ev "{\"event\":\"tenant\",\"name\":\"be\",\"rc\":$?,\"t\":$(now)}"
T "$C" ls -o json >"$OUT/ls-after.json" 2>&1

step the daemon stopped, MPS with it
kill -TERM "$DAEMON"
ended "$DAEMON"
T "$C" mps stop

step summary
python3 "$E/summarize.py" "$OUT" | tee "$OUT/summary.txt"
step done

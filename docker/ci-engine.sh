#!/usr/bin/env bash
# The Docker engine for tests/system/test_container.py in CI.
#   start: installs what is missing (Debian's docker.io, debootstrap for the test base image, docker-compose for the
#          compose check) and starts dockerd unless an engine already answers.
#   stop:  prints the container test's report and stops the dockerd that `start` started, by its pid.
set -euo pipefail
cd "$(dirname "$0")/.."

PIDFILE="${FOCUS_DOCKERD_PIDFILE:-/tmp/focus-eval-dockerd.pid}"
LOG="${PIDFILE%.pid}.log"
REPORT=.cache/container/report.json

start() {
    local missing=()
    command -v dockerd >/dev/null 2>&1 || missing+=(docker.io)
    command -v debootstrap >/dev/null 2>&1 || missing+=(debootstrap)
    command -v docker-compose >/dev/null 2>&1 || docker compose version >/dev/null 2>&1 || missing+=(docker-compose)
    if ((${#missing[@]})); then
        echo "ci-engine: installing ${missing[*]}"
        apt-get update -qq
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
    fi
    rm -f "$REPORT"
    if docker info >/dev/null 2>&1; then
        echo "ci-engine: a Docker engine already answers; using it"
        return
    fi
    nohup dockerd >"$LOG" 2>&1 &
    echo $! >"$PIDFILE"
    for _ in $(seq 60); do
        if docker info >/dev/null 2>&1; then
            echo "ci-engine: dockerd started (pid $(cat "$PIDFILE"))"
            return
        fi
        sleep 1
    done
    echo "ci-engine: dockerd did not answer within 60 s; its log ends:" >&2
    tail -n 20 "$LOG" >&2
    exit 1
}

stop() {
    if [[ -f "$REPORT" ]]; then
        echo "ci-engine: container test report ($REPORT):"
        cat "$REPORT"
    fi
    [[ -f "$PIDFILE" ]] || return 0
    local pid
    pid="$(cat "$PIDFILE")"
    kill "$pid" 2>/dev/null || true
    for _ in $(seq 30); do
        kill -0 "$pid" 2>/dev/null || break
        sleep 1
    done
    rm -f "$PIDFILE"
    echo "ci-engine: dockerd (pid $pid) stopped"
}

case "${1:-}" in
    start) start ;;
    stop) stop ;;
    *) echo "usage: $0 start|stop" >&2; exit 2 ;;
esac

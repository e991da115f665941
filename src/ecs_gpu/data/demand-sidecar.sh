#!/usr/bin/env bash
# ecs-gpu demand sidecar: every INTERVAL_S seconds, read the inference
# server's Prometheus text, sum the samples of the series named in SERIES
# (requests running + waiting) and publish one high-resolution CloudWatch
# datapoint (StorageResolution 1): with DRAIN_S and COMPLETED set, the
# arrival-rate estimate of the demand (estimate below); without them, the
# sum itself (requests in flight). The contract it follows is
# src/ecs_gpu/contracts/demand_metric.py, which sets every variable below.
#
# Needs only bash and the AWS CLI (the pinned public.ecr.aws/aws-cli/aws-cli
# image): the HTTP GET uses bash's /dev/tcp and the sum is fixed-point bash
# arithmetic, so no curl, awk or jq has to be in the image.
#
# Usage: demand-sidecar.sh            run forever (the container's command)
#        demand-sidecar.sh once       scrape and publish one datapoint
#        demand-sidecar.sh sum < text print the sum of SERIES in a Prometheus text
#        demand-sidecar.sh estimate < lines
#                                     for each line "running waiting completed dt"
#                                     (thousandths, dt in s) print the estimate
set -u

METRICS_HOST=${METRICS_HOST:-127.0.0.1}
TIMEOUT_S=${TIMEOUT_S:-5}
# Set by the task definition (demand_metric.sidecar_environment).
METRICS_PORT=${METRICS_PORT:-}
METRICS_PATH=${METRICS_PATH:-}
SERIES=${SERIES:-}
NAMESPACE=${NAMESPACE:-}
METRIC_NAME=${METRIC_NAME:-}
DIMENSIONS=${DIMENSIONS:-}
UNIT=${UNIT:-}
STORAGE_RESOLUTION=${STORAGE_RESOLUTION:-}
INTERVAL_S=${INTERVAL_S:-}
# Seconds after the sidecar starts (with the server) by which the server
# must have answered once: the service's health-check grace period.
STARTING_MAX_S=${STARTING_MAX_S:-}
# 1 where the server leaves a series out until its first use (TGI): a
# 200 without any of SERIES then means 0, not a misnamed series.
ABSENT_IS_ZERO=${ABSENT_IS_ZERO:-0}
# The arrival-rate estimate (demand_metric.py "The estimate"): the waiting
# series (a part of SERIES), the server's completed-requests counter, and the
# window in seconds in which the estimate plans to drain the backlog. Either
# empty: publish the in-flight sum.
WAITING=${WAITING:-}
COMPLETED=${COMPLETED:-}
DRAIN_S=${DRAIN_S:-}
# The decay of the mean request time's sums: about the last WINDOW scrapes.
WINDOW=${WINDOW:-6}

# publish_once's argument in the run loop: "starting" until the server has
# answered a scrape (publish_once empties it).
STARTING=starting

# The clock is `date +%s`, not bash's $SECONDS: a child process cannot drive
# $SECONDS, and the tests (tests/contracts/test_demand_metric.py) run the loop
# on a fake clock through stand-in `date` and `sleep` commands first on PATH.
# T0, the start (main), is where the elapsed time counts from.

log() { printf 'demand-sidecar: %s\n' "$*" >&2; }

# Exit 2 naming the first of the given variables that is empty.
require() {
  local name
  for name in "$@"; do
    if [[ -z $(printenv "$name") ]]; then
      log "environment variable ${name} is empty; the task definition sets it"
      exit 2
    fi
  done
}

# Is $1 one of the space-separated names in $2 (default SERIES)?
is_wanted() {
  local want
  for want in ${2-$SERIES}; do
    [[ $1 == "$want" ]] && return 0
  done
  return 1
}

# Print the thousandths of a Prometheus sample value (digits, an optional
# fraction, an optional exponent: Python's prometheus_client writes values of
# a million and more as 1.234567e+06); fail on anything else.
thousandths() {
  local whole frac exp digits shift
  if [[ ! $1 =~ ^([0-9]+)(\.([0-9]*))?([eE]([+-]?)([0-9]+))?$ ]]; then
    return 1
  fi
  whole=${BASH_REMATCH[1]}
  frac=${BASH_REMATCH[3]}
  exp=$((10#${BASH_REMATCH[6]:-0}))
  [[ ${BASH_REMATCH[5]} == - ]] && exp=$((-exp))
  # value = digits x 10^(exp - len(frac)); thousandths = that x 1000.
  digits="${whole}${frac}"
  shift=$((exp - ${#frac} + 3))
  if ((shift >= 0)); then
    ((shift <= 12)) || return 1
    printf '%d\n' $((10#$digits * 10 ** shift))
  elif ((-shift >= ${#digits})); then
    printf '0\n'
  else
    shift=$((${#digits} + shift))
    digits=${digits:0:shift}
    printf '%d\n' $((10#$digits))
  fi
}

# Sum, in thousandths, the samples (every label set) of the wanted series
# read from stdin. Prints "<sum> <samples> <waiting> <completed> <completed
# samples>" (the waiting part of the sum, and the COMPLETED counter's sum);
# fails on a value it cannot read, so a wrong number is never published.
sum_series() {
  local line name len rest value v total=0 samples=0 waiting=0 done_=0 done_n=0
  while IFS= read -r line || [[ -n $line ]]; do
    line=${line%$'\r'}
    [[ -z $line || $line == "#"* ]] && continue
    # The name is the longest prefix of name characters ([a-zA-Z0-9_:]).
    name=${line%%[^[:alnum:]_:]*}
    if is_wanted "$name"; then
      :
    elif [[ -n $COMPLETED ]] && is_wanted "$name" "$COMPLETED"; then
      :
    else
      continue
    fi
    len=${#name}
    rest=${line:len}
    # Label values may hold spaces and braces; the value follows the last "}".
    [[ $rest == "{"* ]] && rest=${rest##*\}}
    read -r value _ <<<"$rest"
    if ! v=$(thousandths "$value"); then
      log "cannot read value '${value}' of ${name}"
      return 1
    fi
    if is_wanted "$name"; then
      total=$((total + v))
      samples=$((samples + 1))
      if [[ -n $WAITING ]] && is_wanted "$name" "$WAITING"; then
        waiting=$((waiting + v))
      fi
    else
      done_=$((done_ + v))
      done_n=$((done_n + 1))
    fi
  done
  printf '%d %d %d %d %d\n' "$total" "$samples" "$waiting" "$done_" "$done_n"
}

# The arrival-rate estimate, in thousandths, into EST (state in globals, so
# not in a subshell): W x (A / dt + Q / DRAIN_S), where A is the requests
# that arrived since the last scrape (completed + the change in flight), Q
# the requests waiting, and W the mean time a request runs, by Little's law
# the running requests' time-integral over the completions, both summed
# with a decay of 1 / WINDOW a scrape (about the last WINDOW scrapes).
# Arguments: running, waiting, completed (thousandths), dt (s). Falls back
# to the in-flight sum (running + waiting) on the first scrape, after a
# counter reset (a restarted server), and while no completion was seen.
PREV_F=-1
PREV_S=0
PREV_R=0
SUM_RDT=0
SUM_DS=0
estimate() {
  local r=$1 q=$2 s=$3 dt=$4 f a ds
  f=$((r + q))
  EST=$f
  if ((PREV_F < 0 || s < PREV_S || dt <= 0)); then
    SUM_RDT=0
    SUM_DS=0
  else
    ds=$((s - PREV_S))
    a=$((ds + f - PREV_F))
    ((a < 0)) && a=0
    # The running count's mean over the interval, times the interval.
    SUM_RDT=$((SUM_RDT * (WINDOW - 1) / WINDOW + (r + PREV_R) * dt / 2))
    SUM_DS=$((SUM_DS * (WINDOW - 1) / WINDOW + ds))
    if ((SUM_DS > 0)); then
      EST=$((SUM_RDT * (a * DRAIN_S + q * dt) / (SUM_DS * dt * DRAIN_S)))
    fi
  fi
  PREV_F=$f
  PREV_S=$s
  PREV_R=$r
}

# GET METRICS_PATH over HTTP/1.0 (no chunked encoding) and print the body.
# Fails with 1 when nothing answers (the server is not up yet), 2 on a
# status other than 200, 3 when the answer stops mid-way (a partial body
# would be a wrong sum).
scrape() {
  local status line rc
  if ! exec 3<>"/dev/tcp/${METRICS_HOST}/${METRICS_PORT}"; then
    return 1
  fi
  printf 'GET %s HTTP/1.0\r\nHost: %s\r\nConnection: close\r\n\r\n' \
    "$METRICS_PATH" "$METRICS_HOST" >&3
  if ! IFS= read -r -t "$TIMEOUT_S" status <&3 || [[ ! $status =~ ^HTTP/1\.[01]\ [0-9] ]]; then
    log "GET ${METRICS_PATH} on port ${METRICS_PORT}: ${status:-no answer}"
    exec 3<&-
    return 1
  fi
  if [[ ! $status =~ ^HTTP/1\.[01]\ 200 ]]; then
    log "GET ${METRICS_PATH} on port ${METRICS_PORT}: ${status%$'\r'}"
    exec 3<&-
    return 2
  fi
  while IFS= read -r -t "$TIMEOUT_S" line <&3; do
    [[ -z ${line%$'\r'} ]] && break
  done
  while :; do
    IFS= read -r -t "$TIMEOUT_S" line <&3
    rc=$?
    if ((rc > 128)); then
      log "GET ${METRICS_PATH} on port ${METRICS_PORT}: no more data for ${TIMEOUT_S} s"
      exec 3<&-
      return 3
    fi
    [[ -n $line ]] && printf '%s\n' "$line"
    ((rc == 0)) || break
  done
  exec 3<&-
}

# One datapoint: nothing is published when the scrape fails or finds none of
# the series, so the missing-metric alarm, not a false zero, reports it.
# With "starting" (the run loop, until the server first answers) a scrape
# that gets no answer publishes 0: the task is RUNNING, so target tracking
# counts it in the capacity it scales from, and its server, still loading
# the model, holds no request. The series' Average is then total requests
# over RUNNING tasks, and capacity x Average / target is total / target
# (demand_metric.py). Any HTTP answer ends the start, and so does
# STARTING_MAX_S: a wrong port or path then publishes nothing instead of
# zeros that would scale the service in and hide it.
publish_once() {
  local body result total samples value rc
  body=$(scrape)
  rc=$?
  if ((rc == 1)); then
    if [[ ${1:-} == starting ]]; then
      if (($(date +%s) - T0 < STARTING_MAX_S)); then
        put_value 0.000
      else
        log "no answer on port ${METRICS_PORT} within ${STARTING_MAX_S} s of the start:" \
          "check [service.metrics] port"
      fi
    fi
    return 1
  fi
  STARTING=
  ((rc == 0)) || return 1
  result=$(sum_series <<<"$body") || return 1
  read -r total samples waiting completed completed_n <<<"$result"
  if ((samples == 0)); then
    if ((ABSENT_IS_ZERO)); then
      put_value 0.000
      return
    fi
    log "none of '${SERIES}' in ${METRICS_PATH}"
    return 1
  fi
  if estimating; then
    # Said once: at the first estimate (PREV_F is -1 only until then).
    ((completed_n || ABSENT_IS_ZERO || PREV_F >= 0)) ||
      log "none of '${COMPLETED}' in ${METRICS_PATH}: publishing requests in flight"
    estimate $((total - waiting)) "$waiting" "$completed" $(($(date +%s) - LAST_SCRAPE))
    LAST_SCRAPE=$(date +%s)
    total=$EST
  fi
  value=$(printf '%d.%03d' $((total / 1000)) $((total % 1000)))
  put_value "$value"
}

LAST_SCRAPE=0

# Whether the datapoint is the arrival-rate estimate (else the in-flight sum).
estimating() {
  [[ -n $COMPLETED && -n $DRAIN_S && $DRAIN_S != 0 ]]
}

put_value() {
  aws cloudwatch put-metric-data --namespace "$NAMESPACE" --metric-name "$METRIC_NAME" \
    --dimensions "$DIMENSIONS" --value "$1" --unit "$UNIT" \
    --storage-resolution "$STORAGE_RESOLUTION"
}

main() {
  local started left
  T0=$(date +%s)
  SLEEPER=""
  # Bash as PID 1 ignores SIGTERM unless trapped: stop at once on ECS's stop,
  # taking the pending sleep along.
  trap 'if [[ -n $SLEEPER ]]; then kill "$SLEEPER" 2>/dev/null; fi; exit 0' TERM INT
  while :; do
    started=$(date +%s)
    publish_once "$STARTING" || true
    left=$((INTERVAL_S - ($(date +%s) - started)))
    if ((left > 0)); then
      sleep "$left" &
      SLEEPER=$!
      wait "$SLEEPER"
      SLEEPER=""
    fi
  done
}

PUBLISH_VARS=(METRICS_PORT METRICS_PATH SERIES NAMESPACE METRIC_NAME DIMENSIONS UNIT
  STORAGE_RESOLUTION INTERVAL_S)
case ${1:-run} in
  sum)
    require SERIES
    sum_series
    ;;
  estimate)
    require DRAIN_S
    while read -r r q c dt; do
      estimate "$r" "$q" "$c" "$dt"
      printf '%d\n' "$EST"
    done
    ;;
  once)
    require "${PUBLISH_VARS[@]}"
    publish_once
    ;;
  run)
    require "${PUBLISH_VARS[@]}" STARTING_MAX_S
    main
    ;;
  *)
    log "unknown mode '$1' (run, once, sum or estimate)"
    exit 2
    ;;
esac

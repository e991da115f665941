#!/usr/bin/env bash
# ecs-gpu demand sidecar: every INTERVAL_S seconds, read the inference
# server's Prometheus text, sum the samples of the series named in SERIES
# (requests running + waiting) and publish the sum as one high-resolution
# CloudWatch datapoint (StorageResolution 1). The contract it follows is
# src/ecs_gpu/demand_metric.py, which sets every variable below.
#
# Needs only bash and the AWS CLI (the pinned public.ecr.aws/aws-cli/aws-cli
# image): the HTTP GET uses bash's /dev/tcp and the sum is fixed-point bash
# arithmetic, so no curl, awk or jq has to be in the image.
#
# Usage: demand-sidecar.sh            run forever (the container's command)
#        demand-sidecar.sh once       scrape and publish one datapoint
#        demand-sidecar.sh sum < text print the sum of SERIES in a Prometheus text
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

# Set once the server has answered a scrape (publish_once).
ANSWERED=0

log() { printf 'demand-sidecar: %s\n' "$*" >&2; }

# Exit 2 naming the first of the given variables that is empty.
require() {
  local name
  for name in "$@"; do
    if [[ -z ${!name} ]]; then
      log "environment variable ${name} is empty; the task definition sets it"
      exit 2
    fi
  done
}

# Is $1 one of the space-separated names in SERIES?
is_wanted() {
  local want
  for want in ${SERIES}; do
    [[ $1 == "$want" ]] && return 0
  done
  return 1
}

# Sum, in thousandths, the samples (every label set) of the wanted series
# read from stdin. Prints "<sum> <samples>"; fails on a value it cannot read,
# so a wrong number is never published.
sum_series() {
  local line name rest value whole frac total=0 samples=0
  while IFS= read -r line || [[ -n $line ]]; do
    line=${line%$'\r'}
    [[ -z $line || $line == "#"* ]] && continue
    name=${line%%[\{[:space:]]*}
    is_wanted "$name" || continue
    rest=${line#"$name"}
    # Label values may hold spaces and braces; the value follows the last "}".
    [[ $rest == "{"* ]] && rest=${rest##*\}}
    read -r value _ <<<"$rest"
    if [[ ! $value =~ ^([0-9]+)(\.([0-9]*))?$ ]]; then
      log "cannot read value '${value}' of ${name}"
      return 1
    fi
    whole=${BASH_REMATCH[1]}
    frac="${BASH_REMATCH[3]}000"
    total=$((total + 10#$whole * 1000 + 10#${frac:0:3}))
    samples=$((samples + 1))
  done
  printf '%d %d\n' "$total" "$samples"
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
      if ((SECONDS < STARTING_MAX_S)); then
        put_value 0.000
      else
        log "no answer on port ${METRICS_PORT} within ${STARTING_MAX_S} s of the start:" \
          "check [service.metrics] port"
      fi
    fi
    return 1
  fi
  ANSWERED=1
  ((rc == 0)) || return 1
  result=$(sum_series <<<"$body") || return 1
  read -r total samples <<<"$result"
  if ((samples == 0)); then
    if ((ABSENT_IS_ZERO)); then
      put_value 0.000
      return
    fi
    log "none of '${SERIES}' in ${METRICS_PATH}"
    return 1
  fi
  value=$(printf '%d.%03d' $((total / 1000)) $((total % 1000)))
  put_value "$value"
}

put_value() {
  aws cloudwatch put-metric-data --namespace "$NAMESPACE" --metric-name "$METRIC_NAME" \
    --dimensions "$DIMENSIONS" --value "$1" --unit "$UNIT" \
    --storage-resolution "$STORAGE_RESOLUTION"
}

main() {
  local started left
  SLEEPER=""
  # Bash as PID 1 ignores SIGTERM unless trapped: stop at once on ECS's stop,
  # taking the pending sleep along.
  trap 'if [[ -n $SLEEPER ]]; then kill "$SLEEPER" 2>/dev/null; fi; exit 0' TERM INT
  while :; do
    started=$SECONDS
    if ((ANSWERED)); then
      publish_once || true
    else
      publish_once starting || true
    fi
    left=$((INTERVAL_S - (SECONDS - started)))
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
  once)
    require "${PUBLISH_VARS[@]}"
    publish_once
    ;;
  run)
    require "${PUBLISH_VARS[@]}" STARTING_MAX_S
    main
    ;;
  *)
    log "unknown mode '$1' (run, once or sum)"
    exit 2
    ;;
esac

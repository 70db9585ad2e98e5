#!/usr/bin/env bash
# Records real two-stage CI jobs end to end, as a CI job runs them: each
# job a screen run of the new build (`run --rounds 3`, the quick pass)
# judged against the newest 10 runs of the base build, confirmed by
# `compare --confirm BASE NEW` at per-metric thresholds (`--thresholds`).
# Every 4th job (3, 7, 11 ...; PLANT_EVERY=N for every Nth, 0 for none)
# is a planted build, the others a byte-identical copy of the base build
# (A/A). Then three screen runs with
# `stress-ng --cpu 2` beside them. Run it on an otherwise idle machine.
#
#   scripts/record-confirm.sh OUT BASE_BIN PLANTED_BIN THRESHOLDS [JOBS] [HISTORY]
#
# OUT gets history/rNN.json (the base build's runs before the first job),
# jobNN/{kind,new.json,compare.json,stderr.txt,rc,wall_s}, stress/, and
# log.txt (when each step started). Gzip the JSON before committing it.
set -u
out=$1 base=$2 planted=$3 thresholds=$4 jobs=${5:-40} hist=${6:-6}
every=${PLANT_EVERY:-4}
mkdir -p "$out/history" "$out/stress"
copy="$out/.aa-copy"
cp "$base" "$copy"
: > "$out/hist.list"
log() { echo "$(date +%H:%M:%S) $*" >> "$out/log.txt"; }
for i in $(seq -f %02g 1 "$hist"); do
    log "history r$i"
    "$base" run --rounds 3 --no-progress -o "$out/history/r$i.json" 2>> "$out/stderr.txt"
    echo "$out/history/r$i.json" >> "$out/hist.list"
done
for n in $(seq 1 "$jobs"); do
    j=$(printf job%02d "$n")
    d="$out/$j"
    mkdir -p "$d"
    if (( every > 0 && n % every == every - 1 )); then kind=planted new=$planted; else kind=aa new=$copy; fi
    echo "$kind" > "$d/kind"
    log "$j $kind screen"
    "$new" run --rounds 3 --no-progress -o "$d/new.json" 2>> "$out/stderr.txt"
    log "$j $kind compare --confirm"
    t0=$(date +%s.%N)
    # shellcheck disable=SC2046
    "$base" compare $(tail -n 10 "$out/hist.list") "$d/new.json" \
        --thresholds "$thresholds" --confirm "$base" "$new" \
        --format json -o "$d/compare.json" 2> "$d/stderr.txt"
    echo $? > "$d/rc"
    t1=$(date +%s.%N)
    echo "$t1 - $t0" | bc > "$d/wall_s"
    if [ "$kind" = aa ]; then echo "$d/new.json" >> "$out/hist.list"; fi
done
for s in 1 2 3; do
    log "stress s$s"
    stress-ng --cpu 2 --timeout 60s > /dev/null 2>&1 &
    pid=$!
    sleep 2
    "$base" run --rounds 3 --no-progress -o "$out/stress/s$s.json" 2>> "$out/stderr.txt"
    kill "$pid" 2> /dev/null
    wait "$pid" 2> /dev/null
    # shellcheck disable=SC2046
    "$base" compare $(tail -n 10 "$out/hist.list") "$out/stress/s$s.json" \
        --thresholds "$thresholds" --format json -o "$out/stress/s$s-compare.json" 2> /dev/null
    echo $? > "$out/stress/s$s.rc"
    sleep 5
done
log done
rm -f "$copy"

#!/usr/bin/env bash
# A sustained run of every fuzz target, one after another.
#
#   bench/fuzz.sh            60s per target
#   FUZZTIME=10m bench/fuzz.sh
#
# New failing inputs land in each package's testdata/fuzz/<Target>/ and are
# then replayed by every plain `go test` run.
set -euo pipefail
cd "$(dirname "$0")/.."
FUZZTIME=${FUZZTIME:-60s}
targets=(
	"./proxy FuzzHandle"
	"./proxy FuzzForwardable"
	"./rewrite FuzzEventReader"
	"./rewrite FuzzHash"
	"./rewrite FuzzAppendBody"
	"./rewrite FuzzAssembler"
	"./rewrite FuzzCheckDepth"
	"./history FuzzMerge"
	"./tokens FuzzText"
	"./tokens FuzzMessage"
	"./tokens FuzzFastMatchesTiktoken"
	"./config FuzzLoadTenant"
	"./internal/upstreamtest FuzzValidateMessages"
)
for t in "${targets[@]}"; do
	set -- $t
	echo "== $2 ($1, $FUZZTIME)"
	go test "$1" -run '^$' -fuzz "^$2\$" -fuzztime "$FUZZTIME" 2>&1 | grep -E '^(fuzz: elapsed|ok|FAIL|---)' | tail -3
done

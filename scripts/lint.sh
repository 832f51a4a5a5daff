#!/usr/bin/env bash
# Lint: swift-format in lint mode over the Swift code, mandoc -Tlint over the man pages, and
# checks that C interop stays in the files fenced for it. Exits 1 if any of them complains.
set -eu
cd "$(dirname "$0")/.."
. scripts/deps.sh

failed=0
fail() {
    echo "lint: $*" >&2
    failed=1
}

# Formatting, as configured in .swift-format. --strict: a finding fails the run (without it,
# swift-format only warns). `swift format format -i -r Sources Tests Fuzz Package.swift`
# fixes all but end-of-line comments past the line length, which must be moved by hand.
swift format lint --strict --parallel -r Sources Tests Fuzz Package.swift ||
    fail "swift format: the findings above"

# Man pages. MANPATH points nowhere so that the result does not depend on this machine's
# manual database (its cross-references are only STYLE messages anyway).
MANPATH=/nonexistent mandoc -Tlint -W warning man/*.[0-9] || fail "mandoc: the warnings above"

# C interop in Sources and Fuzz (tests may reach into C to test it). Files are named, not
# pathed, so that moving one into a subfolder keeps its place on the list.

# Raw SQLite: the engine's statement and connection code and assetbench's baselines.
sqlite_files="Baseline.swift CheckedPrintf.swift CheckedText.swift Checkpointer.swift IndexQuery.swift IndexTable.swift
    KeptStatements.swift PointReader.swift PutBaseline.swift QueryConnection.swift QueryText.swift Statement+Raw.swift
    Store+FileList.swift Store+PointRead.swift
    Store+WALSync.swift Store.swift WALCoalescing.swift Workloads.swift WriteTransaction.swift
    WriteTransaction+ReadBound.swift"
# Each C target has one Swift wrapper (and the store's C baseline calls the file probe).
file_identity_files="FileIdentity.swift Baseline.swift"
wal_coalesce_files="WALCoalescing.swift"
query_temp_files="QueryConnection.swift"

# Lines of Swift in Sources and Fuzz matching the extended regex $1, comments left out.
code_matching() {
    grep -rnE --include='*.swift' "$1" Sources Fuzz | grep -vE '^[^:]+:[0-9]+:[[:space:]]*//' || true
}

# Fails for each file matching $2 whose name is not in the list $3; $1 says what it does.
fence() {
    local what=$1 pattern=$2 allowed=$3 file
    for file in $(code_matching "$pattern" | cut -d: -f1 | sort -u); do
        case " $(echo $allowed) " in
            *" $(basename "$file") "*) ;;
            *) fail "$file: $what outside its fenced files (scripts/lint.sh lists them)" ;;
        esac
    done
    for file in $allowed; do
        [ -n "$(find Sources Fuzz -name "$file" -print -quit)" ] ||
            echo "lint: note: $file is listed for $what but no longer exists" >&2
    done
}

fence "GRDBSQLite or sqlite3_ calls" '(import +([a-z]+ +)?(GRDBSQLite|SQLite3|CSQLite)\b)|\bsqlite3_[a-z0-9_]+ *\(' "$sqlite_files"
fence "import CFileIdentity" 'import +([a-z]+ +)?CFileIdentity\b' "$file_identity_files"
fence "import CWALCoalesce" 'import +([a-z]+ +)?CWALCoalesce\b' "$wal_coalesce_files"
fence "import CQueryTemp" 'import +([a-z]+ +)?CQueryTemp\b' "$query_temp_files"
# libuv: only the EventLoop module, whichever folder inside it.
for file in $(code_matching 'import +([a-z]+ +)?CUV\b' | cut -d: -f1 | sort -u); do
    case "$file" in
        Sources/EventLoop/*) ;;
        *) fail "$file: import CUV outside Sources/EventLoop" ;;
    esac
done

exit $failed

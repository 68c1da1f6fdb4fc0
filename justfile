# dyad: reproduce the papers' figures and tables, test, check.
# Everything runs from one release build (`--workspace`), so tests, benchmarks and the
# harness share compiled dependencies.

set shell := ["bash", "-euo", "pipefail", "-c"]

export DYAD_DATA_DIR := env_var_or_default("DYAD_DATA_DIR", "datasets")

dyad := "target/release/dyad"

# Every paper figure and table (or one paper / figure), then the report, at the paper's sizes.
reproduce target="" profile="paper": build
    {{dyad}} reproduce {{target}} --profile {{profile}} --keep-going
    @echo "open results/{{ if profile == "paper" { "report" } else { "report-quick" } }}/index.html"

# The whole test suite (reads real data from $DYAD_DATA_DIR when it is set).
test:
    if cargo nextest --version >/dev/null 2>&1; then cargo nextest run --release --workspace; else cargo test --release --workspace; fi

# The Python peers' virtual environment (.venv-peers/, or $DYAD_PEERS_VENV), created or
# updated from peers/requirements.txt (the harness also does this on first use of a peer).
peers: build
    {{dyad}} peers

# CI gates: every spec at its quick profile, the expectation bands, then the instruction
# counts of the hot kernels against results/references/instructions.json (valgrind).
check: build
    {{dyad}} reproduce --profile quick
    {{dyad}} check --profile quick
    cargo bench --workspace --bench gates

# The quick run in results/ (what `just check` computes) against the committed quick reference
# results/references/quick/, cell by cell: a value changed without a version bump fails, named.
compare-quick: build
    {{dyad}} compare results/references/quick results --profile quick

# The paper report from `results/archive` alone, rendered in a scratch results directory
# (`dyad archive import results/archive` then `dyad report --profile paper`, as on a fresh
# clone): `check` compares it with results/report/ byte for byte (CI), `write` puts it there.
report-from-archive mode="write": build
    #!/usr/bin/env bash
    set -euo pipefail
    case "{{mode}}" in check|write) ;; *) echo "mode: check or write, not {{mode}}" >&2; exit 2;; esac
    scratch=$(mktemp -d); trap 'rm -rf "$scratch"' EXIT
    {{dyad}} archive import results/archive --results "$scratch"
    {{dyad}} report --profile paper --results "$scratch"
    if [ "{{mode}}" = check ]; then
        diff -r "$scratch/report" results/report
        echo "results/report/ is the report of results/archive, byte for byte"
    else
        rm -rf results/report && cp -r "$scratch/report" results/report
        echo "wrote results/report/ from results/archive"
    fi

# Refresh the quick reference from the quick run in results/ after an intended change (a
# version bump): see docs/running.md, "Comparing two runs".
bless-quick: build
    {{dyad}} compare results/references/quick results --profile quick --bless

# Build the `dyad` binary (release, whole workspace, all targets: the same feature set as the
# tests, so `just test` and `just reproduce` share one build of every dependency).
build:
    cargo build --release --workspace --all-targets

# A one-node Slurm cluster on this machine (Debian's slurmctld + slurmd + munge; root or sudo),
# for `dyad reproduce --executor slurm`. Idempotent.
slurm-up:
    bash scripts/slurm-up.sh

# Stop that cluster's daemons (queued and running jobs are dropped; their cells stay missing).
slurm-down:
    bash scripts/slurm-down.sh

# The Slurm test against a running cluster: the OASIS quick profile as a job array, one task
# killed, resubmitted, tables compared with the local quick run in results/tables/quick.
slurm-test: build
    DYAD_REQUIRE_SLURM=1 DYAD_SLURM_COMPARE_WITH="$PWD/results/tables/quick" cargo nextest run --release -p dyad-cli --test slurm --no-capture

# Criterion benchmarks.
bench:
    cargo bench --workspace

# A short fuzz smoke: every data-format fuzz target for `seconds` from its regression corpus
# (fuzz/README.md). Needs a nightly toolchain and cargo-fuzz; says SKIPPED without them. The
# `spec` target is left out (it builds the whole harness with sanitizers: `just fuzz spec`).
fuzz-smoke seconds="10":
    #!/usr/bin/env bash
    set -euo pipefail
    if ! cargo +nightly --version >/dev/null 2>&1 || ! cargo fuzz --version >/dev/null 2>&1; then
        echo "fuzz-smoke: SKIPPED (needs \`cargo +nightly\` and cargo-fuzz)"; exit 0
    fi
    cd fuzz
    # A dev build (no optimisation) compiles faster, and a smoke needs no speed.
    cargo +nightly fuzz build --dev
    for dir in regressions/*/; do
        t=$(basename "$dir")
        [ "$t" = spec ] && continue
        scratch=$(mktemp -d) log=$(mktemp)
        if ! cargo +nightly fuzz run --dev "$t" "$scratch" "$dir" -- -max_total_time={{seconds}} -print_final_stats=1 >"$log" 2>&1; then
            cat "$log"; echo "fuzz-smoke: target $t failed (crash input in fuzz/artifacts/$t/)"; exit 1
        fi
        echo "$t: $(grep -o 'number_of_executed_units: [0-9]*' "$log")"
        rm -rf "$scratch" "$log"
    done

# Fuzz one target (fuzz/README.md) from its regression corpus until `runs` executions or
# `seconds`, one job; `spec` builds with `--features spec`.
fuzz target runs="1000000" seconds="3600":
    cd fuzz && mkdir -p corpus/{{target}} && cargo +nightly fuzz run {{ if target == "spec" { "--features spec" } else { "" } }} {{target}} corpus/{{target}} regressions/{{target}} -- -runs={{runs}} -max_total_time={{seconds}} -print_final_stats=1

fmt:
    cargo fmt --all

lint:
    cargo fmt --all -- --check
    cargo clippy --release --workspace --all-targets -- -D warnings

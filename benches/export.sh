#!/bin/sh
# Export and search benchmarks on a synthetic 500-tool x 20-command registry.
# Run by hand from the repository root: benches/export.sh
set -eu
exec cargo bench --bench export "$@"

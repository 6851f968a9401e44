#!/usr/bin/env bash
# The whole test suite under coverage, then its figure: the share of deskpilot/'s lines run by the tests'
# own processes (the services a test serves in a thread count; the appliance's programs started under
# supervisord, as other users, do not).
#   scripts/pytest-coverage.sh VENV_DIR [PYTEST_ARGS...]
# The data goes to a temporary folder (nothing is written into the checkout); pytest's exit code is kept.
set -uo pipefail
venv=${1:?usage: pytest-coverage.sh VENV_DIR [PYTEST_ARGS...]}
shift
data=$(mktemp -d)
trap 'rm -rf "$data"' EXIT
export COVERAGE_FILE=$data/coverage
"$venv/bin/coverage" run -m pytest "$@"
status=$?
if [[ -f $COVERAGE_FILE ]]; then
  echo "coverage: $("$venv/bin/coverage" report --format=total)% of deskpilot/'s lines, run by the tests' own processes"
fi
exit $status

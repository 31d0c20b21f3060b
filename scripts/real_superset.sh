#!/bin/sh
# Thin wrapper: see scripts/real_superset.py (install | template | start NAME PORT | stop NAME | status).
exec python3 "$(dirname "$0")/real_superset.py" "$@"

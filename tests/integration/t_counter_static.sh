#!/usr/bin/env bash
# The counter program (counter-static) continues after saver --kill and restart-loader:
# its memory is unchanged (it checks itself), its ticks go on without
# starting over, it keeps its pid (root) and every region its address.
. "$(dirname "$0")/lib.sh"
COUNTER=counter-static
. "$(dirname "$0")/counter_body.sh"

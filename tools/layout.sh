#!/bin/bash
# tools/layout.sh [DIR]: the include boundaries of docs/design.md ("Layout
# and dependencies"), run by tools/lint.sh. Every quoted #include of the
# product's C must resolve, as the compiler resolves it, on the include
# path of its file's component (build/gen/incpaths.sh, written by the
# GNUmakefile from its INC_* lists), never through ".." or an absolute
# path; and the lower layers must not reach the upper ones whatever their
# include path says: lib/ no header of saver/, loader/, the core, verbs/
# or tools/, arch/ nothing above it (not even lib/). DIR (default: the repository) is the
# tree to check, with its build/gen and build/view (the selftest's copy).
set -u
cd "${1:-$(dirname "$0")/..}" || exit 2
# shellcheck source=/dev/null
. build/gen/incpaths.sh 2>/dev/null ||
	{ echo "layout: build/gen/incpaths.sh missing: run make first" >&2; exit 2; }

# the component of a source file (whose include path it is compiled with), in $comp
component() {
	case $1 in
	freestanding/core/* | freestanding/arch/*) comp=core ;;
	freestanding/*) comp=freestanding ;;
	*) comp=${1%%/*} ;;
	esac
}

# the directories a component must never reach, include path or not
declare -A forbidden=(
	[lib]="saver/ loader/ freestanding/core/ verbs/ tools/"
	[arch]="lib/ saver/ loader/ freestanding/ verbs/ tools/"
	[freestanding]="lib/ saver/ loader/ freestanding/core/ verbs/ tools/ arch/"
	[core]="saver/ loader/ verbs/ tools/ arch/"
)

# where "$2" included from directory $1 resolves for $comp, in $to
# (relative to here, symlinks of build/view followed; empty: nowhere)
declare -A seen
resolve() {
	local dir=$1 h=$2 inc="INC_$comp" d key="$comp|$1|$2"
	if [ -n "${seen[$key]+x}" ]; then
		to=${seen[$key]}
		return
	fi
	to=
	for d in "$dir" ${!inc-}; do
		d=${d#-I}
		[ -e "$d/$h" ] && { to=$(realpath --relative-to=. "$d/$h"); break; }
	done
	seen[$key]=$to
}

fail=0
while IFS= read -r f; do
	component "$f"
	while IFS=: read -r line h; do
		where="$f:$line"
		case $h in
		/* | *..*) echo "layout: $where: \"$h\" leaves the include path (.. or absolute)"; fail=1; continue ;;
		esac
		resolve "${f%/*}" "$h"
		if [ -z "$to" ]; then
			echo "layout: $where: \"$h\" is not on the include path of $comp/"
			fail=1
			continue
		fi
		for p in ${forbidden[$comp]-}; do
			case $to in
			"$p"*) echo "layout: $where: \"$h\" is $to, which $comp/ must not include"; fail=1 ;;
			esac
		done
	done < <(grep -n '^[[:space:]]*#[[:space:]]*include[[:space:]]*"' "$f" |
		sed 's/^\([0-9]*\):[^"]*"\([^"]*\)".*/\1:\2/')
done < <(find lib arch saver loader tools verbs freestanding tests/unit \
	-name '*.[ch]' 2>/dev/null | sort)
[ $fail = 0 ] && echo "layout: every include is within its component's boundary"
exit $fail

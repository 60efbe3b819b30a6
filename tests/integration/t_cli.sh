#!/usr/bin/env bash
# The command line users expect (issue 19): --version on every command,
# one release string for all; --help on stdout, status 0, and its usage
# naming every option the command takes; the man page of each command
# naming every option its --help does, and --help every one its man page
# does (so neither can fall behind); an unknown option is a usage error
# (status 2); `make install` with PREFIX and DESTDIR installs every
# command, the verbs shim where ibcr-launch finds it, and the man pages,
# and `make uninstall` removes them.
. "$(dirname "$0")/lib.sh"

MAN=$TOP/docs/man
CMDS=(saver restart-loader ckpt-info ckpt-oci ibcr-launch ibcr-ctl ibcr-job)
problems=()
problem() { problems+=("$*"); note "problem: $*"; }

# The options a --help text lists (each line of its option list starts
# with them: "  -o, --output IMAGE", "      --tree"), and those of a man page
# (each .TP's next line: \fB\-o\fR, \fB\-\-output\fR ...; troff's \- is -)
help_opts() {
	sed -n 's/^ \{1,\}\(-[a-zA-Z], \)\{0,1\}\(--[a-z][a-z-]*\).*/\2/p' "$1" | sort -u
}
man_opts() {
	sed -n '/^\.TP/{n;p}' "$1" | sed 's/\\-/-/g; s/\\f[BIRP]//g' |
		grep -oE -- '--[a-z][a-z-]*[a-z]' | sort -u
}

release=
for c in "${CMDS[@]}"; do
	st=0
	"$B/$c" --version >"$T/$c.version" 2>&1 || st=$?
	[ "$st" = 0 ] || problem "$c --version: status $st: $(cat "$T/$c.version")"
	r=$(sed -n "s/^$c (ibcr) //p" "$T/$c.version")
	[ -n "$r" ] || problem "$c --version says: $(head -n 2 "$T/$c.version")"
	[ -z "$release" ] || [ "$r" = "$release" ] || problem "$c is release '$r', others '$release'"
	release=${release:-$r}

	st=0
	"$B/$c" --help >"$T/$c.help" 2>"$T/$c.help.err" || st=$?
	[ "$st" = 0 ] && [ -s "$T/$c.help" ] && [ ! -s "$T/$c.help.err" ] ||
		problem "$c --help: status $st, stderr: $(cat "$T/$c.help.err")"
	grep -q '^usage: ' "$T/$c.help" || problem "$c --help has no usage line"
	[ -f "$MAN/$c.1" ] || { problem "no man page $MAN/$c.1"; continue; }
	help_opts "$T/$c.help" >"$T/$c.help.opts"
	man_opts "$MAN/$c.1" >"$T/$c.man.opts"
	# the usage lines (up to the option list) name each option, long or short
	sed -n '/^usage:/,/^ *-/p' "$T/$c.help" | sed '$d' >"$T/$c.usage"
	for o in $(cat "$T/$c.help.opts"); do
		grep -qxF -- "$o" "$T/$c.man.opts" || problem "$c: $o is in --help, not in its man page"
		case $o in --help | --version) continue ;; esac
		short=$(sed -n "s/^ *\(-[a-zA-Z]\), $o\b.*/\1/p" "$T/$c.help" | head -n 1)
		grep -qE -- "(^|[^a-z-])($o|${short:-$o})([^a-z-]|\$)" "$T/$c.usage" ||
			problem "$c: $o${short:+ ($short)} is not in the usage line"
	done
	for o in $(cat "$T/$c.man.opts"); do
		grep -qxF -- "$o" "$T/$c.help.opts" || problem "$c: $o is in its man page, not in --help"
	done
	[ "$(wc -l <"$T/$c.help.opts")" -ge 2 ] || problem "$c --help names no options"

	st=0
	"$B/$c" --no-such-option </dev/null >"$T/$c.bad" 2>&1 || st=$?
	[ "$st" = 2 ] || problem "$c --no-such-option: status $st, not 2"
	grep -q 'usage:' "$T/$c.bad" || problem "$c --no-such-option: no usage: $(head -c 300 "$T/$c.bad")"
done
# the C commands take every option their --help names
for c in saver restart-loader ckpt-info ckpt-oci; do
	for o in $(cat "$T/$c.help.opts"); do
		"$B/$c" "$o" </dev/null >/dev/null 2>"$T/$c.opt.err" || true
		grep -q "unrecognized option" "$T/$c.opt.err" && problem "$c does not take $o, which its --help names"
	done
done
# the C commands name the image format too
for c in saver restart-loader ckpt-info ckpt-oci; do
	grep -q '^image format [0-9]' "$T/$c.version" || problem "$c --version names no image format"
done
note "release $release"

# make install: everything under DESTDIR/PREFIX, working from there (made
# from the sources the build under test came from: its parent directory)
root=$T/root
make -s -C "$(dirname "$B")" install DESTDIR="$root" PREFIX=/opt/ibcr >"$T/install.out" 2>&1 ||
	fail "make install failed: $(tail -n 5 "$T/install.out")"
for c in "${CMDS[@]}"; do
	[ -x "$root/opt/ibcr/bin/$c" ] || problem "make install: no $root/opt/ibcr/bin/$c"
	[ -f "$root/opt/ibcr/share/man/man1/$c.1" ] || problem "make install: no man page $c.1"
	v=$("$root/opt/ibcr/bin/$c" --version 2>&1 | head -n 1)
	[ "$v" = "$c (ibcr) $release" ] || problem "installed $c --version: $v"
done
if [ -f "$B/libibcr-verbs.so" ]; then
	shim=$root/opt/ibcr/lib/ibcr/libibcr-verbs.so
	[ -f "$shim" ] || problem "make install: no $shim"
	got=$("$root/opt/ibcr/bin/ibcr-launch" /bin/sh -c 'echo "$LD_PRELOAD"')
	[ "$got" = "$shim" ] || problem "installed ibcr-launch preloads '$got', not $shim"
fi
make -s -C "$(dirname "$B")" uninstall DESTDIR="$root" PREFIX=/opt/ibcr >"$T/uninstall.out" 2>&1 ||
	problem "make uninstall failed: $(tail -n 5 "$T/uninstall.out")"
left=$(find "$root" -type f)
[ -z "$left" ] || problem "make uninstall left: $left"

[ ${#problems[@]} -eq 0 ] || fail "${#problems[@]} problem(s): ${problems[*]}"
exit 0

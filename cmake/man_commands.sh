#!/bin/sh
# Writes a help2man include file (cmake/package.cmake): a COMMANDS section with every command's
# --help, verbatim (backslashes and leading dots escaped for roff), history's three subcommands
# each under its own heading.
#   man_commands.sh CANARY_GATE OUT
set -eu
gate=$1
out=$2
section() { # heading, then the command's words (its --help is printed)
    printf '.SS "%s"\n.nf\n' "$1"
    shift
    "$gate" "$@" --help | sed -e 's/\\/\\e/g' -e 's/^\([.'"'"']\)/\\\&\1/'
    printf '.fi\n'
}
{
    printf '[COMMANDS]\n'
    for c in gate run compare merge show comment aa ab bisect; do
        section "$c" "$c"
    done
    for c in append check site; do
        section "history $c" history "$c"
    done
    section accept accept
} >"$out.tmp"
mv "$out.tmp" "$out"

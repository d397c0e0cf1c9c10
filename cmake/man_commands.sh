#!/bin/sh
# Writes a help2man include file (cmake/package.cmake): a COMMANDS section with every command's
# --help, verbatim (backslashes and leading dots escaped for roff).
#   man_commands.sh CANARY_GATE OUT
set -eu
gate=$1
out=$2
{
    printf '[COMMANDS]\n'
    for c in gate run compare merge show comment aa ab; do
        printf '.SS %s\n.nf\n' "$c"
        "$gate" "$c" --help | sed -e 's/\\/\\e/g' -e 's/^\([.'"'"']\)/\\\&\1/'
        printf '.fi\n'
    done
} >"$out.tmp"
mv "$out.tmp" "$out"

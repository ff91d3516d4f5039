#!/bin/sh
# A pnpm-style launcher for `dsh`: a shell script that names the host's path
# instead of linking to it (written by the tests to <sandbox>/bin/dsh).
basedir=$(dirname "$(echo "$0" | sed -e 's,\\,/,g')")
exec node "$basedir/../prefix/lib/node_modules/@deepseek-ai/dsh/lib/bin.js" "$@"

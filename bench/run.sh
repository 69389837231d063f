#!/bin/sh
# `npm run bench -- [options]`: --help (or -h) prints bench/usage.txt without compiling; anything else
# builds (tsc) and runs dist/bench/run.js with the same options.
here=$(dirname "$0")
for a in "$@"; do
  case "$a" in
    --help|-h) cat "$here/usage.txt"; exit 0 ;;
  esac
done
npm run -s build && exec node "$here/../dist/bench/run.js" "$@"

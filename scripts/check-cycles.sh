#!/bin/sh
# Fails when a module of the repository imports itself through others. Type-only imports count:
# they tie modules together for a reader as much as value imports do. madge exits 1 on a cycle.
# Uses the madge devDependency when installed, else fetches madge 8 once through npx.
set -e
cd "$(dirname "$0")/.."
if [ -x node_modules/.bin/madge ]; then madge=node_modules/.bin/madge; else madge='npx --yes madge@8'; fi
exec $madge --circular --extensions ts --ts-config tsconfig.json src broker device-sim bench clients scripts test

#!/bin/sh
# Fails when a module of the repository imports itself through others. Type-only imports count:
# they tie modules together for a reader as much as value imports do.
set -e
cd "$(dirname "$0")/.."
exec node_modules/.bin/dpdm --no-warning --no-tree --exit-code circular:1 \
  'src/**/*.ts' 'broker/**/*.ts' 'device-sim/**/*.ts' 'bench/**/*.ts' 'clients/**/*.ts' 'scripts/**/*.ts' 'test/**/*.ts'

// The one place that reads the environment; everything else receives a validated Config. Each
// domain declares its variables once in src/config/<domain>.ts (schema, default, meaning): the
// loader, its error messages and docs/configuration.md (npm run docs:config) derive from them.
export { type Config, loadConfig } from './config/load.js'
export { ConfigError } from './config/error.js'
export { persistGenerated } from './config/data-dir.js'
export { configVariables } from './config/sections.js'

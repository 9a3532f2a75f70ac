// Every domain's variables, in the order docs/configuration.md lists them: the one list both the
// loader and the documentation read, so a variable cannot be read without being documented.
import { auth } from './auth.js'
import { cluster } from './cluster.js'
import { database } from './database.js'
import { deviceLogs } from './device-logs.js'
import { devices } from './devices.js'
import { downlink } from './downlink.js'
import { invalid } from './error.js'
import { firmware } from './firmware.js'
import { generation } from './generation.js'
import { http } from './http.js'
import { mail } from './mail.js'
import { mqtt } from './mqtt.js'
import { notifications } from './notifications.js'
import { rabbitmq } from './rabbitmq.js'
import { schedules } from './schedules.js'
import { screens } from './screens.js'
import { service } from './service.js'
import { storage } from './storage.js'
import { trmnl } from './trmnl.js'
import { type Environment, type Values, readValues, variablesOf } from './variables.js'

export const sections = {
  service,
  http,
  database,
  auth,
  mail,
  devices,
  deviceLogs,
  mqtt,
  rabbitmq,
  cluster,
  downlink,
  generation,
  firmware,
  trmnl,
  schedules,
  screens,
  notifications,
  storage,
}

type Sections = typeof sections

/** Every section's variables read from `env`; all that do not parse are reported together, each naming its variable. */
export function readSections(env: Environment): { [K in keyof Sections]: Values<Sections[K]['variables']> } {
  const problems: string[] = []
  const values = Object.fromEntries(Object.entries(sections).map(([key, section]) => [key, readValues(section.variables, env, problems)]))
  if (problems.length) throw invalid(problems)
  return values as { [K in keyof Sections]: Values<Sections[K]['variables']> }
}

/** The environment variables the service reads, each declared once (test/config.test.ts checks that no name is declared twice). */
export const configVariables: readonly string[] = Object.values(sections).flatMap((s) => variablesOf(s.variables).map((v) => v.name))

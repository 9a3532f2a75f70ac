// The machine's RabbitMQ as the external broker: found on its loopback ports with rabbitmqctl at
// hand, configured through scripts/rabbitmq-setup.sh, and put back as it was found (explicitly
// enabled plugins, the enabled_plugins file, the run-time settings the script changes). A second
// node (scripts/rabbitmq-setup.sh node2) is started, joined and taken away again on request.
// Files that configure RabbitMQ take turns (a lock): tap runs files in parallel, and one file's
// restore would take the plugins away from under another's test.
import { randomBytes } from 'node:crypto'
import { execFile } from 'node:child_process'
import { mkdir, readFile, rm, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { reachable } from './services.js'

const run = promisify(execFile)
const root = join(import.meta.dirname, '..', '..')

export const RABBIT = {
  mqttUrl: 'mqtt://127.0.0.1:1884',
  amqpUrl: 'amqp://guest:guest@127.0.0.1:5672',
  managementUrl: 'http://guest:guest@127.0.0.1:15672',
  /** The internal user the service connects as (guest may log in from loopback only). */
  service: { username: 'guest', password: 'guest' },
}

/** The second node scripts/rabbitmq-setup.sh starts (its default ports). */
export const RABBIT2 = {
  mqttUrl: 'mqtt://127.0.0.1:1885',
  mqttPort: 1885,
}

/** Why RabbitMQ cannot be used here, or undefined when it can. */
export async function rabbitmqMissing(): Promise<string | undefined> {
  if (!(await reachable(5672))) return 'no RabbitMQ on 127.0.0.1:5672'
  const ctl = await run('rabbitmqctl', ['-q', 'eval', 'ok.']).catch((err: Error) => err)
  if (ctl instanceof Error) return `rabbitmqctl does not work here (${ctl.message.split('\n')[0]})`
  return undefined
}

const eval_ = async (expr: string) => (await run('rabbitmqctl', ['-q', 'eval', expr], { maxBuffer: 1 << 20 })).stdout.trim()
const APPS = ['rabbit', 'rabbitmq_mqtt', 'rabbitmq_auth_backend_http']
const ENABLED_FILE = '/etc/rabbitmq/enabled_plugins'

type Snapshot = { plugins: string[]; enabledFile: string | undefined; env: string; users: string }

async function explicitPlugins(): Promise<string[]> {
  const { stdout } = await run('rabbitmq-plugins', ['-q', 'list', '-E', '-m'])
  return stdout
    .split('\n')
    .map((s) => s.trim())
    .filter(Boolean)
}

async function snapshot(): Promise<Snapshot> {
  const loaded = 'Loaded = [A || {A, _, _} <- application:loaded_applications()]'
  return {
    plugins: await explicitPlugins(),
    enabledFile: await readFile(ENABLED_FILE, 'utf8').catch(() => undefined),
    env: await eval_(`${loaded}, [{A, lists:member(A, Loaded), application:get_all_env(A)} || A <- [${APPS.join(', ')}]].`),
    // The internal users: the service makes devices users (RABBITMQ_DEVICE_USERS), and they go at the end.
    users: await eval_('mnesia:dirty_all_keys(rabbit_user).'),
  }
}

/**
 * Enables or disables plugins. RabbitMQ 3.10's CLI sometimes records the change and then crashes
 * applying it to the running node (a CaseClauseError from rabbit_plugins:clean_plugin while it
 * purges the MQTT plugin's modules): what counts is the recorded list, so that is checked, and the
 * command tried once more if it did not take.
 */
async function plugins(action: 'enable' | 'disable', names: string[]) {
  const done = async () => {
    const enabled = await explicitPlugins()
    return names.every((p) => enabled.includes(p) === (action === 'enable'))
  }
  for (let attempt = 1; ; attempt++) {
    const failed = await run('rabbitmq-plugins', ['-q', action, ...names]).then(
      () => undefined,
      (err: Error) => err,
    )
    if (!failed || (await done())) return
    if (attempt >= 2) throw failed
    await new Promise((r) => setTimeout(r, 2000))
  }
}

async function restore(s: Snapshot) {
  const now = await explicitPlugins()
  const added = now.filter((p) => !s.plugins.includes(p))
  const removed = s.plugins.filter((p) => !now.includes(p))
  if (added.length) await plugins('disable', added)
  if (removed.length) await plugins('enable', removed)
  // Each app's settings as they were: an app that was not loaded is unloaded (its defaults come
  // back with the next load); a loaded one gets its values back and loses the keys added since.
  await eval_(
    `[case WasLoaded of
        false -> application:unload(A);
        true -> [application:unset_env(A, K) || {K, _} <- application:get_all_env(A), not lists:keymember(K, 1, Env)],
                [application:set_env(A, K, V) || {K, V} <- Env]
      end || {A, WasLoaded, Env} <- ${s.env}], ok.`,
  )
  await eval_(
    `[rabbit_auth_backend_internal:delete_user(U, <<"test-teardown">>) || U <- mnesia:dirty_all_keys(rabbit_user), not lists:member(U, ${s.users})], ok.`,
  )
  if (s.enabledFile === undefined) await rm(ENABLED_FILE, { force: true })
  else await writeFile(ENABLED_FILE, s.enabledFile)
}

/** Deletes queues a test left (its presence queue, the service's persistent MQTT session): part of leaving RabbitMQ as found. */
export async function deleteQueues(names: string[]) {
  for (const name of names) await run('rabbitmqctl', ['-q', 'delete_queue', name]).catch(() => {})
}

const LOCK = '/tmp/dps-test-rabbitmq.lock'

function alive(pid: number) {
  try {
    process.kill(pid, 0)
    return true
  } catch {
    return false
  }
}

/** Waits until no other test process configures RabbitMQ; a lock whose process is gone is taken over. */
async function lock(): Promise<() => Promise<void>> {
  for (;;) {
    try {
      await mkdir(LOCK)
      await writeFile(join(LOCK, 'pid'), String(process.pid))
      return () => rm(LOCK, { recursive: true, force: true })
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err
      const holder = Number(await readFile(join(LOCK, 'pid'), 'utf8').catch(() => ''))
      // A lock without a pid yet is being taken (or was left by a crash right then): waited on, not removed.
      if (holder > 0 && !alive(holder)) await rm(LOCK, { recursive: true, force: true })
      else await new Promise((r) => setTimeout(r, 250))
    }
  }
}

const script = (args: string[], env: Record<string, string> = {}) =>
  run('bash', [join(root, 'scripts', 'rabbitmq-setup.sh'), ...args], { env: { ...process.env, ...env } })

/** Waits until something listens on `port` (the MQTT listener answers a moment after its plugin reports started). */
async function listening(port: number) {
  for (let i = 0; i < 100 && !(await reachable(port)); i++) await new Promise((r) => setTimeout(r, 100))
}

/**
 * Configures RabbitMQ for a service at `hookUrl` (scripts/rabbitmq-setup.sh enable) and registers
 * the restore with `t`. With `node2`, also starts a second node joined to the first
 * (scripts/rabbitmq-setup.sh node2 start); it is stopped and out of the cluster before the restore.
 * Resolves with what the second node's start printed, if any.
 */
export async function setUpRabbitMQ(
  t: { teardown(fn: () => unknown): void },
  hookUrl: string,
  secret: string,
  opts: { node2?: boolean } = {},
): Promise<{ node2?: { stdout: string; stderr: string } }> {
  const unlock = await lock()
  let before: Snapshot | undefined
  let node2Started = false
  t.teardown(async () => {
    try {
      if (node2Started) await script(['node2', 'stop'])
      if (before) await restore(before)
    } finally {
      await unlock()
    }
  })
  before = await snapshot()
  const env = { HOOK_URL: hookUrl, MQTT_AUTH_SECRET: secret }
  await script(['enable'], env)
  await listening(1884)
  if (!opts.node2) return {}
  node2Started = true
  const started = await script(['node2', 'start'], env)
  await listening(RABBIT2.mqttPort)
  return { node2: started }
}

/** Runs rabbitmqctl against the second node. */
export async function rabbitmqctl2(args: string[]): Promise<string> {
  return (await run('rabbitmqctl', ['-n', await node2Name(), ...args], { maxBuffer: 1 << 20 })).stdout
}

/** The second node's name: rabbit2@ the first's host, as the setup script names it. */
export async function node2Name(): Promise<string> {
  return `rabbit2@${(await eval_('node().')).replace(/'/g, '').split('@')[1]}`
}

/**
 * The service's settings for RabbitMQ mode against node 1, on `port`, with `secret` for the auth
 * hook; a presence queue of its own, so another test's service does not consume its events.
 */
export function rabbitServiceEnv(port: number, secret: string) {
  return {
    PORT: String(port),
    ...rabbitExternalEnv(secret, `dps.presence.test-${randomBytes(4).toString('hex')}`),
    DEVICE_POLL_INTERVAL: '0',
  }
}

/** The settings that put a service in external mode on this machine's RabbitMQ (tests and bench alike). */
export function rabbitExternalEnv(secret: string, presenceQueue: string) {
  return {
    MQTT_EXTERNAL_URL: RABBIT.mqttUrl,
    MQTT_EXTERNAL_USERNAME: RABBIT.service.username,
    MQTT_EXTERNAL_PASSWORD: RABBIT.service.password,
    MQTT_AUTH_SECRET: secret,
    RABBITMQ_AMQP_URL: RABBIT.amqpUrl,
    RABBITMQ_MANAGEMENT_URL: RABBIT.managementUrl,
    RABBITMQ_PRESENCE_QUEUE: presenceQueue,
  }
}

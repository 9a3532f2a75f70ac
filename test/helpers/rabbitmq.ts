// The machine's RabbitMQ as the external broker: found on its loopback ports with rabbitmqctl at
// hand, configured through scripts/rabbitmq-setup.sh, and put back as it was found (explicitly
// enabled plugins, the enabled_plugins file, the run-time settings the script changes).
import { execFile } from 'node:child_process'
import { readFile, rm, writeFile } from 'node:fs/promises'
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

/**
 * Configures RabbitMQ for a service at `hookUrl` (scripts/rabbitmq-setup.sh enable) and registers
 * the restore with `t`. Returns a function that points the hook at another URL.
 */
export async function setUpRabbitMQ(t: { teardown(fn: () => unknown): void }, hookUrl: string, secret: string) {
  const before = await snapshot()
  t.teardown(() => restore(before))
  const setup = (url: string) =>
    run('bash', [join(root, 'scripts', 'rabbitmq-setup.sh'), 'enable'], {
      env: { ...process.env, HOOK_URL: url, MQTT_AUTH_SECRET: secret },
    })
  await setup(hookUrl)
  // The MQTT listener answers a moment after the plugin reports started.
  for (let i = 0; i < 100 && !(await reachable(1884)); i++) await new Promise((r) => setTimeout(r, 100))
}

// The README's command sequences, run in order as a newcomer runs them: every ```sh block, in one
// bash session (variables carry from block to block), against `npm start` on the README's port.
// What a reader does in another terminal is done here the same way: `npm start` and `npm run sim`
// run in the background, and the one value a reader copies by eye — the pin the simulator prints —
// is taken from the simulator's output. `npm ci` (already done: this suite runs after it) and
// `npm test` (this suite) are not run again. The service's data folder, its MQTT port (0: a free
// one, since RabbitMQ's test may take 1884 beside Mosquitto's 1883) and the simulator's folder are
// set by the environment so the run leaves the checkout as it was; every command is the README's.
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t from 'tap'
import { eventually } from '../helpers/mqtt.js'
import { reachable } from '../helpers/services.js'

const root = join(import.meta.dirname, '..', '..')
const PORT = 3000

/** The ```sh blocks of a markdown text, in order. */
function shellBlocks(markdown: string): string[] {
  return [...markdown.matchAll(/^```sh\n([\s\S]*?)^```$/gm)].map((m) => m[1]!)
}

/** A background process whose output is kept and watched. */
function background(cmd: string, args: string[], env: NodeJS.ProcessEnv) {
  const child = spawn(cmd, args, { cwd: root, env, detached: true }) as ChildProcessWithoutNullStreams
  let output = ''
  const waiters: Array<() => void> = []
  const take = (b: Buffer) => {
    output += b.toString()
    for (const w of waiters.splice(0)) w()
  }
  child.stdout.on('data', take)
  child.stderr.on('data', take)
  let exited = false
  child.once('exit', () => {
    exited = true
    for (const w of waiters.splice(0)) w()
  })
  return {
    get output() {
      return output
    },
    /** The first match of `re` in the output, waiting up to `ms`. */
    async waitFor(re: RegExp, ms = 120_000): Promise<RegExpMatchArray> {
      const deadline = Date.now() + ms
      for (;;) {
        const m = output.match(re)
        if (m) return m
        if (exited) throw new Error(`${cmd} ${args.join(' ')} exited before ${re}:\n${output.slice(-3000)}`)
        if (Date.now() > deadline) throw new Error(`no ${re} within ${ms} ms:\n${output.slice(-3000)}`)
        await new Promise<void>((resolve) => {
          waiters.push(resolve)
          setTimeout(resolve, 500)
        })
      }
    },
    stop() {
      // The whole group: npm start's node and npm run sim's tsx are children of npm.
      if (!exited && child.pid) {
        try {
          process.kill(-child.pid, 'SIGTERM')
        } catch {}
      }
      return exited ? Promise.resolve() : new Promise<void>((resolve) => child.once('exit', () => resolve()))
    },
  }
}

const missing = (await reachable(PORT)) ? `port ${PORT} is taken here, and the README's commands name it` : undefined
if (missing && process.env.CI) t.fail(`CI must run the README's commands: ${missing}`)

t.test('the README’s command sequences run as written, in order', { skip: missing && !process.env.CI ? missing : false }, async (t) => {
  const blocks = shellBlocks(readFileSync(join(root, 'README.md'), 'utf8'))
  // Which block is which: a block added, removed or moved makes this fail until the expectations below follow it.
  t.equal(blocks.length, 6, 'six command sequences')
  const tmp = mkdtempSync(join(tmpdir(), 'readme-'))
  t.teardown(() => rmSync(tmp, { recursive: true, force: true }))
  const env: NodeJS.ProcessEnv = {}
  for (const [k, v] of Object.entries(process.env))
    if (!/^(DATABASE_URL|REDIS_URL|REDIS_PREFIX|PORT|HOST|BASE_URL|DATA_DIR|MQTT_PORT|NODE_OPTIONS|TAP.*|_TAP.*)$/.test(k)) env[k] = v
  const envFor = { ...env, DATA_DIR: join(tmp, 'data'), MQTT_PORT: '0', DISPLAY_SIM_HOME: join(tmp, 'sim') }

  let service: ReturnType<typeof background> | undefined
  let sim: ReturnType<typeof background> | undefined
  t.teardown(async () => {
    await sim?.stop()
    await service?.stop()
  })

  // The bash session: every block's lines, with a marker after each block carrying its output's end.
  const bash = spawn('bash', ['--noprofile', '--norc'], { cwd: root, env: envFor })
  t.teardown(() => bash.kill())
  let out = ''
  let bashExit: number | null | undefined
  bash.stdout.on('data', (b: Buffer) => (out += b.toString()))
  bash.stderr.on('data', (b: Buffer) => (out += b.toString()))
  bash.once('exit', (code) => (bashExit = code))
  bash.stdin.write('set -eo pipefail\n')
  let n = 0
  const run = async (script: string): Promise<string> => {
    const marker = `__block_${++n}_done__`
    const from = out.length
    bash.stdin.write(`${script}\necho ${marker}\n`)
    for (;;) {
      const at = out.indexOf(marker, from)
      if (at >= 0) return out.slice(from, at)
      if (bashExit !== undefined) throw new Error(`a command failed (bash exit ${bashExit}):\n${out.slice(from)}`)
      await new Promise((r) => setTimeout(r, 100))
    }
  }

  /** Runs a block: the lines a reader runs in another terminal are started here, the rest go to bash. */
  const block = async (text: string): Promise<string> => {
    const lines: string[] = []
    for (const line of text.split('\n')) {
      const cmd = line.replace(/\s+#.*$/, '').trim()
      if (cmd === 'npm ci && npm start') {
        if (!service) {
          service = background('npm', ['start'], envFor)
          await service.waitFor(/HTTP listening on/)
        }
      } else if (cmd === 'npm test') {
        // This suite.
      } else if (cmd === 'npm run sim') {
        if (lines.length) lines.push(await run(lines.splice(0).join('\n')))
        sim = background('npm', ['run', 'sim'], envFor)
        await sim.waitFor(/code \S*([BCDFGHJKLMNPQRSTVWXZ]{4}-[BCDFGHJKLMNPQRSTVWXZ]{4})/)
      } else if (/^PIN=BCDF-GHJK\b/.test(cmd)) {
        const pin = (await sim!.waitFor(/code \S*([BCDFGHJKLMNPQRSTVWXZ]{4}-[BCDFGHJKLMNPQRSTVWXZ]{4})/))[1]
        lines.push(`PIN=${pin}`)
      } else lines.push(line)
    }
    return run(lines.join('\n'))
  }

  t.equal((await block(blocks[0]!)).trim(), '', 'quick start: the service is up')
  const signUp = await block(blocks[1]!)
  t.match(signUp, /"email":"me@example.com"/, 'sign up, then the session read back')
  const paired = await block(blocks[2]!)
  t.match(paired, /"credentials":\{/, 'pairing with curl alone: the device’s poll carries its credentials')
  const claimed = await block(blocks[3]!)
  t.match(claimed, /USER_ALREADY_EXISTS/, 'the simulator’s quick start: a second sign-up is refused, and that is fine')
  await sim!.waitFor(/online/)
  t.pass('the simulator is claimed with its pin and goes online')
  t.match(await block(blocks[4]!), /"status":"(queued|running|succeeded)"/, 'a generation started')
  const image = (await sim!.waitFor(/image +([0-9a-f]{8})\S* .*sha256 ok/))[1]
  await sim!.waitFor(new RegExp(`status .*shown ${image}`))
  t.pass('the simulator shows the image land, and reports it shown')
  // A reader looks up after seeing that; the service has the report a moment after it is sent.
  const [deviceId, token] = (await run('echo "$DEVICE $TOKEN"')).trim().split(' ')
  await eventually(async () => {
    const res = await fetch(`http://localhost:${PORT}/api/device/${deviceId}`, { headers: { authorization: `Bearer ${token}` } })
    return ((await res.json()) as { isSynced?: boolean }).isSynced === true ? true : null
  })
  const last = await block(blocks[5]!)
  t.match(last, /^true\n/, 'the frame is in sync')
  t.match(last, /"commandId":/, 'and takes a command')
  await sim!.waitFor(/identify/)
  t.pass('which the simulator carries out')
  bash.stdin.end()
})

// The display-sim command as a person runs it: --help lists the exit codes, a service that is
// not there exits with the documented code, bad options are refused, and a real run pairs
// through a claim token, prints what arrives and stops cleanly on Ctrl-C.
import t from 'tap'
import { spawn } from 'node:child_process'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { EXIT, loadState } from '../../device-sim/index.js'
import { freePort, startApp } from '../helpers/app.js'
import { makeClient, signUp, uniqueEmail } from '../helpers/client.js'
import { mqttUrl } from '../helpers/mqtt.js'
import { call, tempDir } from './helpers.js'

const root = fileURLToPath(new URL('../../', import.meta.url))
const bin = join(root, 'device-sim', 'bin.js')

type Run = { code: number | null; stdout: string; stderr: string }

function run(args: string[], opts: { cwd?: string; until?: (out: string) => boolean; onOutput?: (out: string, child: ReturnType<typeof spawn>) => void } = {}): Promise<Run> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [bin, ...args], { cwd: opts.cwd ?? root, env: { ...process.env, NO_COLOR: '1' }, stdio: ['ignore', 'pipe', 'pipe'] })
    let stdout = ''
    let stderr = ''
    child.stdout.on('data', (d: Buffer) => {
      stdout += d.toString('utf8')
      opts.onOutput?.(stdout, child)
    })
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString('utf8')))
    const timer = setTimeout(() => {
      child.kill('SIGKILL')
      reject(new Error(`display-sim ${args.join(' ')} did not finish:\n${stdout}\n${stderr}`))
    }, 40_000)
    child.on('error', reject)
    child.on('close', (code) => {
      clearTimeout(timer)
      resolve({ code, stdout, stderr })
    })
  })
}

t.test('--help lists the options and every exit code', async (t) => {
  const r = await run(['--help'])
  t.equal(r.code, 0)
  t.match(r.stdout, /Usage:/)
  for (const option of ['--server', '--profile', '--state', '--out', '--transport', '--count', '--claim-token', '--interval']) t.match(r.stdout, option)
  const codes = r.stdout.slice(r.stdout.indexOf('Exit codes:'))
  for (const [name, code] of Object.entries(EXIT)) t.match(codes, new RegExp(`^\\s+${code}\\s+\\S`, 'm'), `exit code ${code} (${name}) is documented`)
  t.match(codes, /3\s+service unreachable/)
})

t.test('an unreachable service exits with code 3 and says what to do', async (t) => {
  const dir = await tempDir(t)
  const port = await freePort() // nothing listens here
  const r = await run(['--server', `http://127.0.0.1:${port}`, '--state', join(dir, 's.json'), '--no-qr'], { cwd: dir })
  t.equal(r.code, EXIT.UNREACHABLE)
  t.match(r.stderr, `cannot reach http://127.0.0.1:${port}`)
  t.match(r.stderr, /is the service running\?/)
})

t.test('bad options exit with code 2', async (t) => {
  const bad = [['--transport', 'pigeon'], ['--profile', 'crt'], ['--count', '0'], ['--server', 'ftp://x'], ['--frobnicate']]
  for (const args of bad) {
    const r = await run(args)
    t.equal(r.code, EXIT.USAGE, args.join(' '))
    t.match(r.stderr, /display-sim: .+\nRun with --help/)
  }
})

t.test('a run pairs with a claim token, prints what arrives and stops on Ctrl-C', async (t) => {
  const svc = await startApp(t, { env: { DEVICE_POLL_INTERVAL: '0' } })
  const { token } = await signUp(makeClient(svc.url).client, uniqueEmail('cli'))
  const dir = await tempDir(t)
  const statePath = join(dir, 'desk.json')
  let promptSent = false
  let stopped = false
  const r = await run(['--server', svc.url, '--mqtt-url', mqttUrl(svc), '--name', 'desk', '--state', statePath, '--out', join(dir, 'img'), '--claim-token', token, '--no-qr'], {
    cwd: dir,
    onOutput(out, child) {
      const online = /desk online\s+\S+ \(new session\)/.test(out)
      if (online && !promptSent) {
        promptSent = true
        void loadState(statePath).then((s) => call(svc, 'POST', '/api/prompts', token, { text: 'a red kite', deviceId: s!.deviceId }))
      }
      if (/desk prompt\s+"a red kite"/.test(out) && !stopped) {
        stopped = true
        child.kill('SIGINT')
      }
    },
  })
  t.equal(r.code, EXIT.OK, 'Ctrl-C exits 0')
  t.match(r.stdout, /desk pairing\s+code [BCDFGHJKLMNPQRSTVWXZ]{4}-[BCDFGHJKLMNPQRSTVWXZ]{4}, claiming it with the token/, 'it printed the pin code it claims')
  t.match(r.stdout, /desk paired\s+device [0-9a-f-]{36}; credentials saved in /)
  t.match(r.stdout, /desk config\s+v1 name "desk"/, 'the config line')
  t.match(r.stdout, /desk prompt\s+"a red kite"/, 'the prompt line')
  t.match(r.stdout, /desk offline\s+stopped/, 'it disconnected on Ctrl-C')
  t.equal(r.stderr, '', 'no problems reported')
  const state = await loadState(statePath)
  t.ok(state?.credentials?.password, 'the credentials are kept for the next run')
})

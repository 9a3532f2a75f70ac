// The display-sim command as a person runs it: --help lists the exit codes, a service that is
// not there exits with the documented code, bad options are refused, and a real run pairs
// through a claim token, prints what arrives and stops cleanly on Ctrl-C.
import t from 'tap'
import { spawn } from 'node:child_process'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { EXIT, loadState } from '../../device-sim/index.js'
import { freePort, startApp, type TestApp } from '../helpers/app.js'
import { makeClient, signUp, uniqueEmail } from '../helpers/client.js'
import { mqttUrl } from '../helpers/mqtt.js'
import { call, tempDir } from './helpers.js'

const root = fileURLToPath(new URL('../../', import.meta.url))
const bin = join(root, 'device-sim', 'bin.js')

type Run = { code: number | null; stdout: string; stderr: string }

function run(
  args: string[],
  opts: { cwd?: string; until?: (out: string) => boolean; onOutput?: (out: string, child: ReturnType<typeof spawn>) => void } = {},
): Promise<Run> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [bin, ...args], {
      cwd: opts.cwd ?? root,
      env: { ...process.env, NO_COLOR: '1' },
      stdio: ['ignore', 'pipe', 'pipe'],
    })
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
  for (const option of ['--server', '--profile', '--state', '--out', '--transport', '--count', '--claim-token', '--interval'])
    t.match(r.stdout, option)
  const codes = r.stdout.slice(r.stdout.indexOf('Exit codes:'))
  for (const [name, code] of Object.entries(EXIT))
    t.match(codes, new RegExp(`^\\s+${code}\\s+\\S`, 'm'), `exit code ${code} (${name}) is documented`)
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

// One app for the runs against DEVICE_POLL_INTERVAL=0: each signs up a person of its own and
// counts only that person's devices and messages (an app start is about 1.2 s of CPU). The
// pairing-by-hand test needs a poll interval of its own and keeps its app.
let svc: TestApp
t.before(async () => {
  svc = await startApp(t, { env: { DEVICE_POLL_INTERVAL: '0' } })
})

t.test('a run pairs with a claim token, prints what arrives and stops on Ctrl-C', async (t) => {
  const { token } = await signUp(makeClient(svc.url).client, uniqueEmail('cli'))
  const dir = await tempDir(t)
  const statePath = join(dir, 'desk.json')
  let promptSent = false
  let stopped = false
  const r = await run(
    [
      '--server',
      svc.url,
      '--mqtt-url',
      mqttUrl(svc),
      '--name',
      'desk',
      '--state',
      statePath,
      '--out',
      join(dir, 'img'),
      '--claim-token',
      token,
      '--no-qr',
    ],
    {
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
    },
  )
  t.equal(r.code, EXIT.OK, 'Ctrl-C exits 0')
  t.match(
    r.stdout,
    /desk pairing\s+code [BCDFGHJKLMNPQRSTVWXZ]{4}-[BCDFGHJKLMNPQRSTVWXZ]{4}, claiming it with the token/,
    'it printed the pin code it claims',
  )
  t.match(r.stdout, /desk paired\s+device [0-9a-f-]{36}; credentials saved in /)
  t.match(r.stdout, /desk config\s+v1 name "desk"/, 'the config line')
  t.match(r.stdout, /desk prompt\s+"a red kite"/, 'the prompt line')
  t.match(r.stdout, /desk offline\s+stopped/, 'it disconnected on Ctrl-C')
  t.equal(r.stderr, '', 'no problems reported')
  const state = await loadState(statePath)
  t.ok(state?.credentials?.password, 'the credentials are kept for the next run')

  // A mistyped --server: the pairing is kept, and the simulator says what to do.
  const typo = 'http://127.0.0.1:9'
  const wrong = await run(['--server', typo, '--state', statePath, '--no-qr'], { cwd: dir })
  t.equal(wrong.code, EXIT.STATE_FILE, 'exit code 6')
  t.match(wrong.stderr, new RegExp(`holds the pairing with ${svc.url}.*--server is ${typo}.*add --reset`))
  t.same((await loadState(statePath))?.credentials, state?.credentials, 'the saved pairing is untouched')
  // --reset is the explicit way to pair anew (here with a service that is not there: exit 3).
  const reset = await run(['--server', typo, '--state', statePath, '--no-qr', '--reset'], { cwd: dir })
  t.equal(reset.code, EXIT.UNREACHABLE)
  t.match(reset.stdout + reset.stderr, /--reset: forgetting the pairing with/)
  t.notOk((await loadState(statePath))?.credentials, 'with --reset the old pairing is forgotten')
})

t.test(
  'pairing by hand: the code, a QR code of the link, the chosen display; a denied pairing with --pair-attempts 1 exits 4',
  async (t) => {
    const svc = await startApp(t, { env: { DEVICE_POLL_INTERVAL: '1' } })
    const { token } = await signUp(makeClient(svc.url).client, uniqueEmail('cli-deny'))
    const dir = await tempDir(t)
    let denied = false
    const r = await run(['--server', svc.url, '--profile', 'color', '--width', '640', '--height', '400', '--pair-attempts', '1'], {
      cwd: dir,
      onOutput(out) {
        const m = /code ([BCDFGHJKLMNPQRSTVWXZ]{4}-[BCDFGHJKLMNPQRSTVWXZ]{4}) \(valid until/.exec(out)
        if (m && /or with curl/.test(out) && !denied) {
          denied = true
          void call(svc, 'POST', '/api/device/deny', token, { pinCode: m[1] })
        }
      },
    })
    t.equal(r.code, EXIT.PAIRING_FAILED, 'exit code 4')
    t.match(r.stderr, /denied/, 'says the pairing was denied')
    const link = /claim it: open (\S+) or scan:/.exec(r.stdout)
    t.ok(link, 'prints the pairing link')
    t.match(
      link?.[1],
      new RegExp(`^${svc.url}/device\\?user_code=[BCDFGHJKLMNPQRSTVWXZ]{4}-[BCDFGHJKLMNPQRSTVWXZ]{4}$`),
      'carrying the pin it shows',
    )
    const qrLines = r.stdout.split('\n').filter((l) => /[█▀▄]{4,}/.test(l))
    t.ok(qrLines.length >= 10, `and a QR code of it (${qrLines.length} lines)`)
    t.match(r.stdout, /or with curl: curl -X POST/)
    // The default state file, in ./.display-sim/ of the working folder, keeps the chosen display.
    const state = await loadState(join(dir, '.display-sim', 'sim-color.json'))
    t.same(state?.display, { width: 640, height: 400, palette: 'color' }, '--profile color --width 640 --height 400')
  },
)

t.test('a refused claim token exits 5; an unreadable state file exits 6', async (t) => {
  const dir = await tempDir(t)
  const refused = await run(['--server', svc.url, '--state', join(dir, 'a.json'), '--claim-token', 'not-a-session', '--no-qr'], {
    cwd: dir,
  })
  t.equal(refused.code, EXIT.CLAIM_REFUSED, 'exit code 5')
  t.match(refused.stderr, /claim token/i)
  const { writeFile } = await import('node:fs/promises')
  const broken = join(dir, 'broken.json')
  await writeFile(broken, '{ this is not json')
  const unreadable = await run(['--server', svc.url, '--state', broken, '--no-qr'], { cwd: dir })
  t.equal(unreadable.code, EXIT.STATE_FILE, 'exit code 6')
  t.match(unreadable.stderr, /not valid JSON; delete it to pair again/)
})

t.test('fleet mode from the command line: a progress bar, then the summary; Ctrl-C stops it', async (t) => {
  const { token } = await signUp(makeClient(svc.url).client, uniqueEmail('cli-fleet'))
  const dir = await tempDir(t)
  let stopped = false
  const r = await run(
    [
      '--server',
      svc.url,
      '--mqtt-url',
      mqttUrl(svc),
      '--count',
      '3',
      '--name',
      'wall',
      '--claim-token',
      token,
      '--state',
      join(dir, 'fleet'),
    ],
    {
      cwd: dir,
      onOutput(out, child) {
        if (/all 3 devices paired and connected/.test(out) && !stopped) {
          stopped = true
          child.kill('SIGINT')
        }
      },
    },
  )
  t.equal(r.code, EXIT.OK)
  t.match(r.stderr, /pairing and connecting \[[^\]]*\] \d\/3 connected/, 'the progress bar (on stderr, as cli-progress writes it)')
  t.match(r.stdout, /wall fleet\s+all 3 devices paired and connected/)
  t.match(
    r.stdout,
    /wall stopped\s+0\/3 connected · \d+ messages · 0 images · 0 commands · 0 duplicates · 0 errors/,
    'a summary when it stops',
  )
  const list = await call<{ devices: Array<{ name: string }> }>(svc, 'GET', '/api/device', token)
  t.same(list.body.devices.map((d) => d.name).sort(), ['wall-1', 'wall-2', 'wall-3'], 'three devices on the account')

  // Without a claim token somebody types the codes: the quiet fleet output still shows them.
  let seen = false
  const manual = await run(['--server', svc.url, '--count', '2', '--name', 'hall', '--state', join(dir, 'manual')], {
    cwd: dir,
    onOutput(out, child) {
      if ((out.match(/pairing\s+code [BCDFGHJKLMNPQRSTVWXZ]{4}-[BCDFGHJKLMNPQRSTVWXZ]{4} → http/g) ?? []).length >= 2 && !seen) {
        seen = true
        child.kill('SIGINT')
      }
    },
  })
  t.equal(manual.code, EXIT.OK)
  t.match(manual.stdout, /hall-1 pairing\s+code \S+ → /)
  t.match(manual.stdout, /hall-2 pairing\s+code \S+ → /)
})

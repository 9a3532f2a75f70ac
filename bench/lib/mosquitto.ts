// The peer broker: Mosquitto (/usr/sbin/mosquitto), started by the benchmark on a free loopback
// port with a password file (mosquitto_passwd -U hashes it: PBKDF2-SHA512) and an ACL that gives
// each device what our broker gives it: read its own devices/{id}/... topics and fleet/cmd,
// write only devices/{id}/up/...; the service account reads and writes everything.
import { execFileSync, spawn, type ChildProcess } from 'node:child_process'
import { chmodSync, existsSync, writeFileSync } from 'node:fs'
import { userInfo } from 'node:os'
import { join } from 'node:path'
import { connect as tcpConnect } from 'node:net'
import mqtt, { type MqttClient } from 'mqtt'
import { freePort } from './ports.js'
import { Unavailable } from './unavailable.js'

const MOSQUITTO = '/usr/sbin/mosquitto'
export const SERVICE_USER = 'bench-service'
export const SERVICE_PASSWORD = 'bench-service-password'

export function mosquittoVersion(): string {
  try {
    const out = execFileSync(MOSQUITTO, ['-h'], { encoding: 'utf8' })
    return /version (\S+)/.exec(out)?.[1] ?? 'unknown'
  } catch (err) {
    // `mosquitto -h` exits non-zero after printing its usage.
    const out = String((err as { stdout?: string }).stdout ?? '')
    return /version (\S+)/.exec(out)?.[1] ?? 'unknown'
  }
}

/** Writes the hashed password file and the ACL for `creds` into `dir` (once per credential set). */
export function writeMosquittoAuth(dir: string, creds: Array<{ id: string; secret: string }>): { passwordFile: string; aclFile: string } {
  const passwordFile = join(dir, 'mosquitto.passwd')
  const aclFile = join(dir, 'mosquitto.acl')
  const lines = creds.map((c) => `${c.id}:${c.secret}`)
  lines.push(`${SERVICE_USER}:${SERVICE_PASSWORD}`)
  writeFileSync(passwordFile, `${lines.join('\n')}\n`, { mode: 0o644 })
  execFileSync('/usr/bin/mosquitto_passwd', ['-U', passwordFile])
  chmodSync(passwordFile, 0o644)
  writeFileSync(
    aclFile,
    [
      `user ${SERVICE_USER}`,
      'topic readwrite devices/#',
      'topic readwrite fleet/#',
      '',
      // Patterns apply to every user; %u is the username (the device id).
      'pattern read devices/%u/#',
      'pattern write devices/%u/up/#',
      'pattern read fleet/cmd',
      '',
    ].join('\n'),
    { mode: 0o644 },
  )
  return { passwordFile, aclFile }
}

/** Every Mosquitto still running: killed when the benchmark process exits, however it exits. */
const running = new Set<ChildProcess>()
process.on('exit', () => {
  for (const p of running) p.kill('SIGKILL')
})

export type Mosquitto = { pid: number; port: number; stop(): Promise<void> }

export async function startMosquitto(
  dir: string,
  auth: { passwordFile: string; aclFile: string },
  name = 'mosquitto',
  /** `openFiles`: the soft open-files limit to start it with (through sh's ulimit), for fleets past ~1,000 devices. */
  opts: { openFiles?: number } = {},
): Promise<Mosquitto> {
  const port = await freePort()
  const conf = join(dir, `${name}.conf`)
  writeFileSync(
    conf,
    [
      `listener ${port} 127.0.0.1`,
      'allow_anonymous false',
      `password_file ${auth.passwordFile}`,
      `acl_file ${auth.aclFile}`,
      // In memory, like our embedded default without Redis.
      'persistence false',
      // The same per-device offline queue bound as ours (MQTT_OFFLINE_QUEUE_LIMIT default).
      'max_queued_messages 1000',
      'max_connections -1',
      // Started as root, Mosquitto would switch to its own user, which cannot read files in the
      // benchmark's private temporary folder; as any other user this line changes nothing.
      `user ${userInfo().username}`,
      'log_dest stderr',
      'log_type error',
      'log_type warning',
      '',
    ].join('\n'),
    { mode: 0o644 },
  )
  if (!existsSync(MOSQUITTO))
    throw new Unavailable(`Mosquitto, the peer broker, is not installed (${MOSQUITTO}; Debian: apt-get install mosquitto)`)
  const proc: ChildProcess = opts.openFiles
    ? spawn('/bin/sh', ['-c', `ulimit -n ${Math.floor(opts.openFiles)} && exec "$0" "$@"`, MOSQUITTO, '-c', conf], {
        stdio: ['ignore', 'ignore', 'pipe'],
      })
    : spawn(MOSQUITTO, ['-c', conf], { stdio: ['ignore', 'ignore', 'pipe'] })
  running.add(proc)
  let stderr = ''
  proc.stderr!.on('data', (d) => (stderr = (stderr + d.toString()).slice(-4000)))
  let exited = false
  const exit = new Promise<void>((resolve) =>
    proc.once('exit', () => {
      exited = true
      running.delete(proc)
      resolve()
    }),
  )
  // Ready when the port accepts connections.
  const deadline = Date.now() + 10_000
  for (;;) {
    if (exited) throw new Error(`mosquitto exited: ${stderr}`)
    if (await canConnect(port)) break
    if (Date.now() > deadline) {
      proc.kill('SIGKILL')
      throw new Error(`mosquitto did not listen on ${port}: ${stderr}`)
    }
    await new Promise((r) => setTimeout(r, 50))
  }
  return {
    pid: proc.pid!,
    port,
    async stop() {
      if (exited) return
      proc.kill('SIGTERM')
      const t = setTimeout(() => proc.kill('SIGKILL'), 5000)
      await exit
      clearTimeout(t)
    },
  }
}

function canConnect(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = tcpConnect({ host: '127.0.0.1', port })
    s.once('connect', () => {
      s.destroy()
      resolve(true)
    })
    s.once('error', () => resolve(false))
  })
}

/** The service's own connection to a benchmark's Mosquitto (the user its password file and ACL name). */
export function connectService(port: number): Promise<MqttClient> {
  return mqtt.connectAsync(`mqtt://127.0.0.1:${port}`, {
    clientId: SERVICE_USER,
    username: SERVICE_USER,
    password: SERVICE_PASSWORD,
    clean: true,
    reconnectPeriod: 0,
    protocolVersion: 4,
  })
}

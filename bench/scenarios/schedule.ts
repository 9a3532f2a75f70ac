// schedule: 10,000 devices (1,000 with --quick), each with a playlist of three stored images
// rotating every 5 minutes, their windows opening on five different minutes (a fifth of the fleet
// turns each minute). The scheduler's clock is moved a minute at a time; each move is followed by
// one look (tick), as the loop does when a turn falls due. Measured per fired turn: the process's
// CPU (PGlite runs in the process, so its work is counted; PostgreSQL's is not) and how late each
// turn's send was recorded after its due moment. The peer is the same send made directly
// (deliverImage, what a manual send does after converting), a round after each minute, in the
// same process: one device at a time (32 at once), where the scheduler sends a claimed batch's
// images together.
// Runs on PGlite, then on a fresh database on the machine's PostgreSQL when one is reachable.
import { randomUUID } from 'node:crypto'
import { mkdtempSync } from 'node:fs'
import { join } from 'node:path'
import { sql } from 'drizzle-orm'
import postgres from 'postgres'
import sharp from 'sharp'
import { buildApp } from '../../src/app.js'
import { loadConfig } from '../../src/config.js'
import { rowsOf } from '../../src/db/client.js'
import { user } from '../../src/db/schema.js'
import { device } from '../../src/devices/tables.js'
import { deliverImage } from '../../src/images/delivery.js'
import { storeImage } from '../../src/images/pipeline.js'
import { DISPLAY_PRESETS } from '../../src/images/profiles.js'
import { findImage, findVariants } from '../../src/images/repository.js'
import { deviceSchedule, playlist, playlistItem, type Weekday } from '../../src/schedules/tables.js'
import type { Context, Scenario } from '../lib/context.js'
import { summarize, type Metric, type ScenarioResult } from '../lib/report.js'

const STEP_MS = 60_000
const T0 = Date.parse('2026-06-01T00:05:00Z')
const EVERY_DAY: Weekday[] = ['mon', 'tue', 'wed', 'thu', 'fri', 'sat', 'sun']

const percentile = (xs: number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b)
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))] ?? Number.NaN
}
const cpuMs = (u: NodeJS.CpuUsage) => (u.user + u.system) / 1000

type Outcome = { label: string; metric: Metric; note: string; details: Record<string, unknown> }

/** A database of its own on the machine's PostgreSQL for one run, dropped afterwards. */
async function freshDatabase(baseUrl: string): Promise<{ url: string; drop: () => Promise<void> }> {
  const name = `bench_${randomUUID().replaceAll('-', '').slice(0, 12)}`
  const admin = postgres(baseUrl, { max: 1, connect_timeout: 3, onnotice: () => {} })
  try {
    await admin.unsafe(`CREATE DATABASE ${name}`)
  } finally {
    await admin.end({ timeout: 1 })
  }
  const url = new URL(baseUrl)
  url.pathname = `/${name}`
  return {
    url: url.toString(),
    drop: async () => {
      const again = postgres(baseUrl, { max: 1, onnotice: () => {} })
      await again.unsafe(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`)
      await again.end()
    },
  }
}

async function runOn(ctx: Context, databaseUrl?: string): Promise<Outcome> {
  const label = databaseUrl ? 'PostgreSQL' : 'PGlite'
  const devices = ctx.quick ? 1000 : 10_000
  const steps = ctx.quick ? 5 : 10
  let now = T0
  const env: Record<string, string> = {
    DATA_DIR: mkdtempSync(join(ctx.workDir, 'schedule-')),
    LOG_LEVEL: 'silent',
    MQTT_PORT: '0',
    HOST: '127.0.0.1',
    // Only the benchmark's ticks look for due turns.
    SCHEDULE_TICK_MS: '60000',
    ...(databaseUrl ? { DATABASE_URL: databaseUrl } : {}),
  }
  const app = await buildApp(loadConfig(env), { clock: () => new Date(now) })
  await app.ready()
  const db = app.database.db
  try {
    ctx.log(`schedule: ${devices} devices on ${label}`)
    const userId = randomUUID()
    await db.insert(user).values({ id: userId, name: 'Bench', email: `bench-${userId}@example.test`, emailVerified: true })
    const profile = DISPLAY_PRESETS['bw-800x480']
    const imageIds: string[] = []
    for (const background of ['white', 'black', 'gray']) {
      const png = await sharp({ create: { width: 320, height: 240, channels: 3, background } })
        .png()
        .toBuffer()
      imageIds.push(
        (await storeImage({ db, storage: app.storage, images: app.images }, { userId, source: 'upload', original: png, profile })).image.id,
      )
    }
    const playlistId = randomUUID()
    await db.insert(playlist).values({ id: playlistId, userId, name: 'Bench', mode: 'sequential', itemSeconds: 300 })
    await db
      .insert(playlistItem)
      .values(imageIds.map((ref, position) => ({ id: randomUUID(), playlistId, position, kind: 'image' as const, ref, addedBy: userId })))
    const ids = Array.from({ length: devices }, () => randomUUID())
    for (let i = 0; i < ids.length; i += 1000) {
      const chunk = ids.slice(i, i + 1000)
      await db
        .insert(device)
        .values(chunk.map((id, j) => ({ id, name: `Frame ${i + j}`, userId, pinCode: '000000', display: profile, isActive: true })))
      await db.insert(deviceSchedule).values(
        chunk.map((deviceId, j) => ({
          deviceId,
          userId,
          timeZone: 'UTC',
          // Windows open on five different minutes: a fifth of the fleet turns each minute.
          rules: [{ playlistId, days: EVERY_DAY, from: `00:0${(i + j) % 5}`, to: '24:00' }],
          sleep: [],
          nextAt: new Date(now),
        })),
      )
    }
    const scheduler = app.scheduler!
    // The first look starts every device's rotation (not measured: a deploy's first minute).
    let t0 = performance.now()
    const started = await scheduler.tick()
    ctx.log(`schedule (${label}): ${started} first turns in ${((performance.now() - t0) / 1000).toFixed(1)} s`)

    // The peer: the same image sent directly, to as many devices as turn in a minute (at most
    // 400), one round after each minute of turns, so both see tables of the same size.
    const sample = ids.slice(0, Math.min(400, Math.ceil(devices / 5)))
    const image = (await findImage(db, imageIds[0]!))!
    const stored = { image, variants: await findVariants(db, image.id) }
    const delivery = { db, link: app.deviceLink, storage: app.storage, baseUrl: 'http://127.0.0.1' }
    const cpuPerTurn: number[] = []
    const directCpu: number[] = []
    const late: number[] = []
    let fired = 0
    for (let s = 1; s <= steps; s++) {
      now = T0 + s * STEP_MS
      const dueAt = new Date()
      let cpu0 = process.cpuUsage()
      t0 = performance.now()
      const n = await scheduler.tick()
      const cpu = cpuMs(process.cpuUsage(cpu0))
      fired += n
      if (n) cpuPerTurn.push(cpu / n)
      // When each turn's send was recorded (the database's clock), against the moment it fell due.
      const rows = rowsOf<{ ms: number }>(
        await db.execute(
          sql`SELECT extract(epoch FROM created_at - ${dueAt.toISOString()}::timestamptz) * 1000 AS ms FROM event WHERE type = 'device.image' AND created_at >= ${dueAt.toISOString()}::timestamptz`,
        ),
      )
      late.push(...rows.map((r) => Number(r.ms)))
      ctx.log(
        `schedule (${label}): minute ${s}: ${n} turns in ${(performance.now() - t0).toFixed(0)} ms, ${(cpu / Math.max(1, n)).toFixed(2)} ms CPU each`,
      )
      cpu0 = process.cpuUsage()
      for (let i = 0; i < sample.length; i += 32)
        await Promise.all(sample.slice(i, i + 32).map((id) => deliverImage(delivery, id, profile, stored, { userId })))
      directCpu.push(cpuMs(process.cpuUsage(cpu0)) / sample.length)
    }
    const p50 = percentile(late, 50)
    const p99 = percentile(late, 99)
    ctx.log(
      `schedule (${label}): ${fired} turns, ${summarize(cpuPerTurn)?.median.toFixed(2)} ms CPU each; late p50 ${p50.toFixed(0)} ms, p99 ${p99.toFixed(0)} ms`,
    )
    return {
      label,
      metric: { name: `${label}: CPU ms per turn (peer: a direct send)`, better: 'lower', ours: cpuPerTurn, peer: directCpu },
      note: `${label}: ${devices} devices, a turn every 5 minutes, ${devices / 5} falling due each minute; ${fired} turns over ${steps} minutes. How late a turn's send was recorded after it fell due: p50 ${p50.toFixed(0)} ms, p99 ${p99.toFixed(0)} ms (targets: under 2 ms CPU per turn, p99 under 1 s).`,
      details: { devices, steps, lateP50Ms: p50, lateP99Ms: p99, cpuPerTurnMs: cpuPerTurn, directCpuMs: directCpu },
    }
  } finally {
    await app.close()
  }
}

export const schedule: Scenario = {
  name: 'schedule',
  summary:
    '10,000 devices rotating a playlist every 5 min, clock moved a minute at a time: CPU per fired turn and p99 lateness vs a direct send',
  async run(ctx): Promise<ScenarioResult> {
    const outcomes = [await runOn(ctx)]
    const pg = process.env.BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres'
    const fresh = await freshDatabase(pg).catch((err: Error) => {
      ctx.log(`schedule: no PostgreSQL at ${pg} (${err.message}; set BENCH_DATABASE_URL): PGlite only`)
      return undefined
    })
    if (fresh) {
      try {
        outcomes.push(await runOn(ctx, fresh.url))
      } finally {
        await fresh.drop()
      }
    }
    return {
      scenario: 'schedule',
      ours: 'the scheduler',
      peer: 'the same image sent directly (deliverImage)',
      rounds: ctx.quick ? 5 : 10,
      metrics: outcomes.map((o) => o.metric),
      notes: [
        ...outcomes.map((o) => o.note),
        'Each turn sends the image and the config (with the next change): two messages where the direct send is one. The process CPU includes PGlite (in the process), not PostgreSQL (its own processes).',
      ],
      details: Object.fromEntries(outcomes.map((o) => [o.label, o.details])),
    }
  },
}

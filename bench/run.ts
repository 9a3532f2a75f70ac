// npm run bench [-- --quick] [-- --only NAME[,NAME…]] [-- --list] [-- --check] [-- --save] [-- --save-baseline] [-- --settle SECONDS]
// Runs each scenario (ours and its peer alternating, A B A B …), writes bench/out/<scenario>.json
// (--quick: bench/out/quick/; ignored by git) and prints a markdown table per scenario and a
// summary table (also bench/out/summary.md). --save also writes them to the committed
// bench/results/, which the README and docs/benchmarks.md quote. --check compares the ratios with
// bench/baseline.json and exits 1 on a regression beyond a figure's band; --save-baseline records
// this run's ratios there. A scenario this machine cannot run (a peer or service missing, a limit
// too low) is skipped with its reason; the run still exits 0.
import { mkdtempSync, rmSync, writeFileSync, mkdirSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { Context, Scenario } from './lib/context.js'
import {
  loadNote,
  loadNow,
  machine,
  markdown,
  QUIET_LOAD,
  runResultsDir,
  savedResultsDir,
  TABLE_HEAD,
  tableRows,
  writeResult,
  type ScenarioResult,
} from './lib/report.js'
import { broadcast, fanOut, outbox } from './scenarios/fan-out.js'
import { connectStorm, sessions } from './scenarios/fleet-scale.js'
import { fleet } from './scenarios/fleet.js'
import { getSession } from './scenarios/get-session.js'
import { pairing } from './scenarios/pairing.js'
import { display } from './scenarios/display.js'
import { delivery } from './scenarios/delivery.js'
import { schedule } from './scenarios/schedule.js'
import { screens } from './scenarios/screens.js'
import { fanOutRabbitmq } from './scenarios/rabbitmq.js'
import { compare, saveBaseline, verdictTable } from './lib/baseline.js'
import { Unavailable } from './lib/unavailable.js'

// Scenarios on the shared embedded server first, then those that start servers of their own.
const scenarios: Scenario[] = [
  fanOut,
  outbox,
  broadcast,
  fanOutRabbitmq,
  delivery,
  pairing,
  getSession,
  display,
  connectStorm,
  sessions,
  fleet,
  schedule,
  screens,
]

function parseArgs(argv: string[]) {
  const out = { quick: false, only: [] as string[], list: false, check: false, save: false, saveBaseline: false, settle: 90 }
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!
    if (a === '--quick') out.quick = true
    else if (a === '--list') out.list = true
    else if (a === '--check') out.check = true
    else if (a === '--save') out.save = true
    else if (a === '--save-baseline') out.saveBaseline = true
    else if (a === '--settle') out.settle = Number(argv[++i])
    else if (a === '--only') out.only.push(...(argv[++i] ?? '').split(','))
    else if (a.startsWith('--only=')) out.only.push(...a.slice(7).split(','))
    else throw new Error(`unknown argument ${a} (use --quick, --only NAME, --list, --check, --save, --save-baseline, --settle SECONDS)`)
  }
  out.only = out.only.map((s) => s.trim()).filter(Boolean)
  if (!Number.isFinite(out.settle) || out.settle < 0) throw new Error('--settle takes a number of seconds')
  return out
}

async function main() {
  const args = parseArgs(process.argv.slice(2))
  if (args.list) {
    for (const s of scenarios) console.log(`${s.name.padEnd(14)} ${s.summary}`)
    return
  }
  const unknown = args.only.filter((n) => !scenarios.some((s) => s.name === n))
  if (unknown.length) throw new Error(`unknown scenario ${unknown.join(', ')}; known: ${scenarios.map((s) => s.name).join(', ')}`)
  const selected = args.only.length ? scenarios.filter((s) => args.only.includes(s.name)) : scenarios.filter((s) => !s.onlyWhenNamed)
  const notNamed = args.only.length ? [] : scenarios.filter((s) => s.onlyWhenNamed)

  const workDir = mkdtempSync(join(tmpdir(), 'dps-bench-'))
  const started = performance.now()
  const ctx: Context = {
    quick: args.quick,
    workDir,
    log: (msg) => console.error(`[${((performance.now() - started) / 1000).toFixed(0).padStart(4)} s] ${msg}`),
    shared: () => Promise.reject(new Error('not ready')),
  }
  const shared = new Map<string, { value: Promise<unknown>; dispose: (v: unknown) => Promise<void> }>()
  ctx.shared = <T>(key: string, create: () => Promise<T>, dispose: (v: T) => Promise<void>) => {
    let entry = shared.get(key)
    if (!entry) {
      entry = { value: create(), dispose: dispose as (v: unknown) => Promise<void> }
      shared.set(key, entry)
    }
    return entry.value as Promise<T>
  }
  /** Disposes shared resources no scenario after index `i` uses (newest first: the rig before the server it runs on). */
  const release = async (i: number) => {
    const needed = new Set(selected.slice(i + 1).flatMap((s) => s.uses ?? []))
    for (const key of [...shared.keys()].reverse()) {
      if (needed.has(key)) continue
      const entry = shared.get(key)!
      shared.delete(key)
      await entry.value.then(entry.dispose, () => {}).catch((err) => console.error(`disposing ${key} failed:`, err))
    }
  }
  const env = { ...machine(), quick: args.quick }
  const done: ScenarioResult[] = []
  const failed: string[] = []
  const skipped: string[] = notNamed.map((s) => `skipped ${s.name}: ${s.onlyWhenNamed} (npm run bench -- --only ${s.name})`)
  try {
    const prepared = await Promise.allSettled(selected.map((s) => s.prepare?.(ctx)))
    for (const [i, p] of prepared.entries())
      if (p.status === 'rejected' && !(p.reason instanceof Unavailable)) console.error(`preparing ${selected[i]!.name} failed:`, p.reason)
    for (const [i, s] of selected.entries()) {
      // The load average trails: the scenario before this one (or a build) still shows in it. Waiting
      // for it to settle keeps one scenario's work out of the next one's figures.
      const waited = await settleLoad(args.settle)
      if (waited) ctx.log(`waited ${waited} s for the load average to fall to ${QUIET_LOAD}`)
      ctx.log(`scenario ${s.name}`)
      const t0 = performance.now()
      const loadBefore = loadNow()
      try {
        const r = await s.run(ctx)
        const seconds = Math.round((performance.now() - t0) / 1000)
        const load = loadNote(loadBefore, loadNow())
        r.notes.push(load.note)
        if (load.busy)
          ctx.log(`warning: load average ${loadBefore} before ${s.name} (above ${QUIET_LOAD}): its figures flatter the slower side`)
        writeResult(r, { env: { ...env, seconds, load: { before: loadBefore, after: loadNow() } } }, { quick: args.quick, save: args.save })
        done.push(r)
        console.log(markdown(r))
        ctx.log(`scenario ${s.name} done in ${seconds} s`)
      } catch (err) {
        if (err instanceof Unavailable) {
          skipped.push(`skipped ${s.name}: ${err.message}`)
          ctx.log(`skipped ${s.name}: ${err.message}`)
        } else {
          failed.push(s.name)
          console.error(`scenario ${s.name} failed:`, err)
        }
      }
      await release(i)
    }
  } finally {
    await release(selected.length)
    rmSync(workDir, { recursive: true, force: true })
  }

  const total = Math.round((performance.now() - started) / 1000)
  const summary = [
    `Benchmarks ${args.quick ? '(--quick) ' : ''}on ${env.cpus} CPUs (${env.cpuModel}), ${env.memoryGiB} GiB, Node ${env.node}, load average at start ${env.loadAverage.join(' / ')}; ${env.date}; ${total} s.`,
    '',
    ...TABLE_HEAD,
    ...done.flatMap(tableRows),
    '',
    ...skipped.map((line) => `- ${line}`),
  ].join('\n')
  console.log('## Summary\n')
  console.log(summary)
  if (!args.only.length) {
    for (const dir of args.save ? [runResultsDir, savedResultsDir] : [runResultsDir]) {
      mkdirSync(dir, { recursive: true })
      writeFileSync(join(dir, args.quick ? 'summary-quick.md' : 'summary.md'), summary)
    }
  }
  if (args.saveBaseline) {
    saveBaseline(done, args.quick)
    console.log(`\nbench/baseline.json: the ${args.quick ? 'quick' : 'full'} ratios of ${done.map((r) => r.scenario).join(', ')} recorded`)
  }
  if (args.check) {
    const verdicts = compare(done, args.quick)
    console.log(`\n## Against bench/baseline.json (${args.quick ? 'quick' : 'full'} runs)\n`)
    console.log(verdicts.length ? verdictTable(verdicts) : 'no figure of this run has a baseline')
    const regressed = verdicts.filter((v) => v.regressed)
    if (regressed.length) {
      console.error(`regressed beyond the band: ${regressed.map((v) => `${v.scenario} ${v.metric}`).join('; ')}`)
      process.exitCode = 1
    }
  }
  if (failed.length) {
    console.error(`failed: ${failed.join(', ')}`)
    process.exitCode = 1
  }
}

/** Waits (at most `seconds`) until the 1-minute load average is at most QUIET_LOAD; answers the seconds waited. */
async function settleLoad(seconds: number): Promise<number> {
  const started = Date.now()
  while (loadNow() > QUIET_LOAD && Date.now() - started < seconds * 1000) await new Promise((r) => setTimeout(r, 5000))
  return Math.round((Date.now() - started) / 1000)
}

// Children end with their IPC channel; Mosquitto is killed by an exit handler (lib/mosquitto.ts).
for (const signal of ['SIGINT', 'SIGTERM'] as const) process.on(signal, () => process.exit(130))

main().catch((err) => {
  console.error(err)
  process.exit(1)
})

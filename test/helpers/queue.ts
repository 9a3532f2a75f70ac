// The run's queue of test files, shared by the worker processes tap starts (test/helpers/worker.ts):
// a file is taken by creating its claim file exclusively, so each runs exactly once whichever
// worker is free first. Longest first by the times earlier runs recorded on this machine, so that
// no long file starts last and keeps one worker busy while the others are done. A machine that
// never ran the suite (every CI run: a fresh clone on a fresh machine) orders by test/times.tsv,
// times committed from a quiet run; files in neither (new ones) first of all, the larger first.
import { appendFileSync, mkdirSync, openSync, closeSync, readFileSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { embeddedOnly, ownProcess } from '../groups.js'

const testRoot = fileURLToPath(new URL('..', import.meta.url))
const TIMES = join(tmpdir(), 'dps-test-times.tsv')
/** Times of a quiet run, committed (`npm run test:times` rewrites it from this machine's). */
export const SEED_TIMES = join(testRoot, 'times.tsv')
const QUEUES = join(tmpdir(), 'dps-test-queues')
const DAY_MS = 86_400_000

/** Every test file, relative to test/, but the entry files of test/groups/. */
export function testFiles(): string[] {
  return readdirSync(testRoot, { recursive: true, encoding: 'utf8' })
    .filter((f) => f.endsWith('.test.ts') && !f.startsWith('groups/'))
    .sort()
}

/** The files the workers share: all but those that run in a process of their own. */
export function queuedFiles(): string[] {
  const own = new Set<string>(Object.values(ownProcess))
  return testFiles().filter((f) => !own.has(f))
}

/** The second pass (PostgreSQL and Redis) leaves out the files whose outcome is the same on either. */
export function skippedHere(file: string): boolean {
  return Boolean(process.env.DATABASE_URL) && embeddedOnly.includes(file)
}

const kind = () => (process.env.DATABASE_URL ? 'backing' : 'embedded')

/**
 * One run's identity, the same in every test process tap starts: its pid and start time (a pid
 * alone comes back after a reboot). DPS_TEST_RUN overrides it.
 */
function runId(): string {
  if (process.env.DPS_TEST_RUN) return process.env.DPS_TEST_RUN
  let started = '0'
  try {
    const stat = readFileSync(`/proc/${process.ppid}/stat`, 'utf8')
    started = stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19] ?? '0'
  } catch {
    // Not Linux: the pid alone.
  }
  return `${process.ppid}-${started}`
}

/** Per file, the time of `k` runs in `path` (later lines win); none when the file is missing. */
export function readTimes(path: string, k: string): Map<string, number> {
  const times = new Map<string, number>()
  let text = ''
  try {
    text = readFileSync(path, 'utf8')
  } catch {
    return times
  }
  for (const line of text.split('\n')) {
    const [lineKind, file, ms] = line.split('\t')
    if (lineKind === k && file && Number(ms) > 0) times.set(file, Number(ms))
  }
  return times
}

/** This machine's times, and the committed ones for files it has none of. */
function recordedTimes(): Map<string, number> {
  return new Map([...readTimes(SEED_TIMES, kind()), ...readTimes(TIMES, kind())])
}

/** Files without a time first (the larger first), then the longest first. */
export function order(files: string[], times: Map<string, number> = recordedTimes()): string[] {
  const size = (f: string) => statSync(join(testRoot, f)).size
  const unknown = files.filter((f) => !times.has(f)).sort((a, b) => size(b) - size(a))
  const known = files.filter((f) => times.has(f)).sort((a, b) => (times.get(b) ?? 0) - (times.get(a) ?? 0))
  return [...unknown, ...known]
}

/** Old runs' claim folders; and the times file rewritten with the latest time of each file. */
function tidy(): void {
  for (const name of readdirSync(QUEUES)) {
    const dir = join(QUEUES, name)
    if (Date.now() - statSync(dir).mtimeMs > DAY_MS) rmSync(dir, { recursive: true, force: true })
  }
  try {
    const latest = new Map<string, string>()
    for (const line of readFileSync(TIMES, 'utf8').split('\n')) {
      const [k, file] = line.split('\t')
      if (k && file) latest.set(`${k}\t${file}`, line)
    }
    writeFileSync(TIMES, [...latest.values(), ''].join('\n'))
  } catch {
    // No times yet.
  }
}

export type Queue = {
  /** The next file nobody has taken, or undefined when none is left. */
  take(): string | undefined
  /** Records how long a file took, for the order of later runs. */
  finished(file: string, ms: number): void
}

export function openQueue(): Queue {
  const dir = join(QUEUES, runId())
  mkdirSync(QUEUES, { recursive: true })
  try {
    mkdirSync(dir)
    // The first worker of a run tidies up after the earlier ones.
    tidy()
  } catch (err) {
    if ((err as { code?: string }).code !== 'EEXIST') throw err
  }
  const files = order(queuedFiles().filter((f) => !skippedHere(f)))
  return {
    take() {
      for (const file of files) {
        try {
          closeSync(openSync(join(dir, file.replaceAll('/', '__')), 'wx'))
          return file
        } catch (err) {
          if ((err as { code?: string }).code !== 'EEXIST') throw err
        }
      }
      return undefined
    },
    finished(file, ms) {
      appendFileSync(TIMES, `${kind()}\t${file}\t${Math.round(ms)}\n`)
    },
  }
}

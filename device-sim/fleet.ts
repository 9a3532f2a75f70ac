// Fleet mode: N simulated devices in one process, each with its own state file and persistent
// session. They pair through a claim token (or a development server's auto-approve switch), a
// bounded number at a time, and keep running until stopped. The benchmarks drive this in-process.
import { EventEmitter } from 'node:events'
import { join } from 'node:path'
import { SimDevice, type SimDeviceOptions } from './device.js'

export type FleetOptions = Omit<SimDeviceOptions, 'name' | 'statePath' | 'outDir'> & {
  count: number
  /** Device i is named `${name}-${i}` (from 1). */
  name: string
  /** One state file per device in this folder. */
  stateDir: string
  /** When set, device i saves its images in `${outDir}/${name}-${i}`. */
  outDir?: string
  /** Devices pairing and making their first connection at the same time. */
  concurrency?: number
}

export type FleetStats = {
  total: number
  paired: number
  connected: number
  messages: number
  images: number
  commands: number
  duplicates: number
  errors: number
  reconnects: number
}

export type FleetEvents = {
  /** After every pairing and every first connection. */
  progress: [FleetStats]
  /** A device failed for good (its error stops the fleet's start). */
  failure: [{ device: SimDevice; error: Error }]
  /** Every device has connected once. */
  ready: [FleetStats]
}

export class Fleet extends EventEmitter<FleetEvents> {
  readonly devices: SimDevice[]
  private readonly concurrency: number
  private readonly paired = new Set<SimDevice>()
  private readonly started = new Set<SimDevice>()

  constructor(opts: FleetOptions) {
    super()
    if (!Number.isInteger(opts.count) || opts.count < 1) throw new RangeError('count must be a whole number of at least 1')
    this.concurrency = Math.max(1, opts.concurrency ?? 10)
    const { count, name, stateDir, outDir, concurrency: _c, ...common } = opts
    this.devices = Array.from({ length: count }, (_, i) => {
      const deviceName = `${name}-${i + 1}`
      const dev = new SimDevice({
        ...common,
        name: deviceName,
        statePath: join(stateDir, `${deviceName}.json`),
        outDir: outDir ? join(outDir, deviceName) : undefined,
      })
      const progress = () => this.emit('progress', this.stats())
      dev.on('paired', () => {
        this.paired.add(dev)
        progress()
      })
      dev.on('resumed', () => {
        this.paired.add(dev)
        progress()
      })
      dev.on('connected', progress)
      dev.on('disconnected', progress)
      return dev
    })
  }

  stats(): FleetStats {
    const s: FleetStats = {
      total: this.devices.length,
      paired: this.paired.size,
      connected: 0,
      messages: 0,
      images: 0,
      commands: 0,
      duplicates: 0,
      errors: 0,
      reconnects: 0,
    }
    for (const d of this.devices) {
      if (d.connected) s.connected += 1
      s.messages += d.stats.messages
      s.images += d.stats.images
      s.commands += d.stats.commands
      s.duplicates += d.stats.duplicates
      s.errors += d.stats.errors
      s.reconnects += d.stats.reconnects
    }
    return s
  }

  /**
   * Starts every device, at most `concurrency` pairing or connecting at once; resolves when all
   * have connected. The first device to fail for good stops the rest and rejects.
   */
  async start(): Promise<void> {
    const queue = this.devices.filter((d) => !this.started.has(d))
    let failed: Error | undefined
    const worker = async () => {
      for (let dev = queue.shift(); dev && !failed; dev = queue.shift()) {
        this.started.add(dev)
        try {
          await dev.start()
        } catch (err) {
          failed ??= err as Error
          this.emit('failure', { device: dev, error: err as Error })
        }
      }
    }
    await Promise.all(Array.from({ length: Math.min(this.concurrency, queue.length) }, worker))
    if (failed) {
      await this.stop()
      throw failed
    }
    this.emit('ready', this.stats())
  }

  async stop(): Promise<void> {
    await Promise.all(this.devices.map((d) => d.stop()))
  }
}

/** Creates a fleet and starts it: resolves with every device connected. */
export async function runFleet(opts: FleetOptions): Promise<Fleet> {
  const fleet = new Fleet(opts)
  await fleet.start()
  return fleet
}

// Service-side publishing with backpressure: aedes/mqemitter overflows its stack when tens of
// thousands of broker.publish calls are in flight while subscribers leave, so at most
// `maxInFlight` publishes run at once and the rest wait in a FIFO queue.
import type { Aedes, PublishPacket } from 'aedes'

type Job = { packet: PublishPacket; resolve: () => void; reject: (err: Error) => void }

export class Publisher {
  private inFlight = 0
  private readonly queue: Job[] = []
  private idle: Array<() => void> = []

  constructor(
    private readonly aedes: Aedes,
    private readonly maxInFlight: number,
  ) {}

  publish(packet: PublishPacket): Promise<void> {
    return new Promise((resolve, reject) => {
      this.queue.push({ packet, resolve, reject })
      this.pump()
    })
  }

  get pending(): number {
    return this.inFlight + this.queue.length
  }

  /** Resolves once everything queued so far has been handed to the broker. */
  drain(): Promise<void> {
    if (this.pending === 0) return Promise.resolve()
    return new Promise((resolve) => this.idle.push(resolve))
  }

  private pump(): void {
    while (this.inFlight < this.maxInFlight && this.queue.length > 0) {
      const job = this.queue.shift() as Job
      this.inFlight += 1
      this.aedes.publish(job.packet, (err?: Error | null) => {
        this.inFlight -= 1
        if (err) job.reject(err)
        else job.resolve()
        // Continue on a fresh stack so completions never nest.
        setImmediate(() => this.pump())
      })
    }
    if (this.pending === 0 && this.idle.length) {
      const waiters = this.idle
      this.idle = []
      for (const w of waiters) w()
    }
  }
}

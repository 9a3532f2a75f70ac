// A frame's firmware (what it runs, the update it was offered and how far it got) and its logs
// (level, text and time filters, newest first, older pages on demand).
import { useInfiniteQuery, useQuery } from '@tanstack/react-query'
import { useState } from 'react'
import { deviceQueries, type LogFilter } from '../queries/devices'
import { Button, ErrorState, Field, Loading } from '../ui'

const offerText: Record<string, string> = {
  offered: 'offered, not started',
  downloading: 'downloading',
  verifying: 'checking the image',
  installing: 'installing',
  succeeded: 'installed',
  failed: 'failed',
  withdrawn: 'withdrawn (the rollout was halted)',
}

export function FirmwareCard({ deviceId }: { deviceId: string }) {
  const fw = useQuery(deviceQueries.firmware(deviceId))
  const f = fw.data
  return (
    <section className="card" aria-labelledby="firmware-title">
      <h2 id="firmware-title">Firmware</h2>
      {fw.isPending ? <Loading what="firmware" /> : null}
      {fw.isError ? <ErrorState error={fw.error} retry={() => void fw.refetch()} /> : null}
      {f ? (
        <p data-testid="firmware-state">
          Runs <strong>{f.running ?? 'an unknown version'}</strong>
          {f.model ? <span className="muted"> · {f.model}</span> : null}
          <span className="muted"> · {f.channel} channel</span>
          {f.pinnedVersion ? <span className="muted"> · pinned to {f.pinnedVersion}</span> : null}
          {f.fleet ? <span className="muted"> · in the update fleet</span> : null}
          {f.offer ? (
            <>
              <br />
              Update to {f.offer.version}: {offerText[f.offer.state ?? 'offered'] ?? f.offer.state}
              {f.offer.reason ? <span className="muted"> ({f.offer.reason})</span> : null}
            </>
          ) : null}
        </p>
      ) : null}
    </section>
  )
}

const levels = ['debug', 'info', 'warn', 'error'] as const
type Level = LogFilter['level']

export function LogsCard({ deviceId }: { deviceId: string }) {
  const [level, setLevel] = useState<Level>('debug')
  const [text, setText] = useState('')
  const [since, setSince] = useState('')
  const logs = useInfiniteQuery(deviceQueries.logs(deviceId, { level, text, since }))
  const pages = logs.data?.pages ?? []
  const list = pages.flatMap((p) => p.logs)
  const counts = pages[0]?.counts
  const dropped = counts ? counts.droppedRate + counts.droppedSize + counts.droppedInvalid : 0
  return (
    <section className="card" aria-labelledby="logs-title">
      <h2 id="logs-title">Logs</h2>
      <form className="row" onSubmit={(e) => e.preventDefault()}>
        <Field label="Level">
          <select value={level} onChange={(e) => setLevel(e.target.value as Level)}>
            {levels.map((l) => (
              <option key={l} value={l}>
                {l} and above
              </option>
            ))}
          </select>
        </Field>
        <Field label="Contains">
          <input type="search" value={text} maxLength={200} onChange={(e) => setText(e.target.value)} />
        </Field>
        <Field label="Since">
          <input type="datetime-local" value={since} onChange={(e) => setSince(e.target.value)} />
        </Field>
        <Button kind="secondary" busy={logs.isRefetching} onClick={() => void logs.refetch()}>
          Refresh logs
        </Button>
      </form>
      {logs.isPending ? <Loading what="logs" /> : null}
      {logs.isError ? <ErrorState error={logs.error} retry={() => void logs.refetch()} /> : null}
      {logs.isSuccess && list.length === 0 ? <p className="muted">No log entries match.</p> : null}
      {counts && dropped ? (
        <p className="muted">
          Not kept: {counts.droppedRate} over the rate, {counts.droppedSize} too large, {counts.droppedInvalid} not log entries.
        </p>
      ) : null}
      <ul className="events logs">
        {list.map((l) => (
          <li key={l.id} data-level={l.level}>
            <span>
              <span className={`badge level-${l.level}`}>{l.level}</span> {l.message}
            </span>
            <time className="muted" dateTime={l.at}>
              {new Date(l.at).toLocaleString()}
            </time>
          </li>
        ))}
      </ul>
      {logs.hasNextPage ? (
        <Button kind="secondary" busy={logs.isFetchingNextPage} onClick={() => void logs.fetchNextPage()}>
          Older entries
        </Button>
      ) : null}
    </section>
  )
}

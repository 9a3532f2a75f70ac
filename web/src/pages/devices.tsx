// The device list: online state live from the broker, battery, last seen, the image shown now.
import { useQuery } from '@tanstack/react-query'
import { Link } from 'react-router'
import { type Device, imageUrl } from '../api'
import { useLiveConnected, usePresence, type Presence } from '../live'
import { deviceQueries } from '../queries/devices'
import { ago, Empty, ErrorState, Loading } from '../ui'

export function DevicesPage() {
  const devices = useQuery(deviceQueries.list())
  const presence = usePresence(devices.data?.map((d) => d.id) ?? [])
  const live = useLiveConnected()
  return (
    <>
      <div className="row">
        <h1>Your devices</h1>
        <span className="muted" role="status">
          {live ? 'Live' : 'Connecting…'}
        </span>
      </div>
      {devices.isPending ? <Loading what="devices" /> : null}
      {devices.isError ? <ErrorState error={devices.error} retry={() => void devices.refetch()} /> : null}
      {devices.data?.length === 0 ? (
        <Empty>
          <p>No frames yet.</p>
          <Link to="/pair" className="button primary">
            Pair your first frame
          </Link>
        </Empty>
      ) : null}
      {devices.data?.length ? (
        <ul className="devices" aria-label="Devices">
          {devices.data.map((d) => (
            <li key={d.id} className="card">
              <DeviceCard device={d} presence={presence(d.id)} />
            </li>
          ))}
        </ul>
      ) : null}
    </>
  )
}

export function OnlineBadge({ presence }: { presence: Presence | undefined }) {
  if (!presence) return <span className="badge offline">unknown</span>
  return presence.online ? (
    <span className="badge online" data-testid="online">
      online
    </span>
  ) : (
    <span className="badge offline" data-testid="offline">
      offline
    </span>
  )
}

function DeviceCard({ device: d, presence }: { device: Device; presence: Presence | undefined }) {
  const shown = d.status?.shownImageId
  return (
    <Link to={`/devices/${d.id}`} className="device">
      {shown ? <img className="thumb" src={imageUrl(shown)} alt={`What ${d.name} shows`} /> : <span className="thumb">no image</span>}
      <span>
        <strong>{d.name}</strong>
        <br />
        <OnlineBadge presence={presence} /> {d.isSynced ? null : <span className="badge sync">updating</span>}
        <br />
        <span className="muted">
          {d.status?.battery !== undefined ? `Battery ${Math.round(d.status.battery)} % · ` : ''}seen {ago(d.last_seen_at)}
        </span>
      </span>
    </Link>
  )
}

// Revocation on RabbitMQ: a disconnected or deleted device loses its live MQTT connection at once,
// through the management API (rabbitmq_management). Its connection tracking answers at once
// (GET or DELETE /api/connections/username/{name}); the per-connection resources
// (/api/connections/{name}) only learn of a connection with the next statistics round (5 s).
// The URL carries the account's credentials as user-info: http://user:password@host:15672.

export type RabbitManagement = {
  /** Closes every connection of `username`; resolves true when there was one. */
  closeConnectionsOf(username: string, reason: string): Promise<boolean>
}

export function rabbitManagement(url: string): RabbitManagement {
  const base = new URL(url)
  const authorization = `Basic ${Buffer.from(`${decodeURIComponent(base.username)}:${decodeURIComponent(base.password)}`).toString('base64')}`
  base.username = ''
  base.password = ''
  const endpoint = (username: string) => new URL(`api/connections/username/${encodeURIComponent(username)}`, base).toString()

  return {
    async closeConnectionsOf(username, reason) {
      const listed = await fetch(endpoint(username), { headers: { authorization } })
      if (!listed.ok) throw new Error(`RabbitMQ management: listing connections of ${username} → ${listed.status}`)
      const connections = (await listed.json()) as unknown[]
      if (connections.length === 0) return false
      // The reason is written to RabbitMQ's log with the close.
      const closed = await fetch(endpoint(username), { method: 'DELETE', headers: { authorization, 'x-reason': reason } })
      if (!closed.ok && closed.status !== 404) throw new Error(`RabbitMQ management: closing connections of ${username} → ${closed.status}`)
      return true
    },
  }
}

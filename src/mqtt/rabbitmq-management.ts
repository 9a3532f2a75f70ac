// RabbitMQ's management API (rabbitmq_management): closing a revoked device's connections, and
// the internal users devices are provisioned as (rabbitmq-device-users.ts). Its connection
// tracking answers at once (GET or DELETE /api/connections/username/{name}); the per-connection
// resources (/api/connections/{name}) only learn of a connection with the next statistics round
// (5 s). The URL carries the account's credentials as user-info: http://user:password@host:15672.
import type { DevicePermissions } from './rabbitmq-rules.js'

export type RabbitManagement = {
  /** Closes every connection of `username`; resolves true when there was one. */
  closeConnectionsOf(username: string, reason: string): Promise<boolean>
  /** Creates or replaces an internal user without tags (no management access) with exactly `permissions` in `vhost`. */
  putUser(username: string, password: string, vhost: string, permissions: DevicePermissions): Promise<void>
  /** Deletes an internal user (and with it its permissions); resolves false when there was none. */
  deleteUser(username: string): Promise<boolean>
  /** Whether an internal user of that name exists. */
  hasUser(username: string): Promise<boolean>
  /** The names of every internal user. */
  userNames(): Promise<string[]>
}

export function rabbitManagement(url: string): RabbitManagement {
  const base = new URL(url)
  const authorization = `Basic ${Buffer.from(`${decodeURIComponent(base.username)}:${decodeURIComponent(base.password)}`).toString('base64')}`
  base.username = ''
  base.password = ''
  const at = (...parts: string[]) => new URL(`api/${parts.map(encodeURIComponent).join('/')}`, base).toString()
  const call = async (method: string, parts: string[], body?: object, headers: Record<string, string> = {}) => {
    const res = await fetch(at(...parts), {
      method,
      headers: { authorization, ...headers, ...(body ? { 'content-type': 'application/json' } : {}) },
      body: body ? JSON.stringify(body) : undefined,
    })
    // Drained: an unread body keeps the keep-alive socket from going back to the pool.
    const text = await res.text()
    return { status: res.status, ok: res.ok, text }
  }
  const failed = (what: string, status: number, text: string) => new Error(`RabbitMQ management: ${what} → ${status} ${text.slice(0, 200)}`)

  return {
    async closeConnectionsOf(username, reason) {
      const listed = await call('GET', ['connections', 'username', username])
      if (!listed.ok) throw failed(`listing connections of ${username}`, listed.status, listed.text)
      const connections = JSON.parse(listed.text) as unknown[]
      if (connections.length === 0) return false
      // The reason is written to RabbitMQ's log with the close.
      const closed = await call('DELETE', ['connections', 'username', username], undefined, { 'x-reason': reason })
      if (!closed.ok && closed.status !== 404) throw failed(`closing connections of ${username}`, closed.status, closed.text)
      return true
    },
    async putUser(username, password, vhost, permissions) {
      // The password last: a user that can log in before its permissions exist would be refused
      // its vhost (a device reconnecting meanwhile). Without one (an empty hash) a login falls
      // through to the next backend of the chain, our HTTP routes.
      const steps: Array<[string[], object]> = [
        [['users', username], { password_hash: '', tags: '' }],
        [['permissions', vhost, username], permissions.resources],
        [['topic-permissions', vhost, username], permissions.topics],
        [['users', username], { password, tags: '' }],
      ]
      for (const [parts, body] of steps) {
        const res = await call('PUT', parts, body)
        if (!res.ok) throw failed(`PUT ${parts.join('/')}`, res.status, res.text)
      }
    },
    async deleteUser(username) {
      const res = await call('DELETE', ['users', username])
      if (res.status === 404) return false
      if (!res.ok) throw failed(`deleting user ${username}`, res.status, res.text)
      return true
    },
    async userNames() {
      const res = await call('GET', ['users'])
      if (!res.ok) throw failed('listing users', res.status, res.text)
      return (JSON.parse(res.text) as Array<{ name: string }>).map((u) => u.name)
    },
    async hasUser(username) {
      const res = await call('GET', ['users', username])
      if (res.status === 404) return false
      if (!res.ok) throw failed(`reading user ${username}`, res.status, res.text)
      return true
    },
  }
}

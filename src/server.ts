// Starts the service: loads config, builds the app, listens, and shuts down cleanly on signals.
import { buildApp } from './app.js'
import { ConfigError, loadConfig } from './config.js'

async function main() {
  let config
  try {
    config = loadConfig()
  } catch (err) {
    if (err instanceof ConfigError) {
      console.error(err.message)
      process.exit(78)
    }
    throw err
  }
  let app
  try {
    app = await buildApp(config)
  } catch (err) {
    // What the operator must change (a setting the cluster does not share, say): its message, no stack.
    if (err instanceof ConfigError) {
      console.error(err.message)
      process.exit(78)
    }
    throw err
  }
  try {
    await app.listen({ port: config.port, host: config.host })
  } catch (err) {
    const e = err as NodeJS.ErrnoException
    if (err instanceof ConfigError) {
      app.log.fatal(err.message)
      await app.close()
      process.exit(1)
    }
    if (e.code === 'EADDRINUSE') {
      app.log.fatal(`HTTP port ${config.port} is already in use: set PORT to a free port (PORT=0 picks one)`)
      await app.close()
      process.exit(1)
    }
    throw err
  }
  // The HTTP socket tells how HOST resolved (localhost → 127.0.0.1); MQTT listeners on the same
  // address are named the same way, others as configured.
  const address = app.server.address()
  let host = config.host
  if (address && typeof address === 'object') {
    host = address.family === 'IPv6' ? `[${address.address}]` : address.address
    app.log.info(`HTTP listening on http://${host}:${address.port}`)
  }
  const shown = (h: string) => (h === config.host ? host : h.includes(':') ? `[${h}]` : h)
  if (app.mqttPort !== undefined) {
    app.log.info(`MQTT listening on mqtt://${shown(config.mqtt.host)}:${app.mqttPort}`)
    if (app.mqttTlsPort !== undefined && config.mqtt.tls) {
      app.log.info(`MQTT over TLS listening on mqtts://${shown(config.mqtt.tls.host)}:${app.mqttTlsPort}`)
    }
    app.log.info(`MQTT over WebSocket on ${config.baseUrl.replace(/^http/, 'ws')}/mqtt`)
  }
  app.log.info(`public URL ${config.baseUrl} (database: ${app.database.kind}${app.redis ? ', redis' : ''})`)
  for (const warning of config.warnings) app.log.warn(`production checklist: ${warning}`)

  let closing = false
  const shutdown = async (signal: string) => {
    if (closing) return
    closing = true
    app.log.info(`${signal} received, shutting down`)
    const timer = setTimeout(() => {
      app.log.error('shutdown took longer than 10 s, exiting')
      process.exit(1)
    }, 10_000)
    timer.unref()
    await app.close()
    process.exit(0)
  }
  process.on('SIGINT', () => void shutdown('SIGINT'))
  process.on('SIGTERM', () => void shutdown('SIGTERM'))
  // `systemctl reload` (and a certificate renewal hook) sends SIGHUP, whose default would end the process.
  process.on('SIGHUP', () => {
    if (!app.reloadMqttTls) {
      app.log.info('SIGHUP received: nothing to reload (no MQTT TLS listener)')
      return
    }
    try {
      app.reloadMqttTls()
      app.log.info('SIGHUP received: MQTT TLS certificate and key read again')
    } catch (err) {
      app.log.error(`SIGHUP received: MQTT TLS certificate not replaced, the previous one stays in use: ${(err as Error).message}`)
    }
  })
}

main().catch((err) => {
  console.error(err)
  process.exit(1)
})
